#!/usr/bin/env bash
# A publisher with two networks: it runs in a namespace of its own with two veths, A
# (10.81.N.2) and B (10.82.N.2), both reaching the WHIP endpoint (`pubbot receive
# --whip-listen` on 10.81.N.1, this side of A); what leaves from B's address goes out B (source
# routing, as a multi-homed host has). MODE=block (the default): nftables drop every UDP
# datagram from A's address — only a host candidate on B can carry media. MODE=change: at 4 s
# A's address is removed (the network the session runs on goes away) — the publisher has to
# notice and restart ICE on B. Writes the publisher's JSON to OUT/pub.json, the endpoint's to
# OUT/recv.json, their stderr beside. Needs root; exit 77 (skip) when namespaces are refused.
# PUB_ARGS: more arguments for the publisher, or with MODE=whep the subscriber ({A} and {B}
# stand for the two interfaces' names).
# MODE=whep: the namespace holds a WHEP subscriber instead (`receive --whep`, UDP from A's
# address dropped as for block) of pion's fan-out endpoint (PION=its binary) on 10.81.N.1, which
# a publisher on this side feeds: OUT/sub.json, and pion's own log OUT/pion.out.
#
# MODE=load-change: as change, with a `load --whip` fleet of 3 bots in place of the publisher.
# MODE=load-whep-change: a `load` fleet (1 publisher bot, 3 WHEP subscribers) in the namespace
# through pion's fan-out behind A (PION=…); A's address goes 5 s in. MODE=load-whep-outage: the
# same fleet for 17 s, every UDP datagram into the namespace dropped from 3 s to 12 s (PUB_ARGS
# gives it --ice-recover-after).
# MODE=whep-change: as whep without the drop; A's address goes 3 s into the subscription.
# MODE=endpoint: the other way round — the WHIP endpoint (`receive --whip-listen 0.0.0.0:PORT`)
# is the multi-homed one, in the namespace, where A also carries a second address 10.81.N.3;
# nftables there drop UDP toward 10.81.N.2 and 10.82.N.2, so only the candidate on the second
# address can answer, and the kernel's own choice of source for a reply (A's first address)
# is not the one the publisher sent to. The publisher runs on this side: pubbot, or with
# PION_BOTS=its binary one pion/webrtc bot (OUT/pion_bots.out).
#
#   [MODE=block|change|whep|whep-change|load-change|load-whep-change|load-whep-outage|endpoint] [PUB_ARGS=…] [PION=…] [PION_BOTS=…]
#     multihomed.sh PUBBOT_BINARY OUT_DIR [N]
set -euo pipefail
bin=$1 out=$2 n=${3:-$(( ($$ % 200) + 20 ))}
ns="pbmh$n" ha="vha$n" hb="vhb$n" pa="vpa$n" pb="vpb$n"
[ "$(id -u)" -eq 0 ] || { echo "multihomed: needs root" >&2; exit 77; }
ip netns add "$ns" 2>/dev/null || { echo "multihomed: cannot create network namespaces here" >&2; exit 77; }
mkdir -p "$out"
cleanup() {
  set +e
  [ -n "${recv:-}" ] && { pkill -9 -P "$recv" 2>/dev/null; kill -9 "$recv" 2>/dev/null; }
  ip link del "$ha" 2>/dev/null; ip link del "$hb" 2>/dev/null
  ip netns del "$ns" 2>/dev/null
  true
}
trap cleanup EXIT
ip link add "$ha" type veth peer name "$pa" netns "$ns"
ip link add "$hb" type veth peer name "$pb" netns "$ns"
ip addr add "10.81.$n.1/24" dev "$ha"; ip link set "$ha" up
ip addr add "10.82.$n.1/24" dev "$hb"; ip link set "$hb" up
ip -n "$ns" addr add "10.81.$n.2/24" dev "$pa"; ip -n "$ns" link set "$pa" up
ip -n "$ns" addr add "10.82.$n.2/24" dev "$pb"; ip -n "$ns" link set "$pb" up
ip -n "$ns" link set lo up
# B's address leaves by B (policy routing: a source-specific table), and B is the way to the
# endpoint once A is gone.
ip -n "$ns" rule add from "10.82.$n.2" table 100
ip -n "$ns" route add default via "10.82.$n.1" dev "$pb" table 100
ip -n "$ns" route add default via "10.82.$n.1" dev "$pb"
# The host takes a datagram for 10.81.N.1 that arrives on B (it is one of its addresses).
sysctl -qw "net.ipv4.conf.$hb.rp_filter=0" "net.ipv4.conf.$ha.rp_filter=0" 2>/dev/null || true
block_a() {
  ip netns exec "$ns" nft add table inet pubbot
  ip netns exec "$ns" nft add chain inet pubbot out '{ type filter hook output priority 0; }'
  ip netns exec "$ns" nft add rule inet pubbot out ip saddr "10.81.$n.2" meta l4proto udp drop
}
extra=${PUB_ARGS:-}; extra=${extra//\{A\}/$pa}; extra=${extra//\{B\}/$pb}
if [ "${MODE:-block}" = load-whep-change ] || [ "${MODE:-block}" = load-whep-outage ]; then
  # A `load` fleet in the namespace: 1 publisher bot and 3 WHEP subscribers through pion's
  # fan-out on 10.81.N.1; A's address goes 5 s in — every bot and subscriber restarts on B.
  timeout -s KILL 60 "${PION:?PION=the pion_whip binary}" -listen "10.81.$n.1:0" -limit 60 -forward-rid 0 >"$out/pion.out" 2>&1 &
  recv=$!
  for _ in $(seq 100); do grep -q LISTENING "$out/pion.out" 2>/dev/null && break; sleep 0.1; done
  port=$(grep -o "LISTENING [0-9]*" "$out/pion.out" | awk '{print $2}')
  [ -n "$port" ] || { echo "multihomed: pion did not start: $(cat "$out/pion.out")" >&2; exit 1; }
  duration=13s
  if [ "$MODE" = load-whep-outage ]; then
    # Every UDP datagram into the namespace dropped from 3 s to 12 s: the paths go silent.
    ip netns exec "$ns" nft add table inet pubbot
    ip netns exec "$ns" nft add chain inet pubbot in '{ type filter hook input priority 0; }'
    ( sleep 3; ip netns exec "$ns" nft add rule inet pubbot in meta l4proto udp drop; sleep 9; ip netns exec "$ns" nft flush chain inet pubbot in ) &
    duration=17s
  else
    ( sleep 5; ip -n "$ns" addr del "10.81.$n.2/24" dev "$pa" ) &
  fi
  code=0
  # shellcheck disable=SC2086 # PUB_ARGS is a list of words
  ip netns exec "$ns" timeout -s KILL 60 "$bin" load --whip "http://10.81.$n.1:$port/whip" --whep "http://10.81.$n.1:$port/whep" \
    --publishers 1 --subscribers 3 --duration "$duration" --json $extra </dev/null >"$out/pub.json" 2>"$out/pub.err" || code=$?
  for _ in $(seq 50); do [ "$(grep -c whep-stats "$out/pion.out")" -ge 3 ] && break; sleep 0.1; done
  [ "$code" -eq 0 ] || echo "multihomed: load exited $code: $(tail -1 "$out/pub.err")" >&2
  exit "$code"
fi
if [ "${MODE:-block}" = whep ] || [ "${MODE:-block}" = whep-change ]; then
  timeout -s KILL 60 "${PION:?PION=the pion_whip binary}" -listen "10.81.$n.1:0" -limit 60 -forward-rid q >"$out/pion.out" 2>&1 &
  recv=$!
  for _ in $(seq 100); do grep -q LISTENING "$out/pion.out" 2>/dev/null && break; sleep 0.1; done
  port=$(grep -o "LISTENING [0-9]*" "$out/pion.out" | awk '{print $2}')
  [ -n "$port" ] || { echo "multihomed: pion did not start: $(cat "$out/pion.out")" >&2; exit 1; }
  timeout -s KILL 40 "$bin" publish --whip "http://10.81.$n.1:$port/whip" --duration 14s --layers "320x180@30:300k" \
    </dev/null >/dev/null 2>"$out/pub.err" &
  pub=$!
  for _ in $(seq 100); do grep -q '"rid":"q"' "$out/pion.out" 2>/dev/null && break; sleep 0.1; done
  sub_duration=6s
  if [ "$MODE" = whep ]; then
    block_a
  else
    ( sleep 3; ip -n "$ns" addr del "10.81.$n.2/24" dev "$pa" ) &
    sub_duration=8s
  fi
  code=0
  # shellcheck disable=SC2086 # PUB_ARGS is a list of words
  ip netns exec "$ns" timeout -s KILL 40 "$bin" receive --whep "http://10.81.$n.1:$port/whep" --duration "$sub_duration" --json $extra </dev/null \
    >"$out/sub.json" 2>"$out/sub.err" || code=$?
  for _ in $(seq 50); do grep -q whep-stats "$out/pion.out" 2>/dev/null && break; sleep 0.1; done
  kill "$pub" 2>/dev/null || true
  [ "$code" -eq 0 ] || echo "multihomed: receive --whep exited $code: $(tail -1 "$out/sub.err")" >&2
  exit "$code"
fi
port=$(( 18600 + n ))
if [ "${MODE:-block}" = endpoint ]; then
  ip -n "$ns" addr add "10.81.$n.3/24" dev "$pa"
  ip netns exec "$ns" nft add table inet pubbot
  ip netns exec "$ns" nft add chain inet pubbot in '{ type filter hook input priority 0; }'
  ip netns exec "$ns" nft add rule inet pubbot in ip daddr "{ 10.81.$n.2, 10.82.$n.2 }" meta l4proto udp drop
  ip netns exec "$ns" timeout -s KILL 60 "$bin" receive --whip-listen "0.0.0.0:$port" --duration 9s --no-decode --json \
    </dev/null >"$out/recv.json" 2>"$out/recv.err" &
  recv=$!
  for _ in $(seq 50); do grep -q '/whip (media' "$out/recv.err" 2>/dev/null && break; sleep 0.1; done
  code=0
  if [ -n "${PION_BOTS:-}" ]; then
    timeout -s KILL 40 "$PION_BOTS" -whip "http://10.81.$n.3:$port/whip" -bots 1 -ramp 0s -duration 6s \
      -ivf "${PION_IVF:-Media/replay/1-640x360.ivf}" -opus "${PION_OPUS:-Media/replay/audio.opusframes}" \
      </dev/null >"$out/pion_bots.out" 2>&1 || code=$?
  else
    # shellcheck disable=SC2086 # PUB_ARGS is a list of words
    timeout -s KILL 40 "$bin" publish --whip "http://10.81.$n.3:$port/whip" --duration 6s --json $extra \
      </dev/null >"$out/pub.json" 2>"$out/pub.err" || code=$?
  fi
  wait "$recv" || true
  [ "$code" -eq 0 ] || echo "multihomed: the publisher exited $code" >&2
  exit "$code"
fi
timeout -s KILL 60 "$bin" receive --whip-listen "10.81.$n.1:$port" --duration 14s --no-decode --json </dev/null \
  >"$out/recv.json" 2>"$out/recv.err" &
recv=$!
for _ in $(seq 50); do grep -q '/whip (media' "$out/recv.err" 2>/dev/null && break; sleep 0.1; done
if [ "${MODE:-block}" = block ]; then
  block_a
  duration=6s
else
  ( sleep 4; ip -n "$ns" addr del "10.81.$n.2/24" dev "$pa" ) &
  duration=10s
fi
if [ "${MODE:-block}" = load-change ]; then
  # A fleet of 3 bots instead of one publisher: each restarts on its own.
  code=0
  ip netns exec "$ns" timeout -s KILL 40 "$bin" load --whip "http://10.81.$n.1:$port/whip" --bots 3 --ramp 1s --duration "$duration" --json \
    </dev/null >"$out/pub.json" 2>"$out/pub.err" || code=$?
  wait "$recv" || true
  [ "$code" -eq 0 ] || echo "multihomed: load exited $code: $(tail -1 "$out/pub.err")" >&2
  exit "$code"
fi
code=0
# shellcheck disable=SC2086 # PUB_ARGS is a list of words
ip netns exec "$ns" timeout -s KILL 40 "$bin" publish --whip "http://10.81.$n.1:$port/whip" --duration "$duration" --json $extra \
  </dev/null >"$out/pub.json" 2>"$out/pub.err" || code=$?
wait "$recv" || true
[ "$code" -eq 0 ] || echo "multihomed: publish exited $code: $(tail -1 "$out/pub.err")" >&2
exit "$code"
