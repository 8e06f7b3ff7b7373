#!/usr/bin/env bash
# Janus 1.1.2 (Debian `janus`) as a real SFU for the interop test, in a network namespace of its
# own (libnice ignores loopback interfaces): a veth pair 10.78.N.1 (this side) / 10.78.N.2 (Janus),
# Janus with only the VideoRoom plugin and the HTTP transport (API :8088/janus, admin
# :7088/admin), and the WHIP shim (janus_whip_shim.py) beside it on 10.78.N.2:8080.
#
#   janus_netns.sh start DIR [N]   prints "WHIP http://10.78.N.2:8080/whip" when ready (≤ 20 s);
#                                  Janus and the shim end by themselves after LIMIT s (600)
#   janus_netns.sh stop DIR        kills Janus (SIGKILL after a grace period: it can hang on
#                                  SIGTERM) and the shim, deletes the namespace and veth
#
# LOSS=P drops P % of the UDP reaching Janus's media ports (nftables in its namespace).
# DIR holds the config, logs and pids. Needs root. Exit 77 (skip) when namespaces are refused.
set -euo pipefail
cmd=$1 dir=$2 n=${3:-$(( ($$ % 200) + 20 ))}
here=$(cd "$(dirname "$0")" && pwd)
ns="pbjanus$n" host_if="vjh$n" janus_if="vjj$n"
# What is left running must not hold the descriptors its starter passed on beyond 0–2 (a test
# harness can watch one of them to learn when this script ends: it would wait for Janus instead).
detach() { for fd in /proc/$BASHPID/fd/*; do n=${fd##*/}; [ "$n" -gt 2 ] && eval "exec $n>&-"; done 2>/dev/null; exec "$@" 2>&1; }
case "$cmd" in
start)
  [ "$(id -u)" -eq 0 ] || { echo "janus_netns: needs root" >&2; exit 77; }
  command -v janus >/dev/null || { echo "janus_netns: janus is not installed (apt-get install janus)" >&2; exit 77; }
  mkdir -p "$dir/etc" "$dir/plugins" "$dir/transports" "$dir/none"
  ip netns add "$ns" 2>/dev/null || { echo "janus_netns: cannot create network namespaces here" >&2; exit 77; }
  echo "$ns $host_if" > "$dir/netns"
  ip link add "$host_if" type veth peer name "$janus_if" netns "$ns"
  ip addr add "10.78.$n.1/24" dev "$host_if"
  ip link set "$host_if" up
  ip -n "$ns" addr add "10.78.$n.2/24" dev "$janus_if"
  ip -n "$ns" link set "$janus_if" up
  ip -n "$ns" link set lo up
  lib=/usr/lib/x86_64-linux-gnu/janus
  ln -sf "$lib/plugins/libjanus_videoroom.so" "$dir/plugins/"
  ln -sf "$lib/transports/libjanus_http.so" "$dir/transports/"
  cat > "$dir/etc/janus.jcfg" <<CFG
general: {
	configs_folder = "$dir/etc"
	plugins_folder = "$dir/plugins"
	transports_folder = "$dir/transports"
	events_folder = "$dir/none"
	loggers_folder = "$dir/none"
	debug_level = 4
	admin_secret = "janusoverlord"
	session_timeout = 60
}
media: {
	rtp_port_range = "20000-40000"
}
nat: {
	nice_debug = false
	ice_ignore_list = "lo"
}
CFG
  cat > "$dir/etc/janus.transport.http.jcfg" <<CFG
general: {
	json = "indented"
	base_path = "/janus"
	http = true
	port = 8088
	ip = "10.78.$n.2"
	https = false
}
admin: {
	admin_base_path = "/admin"
	admin_http = true
	admin_port = 7088
	admin_ip = "10.78.$n.2"
	admin_https = false
}
CFG
  echo 'general: { string_ids = false }' > "$dir/etc/janus.plugin.videoroom.jcfg"
  (detach ip netns exec "$ns" timeout -s KILL "${LIMIT:-600}" janus -C "$dir/etc/janus.jcfg" -F "$dir/etc") </dev/null >"$dir/janus.log" 2>&1 &
  echo $! > "$dir/janus.pid"
  for _ in $(seq 100); do
    curl -s -m 1 "http://10.78.$n.2:8088/janus/info" >/dev/null 2>&1 && break
    sleep 0.2
  done
  curl -s -m 1 "http://10.78.$n.2:8088/janus/info" >/dev/null || { echo "janus_netns: Janus did not start (log: $dir/janus.log)" >&2; exit 1; }
  if [ "${LOSS:-0}" != "0" ]; then
    # Random loss on what reaches Janus (its NACKs and the publisher's retransmissions then show).
    ip netns exec "$ns" nft add table inet pubbot
    ip netns exec "$ns" nft add chain inet pubbot input '{ type filter hook input priority 0; }'
    ip netns exec "$ns" nft add rule inet pubbot input udp dport 20000-40000 numgen random mod 100 \< "$LOSS" drop
  fi
  (detach ip netns exec "$ns" python3 "$here/janus_whip_shim.py" --janus "http://10.78.$n.2:8088/janus" --admin "http://10.78.$n.2:7088/admin" \
    --listen "10.78.$n.2" --port 8080 --limit "${LIMIT:-600}") </dev/null >"$dir/shim.log" 2>&1 &
  echo $! > "$dir/shim.pid"
  for _ in $(seq 50); do grep -q LISTENING "$dir/shim.log" 2>/dev/null && break; sleep 0.1; done
  grep -q LISTENING "$dir/shim.log" || { echo "janus_netns: the WHIP shim did not start ($dir/shim.log)" >&2; exit 1; }
  echo "WHIP http://10.78.$n.2:8080/whip"
  ;;
stop)
  for p in shim janus; do
    if [ -f "$dir/$p.pid" ]; then
      pid=$(cat "$dir/$p.pid")
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null || true
    fi
  done
  # The pid is `timeout`'s; Janus, its child, may ignore SIGTERM and outlive it: by its config path.
  pkill -TERM -f -- "-C $dir/etc/janus.jcfg" 2>/dev/null || true
  for _ in $(seq 20); do pgrep -f -- "-C $dir/etc/janus.jcfg" >/dev/null || break; sleep 0.1; done
  pkill -KILL -f -- "-C $dir/etc/janus.jcfg" 2>/dev/null || true
  if [ -f "$dir/netns" ]; then
    read -r ns host_if < "$dir/netns"
    ip link del "$host_if" 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true
  fi
  ;;
*) echo "usage: janus_netns.sh start|stop DIR [N]" >&2; exit 64 ;;
esac
