#!/usr/bin/env bash
# The connectivity pre-flight where only a relay gets through: the publisher runs in a network
# namespace of its own whose nftables drop UDP to the WHIP server's media port (BLOCK=media,
# the default) or every UDP datagram it sends (BLOCK=udp: only TCP leaves — TURN over TCP);
# the WHIP endpoint (`pubbot receive --whip-listen`) and coturn 4.6 (UDP and TCP) listen on
# this side of a veth. Prints the pre-flight's JSON on stdout. Needs root; exit 77 (skip) when
# namespaces are refused. PUBLISH=1: a 5 s `publish --whip … --json` runs instead, given no TURN
# server (its summary on stdout; its exit code is the script's); LINK=1: the endpoint announces
# coturn in its 201's Link header (RFC 9725 §4.6).
#
#   [BLOCK=media|udp] [PUBLISH=1 [LINK=1]] turn_required.sh PUBBOT_BINARY [N]
set -euo pipefail
bin=$1 n=${2:-$(( ($$ % 200) + 20 ))}
ns="pbturn$n" host_if="vth$n" pub_if="vtp$n" addr="10.80.$n.1"
[ "$(id -u)" -eq 0 ] || { echo "turn_required: needs root" >&2; exit 77; }
ip netns add "$ns" 2>/dev/null || { echo "turn_required: cannot create network namespaces here" >&2; exit 77; }
work=$(mktemp -d)
cleanup() {
  set +e
  # The `timeout` wrappers (a bound if this script itself is killed) and what they run.
  for p in ${turn:-} ${recv:-}; do pkill -9 -P "$p" 2>/dev/null; kill -9 "$p" 2>/dev/null; done
  ip link del "$host_if" 2>/dev/null || true
  ip netns del "$ns" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
ip link add "$host_if" type veth peer name "$pub_if" netns "$ns"
ip addr add "$addr/24" dev "$host_if"
ip link set "$host_if" up
ip -n "$ns" addr add "10.80.$n.2/24" dev "$pub_if"
ip -n "$ns" link set "$pub_if" up
ip -n "$ns" link set lo up
timeout -s KILL 60 turnserver -n -L "$addr" -E "$addr" -p 3478 --no-tls --no-dtls --no-cli --log-file=stdout --lt-cred-mech \
  --user=bot:s3cret --realm=pubbot.test --min-port=49152 --max-port=65535 </dev/null >"$work/turn.log" 2>&1 &
turn=$!
announce=()
# The credential by environment, not on a command line (ps, and bash's job messages, show those).
[ "${LINK:-}" = 1 ] && announce=(--ice-server "turn:$addr:3478" --turn-username bot)
PUBBOT_TURN_CREDENTIAL=s3cret timeout -s KILL 60 "$bin" receive --whip-listen "$addr:18111" --duration 45s "${announce[@]}" </dev/null >/dev/null 2>"$work/recv.err" &
recv=$!
for _ in $(seq 50); do grep -q '/whip (media' "$work/recv.err" 2>/dev/null && grep -q 'IO method' "$work/turn.log" 2>/dev/null && break; sleep 0.1; done
# The firewall: no UDP from the publisher to the server's media port; HTTP and TURN pass.
ip netns exec "$ns" nft add table inet pubbot
ip netns exec "$ns" nft add chain inet pubbot out '{ type filter hook output priority 0; }'
if [ "${BLOCK:-media}" = udp ]; then
  ip netns exec "$ns" nft add rule inet pubbot out meta l4proto udp drop
  servers=(--ice-server "turn:$addr:3478?transport=udp" --ice-server "turn:$addr:3478?transport=tcp")
else
  ip netns exec "$ns" nft add rule inet pubbot out ip daddr "$addr" udp dport 18111 drop
  servers=(--ice-server "turn:$addr:3478")
fi
if [ "${PUBLISH:-}" = 1 ]; then
  code=0
  ip netns exec "$ns" timeout -s KILL 60 "$bin" publish --whip "http://$addr:18111/whip" --duration 5s --json </dev/null \
    2>"$work/pub.err" || code=$?
  [ "$code" -eq 0 ] || echo "turn_required: publish exited $code: $(tail -1 "$work/pub.err")" >&2
  exit "$code"
fi
# LINK=1: the pre-flight is given no server either (the endpoint's Link names it).
[ "${LINK:-}" = 1 ] && servers=()
ip netns exec "$ns" timeout -s KILL 60 "$bin" preflight --whip "http://$addr:18111/whip" "${servers[@]}" --turn-username bot \
  --duration 6s --json </dev/null 2>"$work/pre.err" || { echo "turn_required: preflight failed: $(tail -2 "$work/pre.err")" >&2; exit 1; }
