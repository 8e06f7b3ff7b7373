#!/usr/bin/env bash
# Chromium publishes q/h/f simulcast by WHIP into `pubbot receive --whip-listen` across a real
# kernel bottleneck: two network namespaces joined by a veth pair, `tbf` on Chromium's egress.
# Chromium's own getStats() (its availableOutgoingBitrate, per second) is what this prints, one
# JSON line each (chromium_peer.py's), then pubbot's summary line prefixed "RECEIVER ".
#
#   chromium_tbf.sh BINARY RATE SECONDS      e.g. chromium_tbf.sh .build/debug/pubbot 1500kbit 20
#
# Needs root and chromium; exit 77 (skip) when namespaces cannot be created. Cleans up after itself.
set -euo pipefail
bin=$1 rate=$2 seconds=$3
here=$(cd "$(dirname "$0")" && pwd)
[ "$(id -u)" -eq 0 ] || { echo "chromium_tbf: needs root" >&2; exit 77; }
command -v chromium >/dev/null || { echo "chromium_tbf: chromium is not installed" >&2; exit 77; }
n=$(( ($$ % 200) + 20 ))
A="pbchr$n" B="pbrcv$n" work=$(mktemp -d)
cleanup() {
  [ -n "${recv:-}" ] && kill "$recv" 2>/dev/null || true
  ip netns pids "$A" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
  ip netns pids "$B" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
  ip netns del "$A" 2>/dev/null || true; ip netns del "$B" 2>/dev/null || true; rm -rf "$work"
}
trap cleanup EXIT
ip netns add "$A" 2>/dev/null || { echo "chromium_tbf: cannot create network namespaces here" >&2; exit 77; }
ip netns add "$B"
ip link add "vc$n" netns "$A" type veth peer name "vr$n" netns "$B"
ip -n "$A" addr add "10.79.$n.1/30" dev "vc$n"
ip -n "$B" addr add "10.79.$n.2/30" dev "vr$n"
for ns in "$A" "$B"; do ip -n "$ns" link set lo up; done
ip -n "$A" link set "vc$n" up
ip -n "$B" link set "vr$n" up
# The bottleneck: Chromium's egress (what it publishes), ~50 ms of queue.
tc -n "$A" qdisc add dev "vc$n" root tbf rate "$rate" burst 20kb latency 50ms

ip netns exec "$B" "$bin" receive --whip-listen "10.79.$n.2:0" --duration $((seconds + 25))s --json >"$work/recv.json" 2>"$work/recv.err" &
recv=$!
for _ in $(seq 1 50); do grep -q "/whip (media" "$work/recv.err" 2>/dev/null && break; sleep 0.1; done
url=$(grep -o "http://[^ ]*/whip" "$work/recv.err" | head -1)
[ -n "$url" ] || { echo "chromium_tbf: the receiver did not start: $(cat "$work/recv.err")" >&2; exit 1; }
ip netns exec "$A" python3 "$here/chromium_peer.py" publish "$url" --simulcast --seconds "$seconds" --limit $((seconds + 40)) | grep '^{' || true
kill -INT "$recv" 2>/dev/null || true
wait "$recv" 2>/dev/null || true
echo "RECEIVER $(tr -d '\n' < "$work/recv.json")"
