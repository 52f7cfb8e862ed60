#!/usr/bin/env bash
# tools/trace_summary.py on a two-device trace whose figures are worked out by hand:
# CPU nodes a [100, 110], d [102, 104] (inside a) and b [105, 120], GPU node c [130, 140].
# Span 40 us; some node runs during [100, 120] and [130, 140], so 10 us (25%) are idle; the CPU
# is busy 20 us (50%) with 27 us of durations, the GPU 10 us (25%); OpA is 2 nodes and 20 us,
# OpB 1 node and 15 us, OpC 1 node and 2 us.
# Also: a file that is not JSON, and one without node events, exit 2.
set -uo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
script="$here/trace_summary.py"
trace="$here/testdata/two_device_trace.json"
failures=0
expect() {  # expect LABEL TEXT PATTERN
  if grep -qE -- "$3" <<<"$2"; then echo "ok: $1"; else echo "FAIL: $1: no line matching '$3' in:"; echo "$2"; failures=$((failures + 1)); fi
}
out=$(python3 "$script" --top 5 "$trace" "$trace"); rc=$?
[[ $rc == 0 ]] || { echo "FAIL: exit $rc"; failures=$((failures + 1)); }
expect "span and idle" "$out" "step 7, 4 nodes, span 40\.0 us, idle \(no node running\) 10\.0 us \(25%\)"
expect "cpu busy" "$out" "device /device:CPU:0: 3 nodes, busy 20\.0 us \(50% of the span\), sum of durations 27\.0 us"
expect "gpu busy" "$out" "device /device:GPU:0: 1 nodes, busy 10\.0 us \(25% of the span\), sum of durations 10\.0 us"
expect "op A" "$out" "^ +OpA +2 nodes +20\.0 us"
expect "op B" "$out" "^ +OpB +1 nodes +15\.0 us"
expect "op C" "$out" "^ +OpC +1 nodes +2\.0 us"
expect "longest node first" "$(grep -m1 -A1 "longest nodes:" <<<"$out" | sed -n 2p)" "^ +b +OpB +15\.0 us at 5\.0$"
expect "mean" "$out" "mean of 2 traces: span 40\.0 us, idle 10\.0 us, 4\.0 nodes"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
# A ps-like device whose step is mostly a _Recv [0, 100] with an Add [90, 95] inside it: busy is
# the Add's 5 us, and the rest of the receive, 95 us, is only waiting.
cat > "$tmp/ps.json" <<'TRACE'
{"traceEvents":[{"name":"process_name","ph":"M","pid":0,"args":{"name":"/job:ps/device:CPU:0"}},
{"name":"r","ph":"X","pid":0,"tid":1,"ts":0.0,"dur":100.0,"args":{"op":"_Recv"}},
{"name":"s","ph":"X","pid":0,"tid":2,"ts":90.0,"dur":5.0,"args":{"op":"Add"}}],"otherData":{"step":"3"}}
TRACE
out=$(python3 "$script" "$tmp/ps.json")
expect "waiting is not busy" "$out" "device /job:ps/device:CPU:0: 2 nodes, busy 5\.0 us \(5% of the span\), sum of durations 105\.0 us, only waiting \(receives, dequeues\) 95\.0 us"
echo "not json" > "$tmp/bad.json"
echo '{"traceEvents":[{"name":"process_name","ph":"M","pid":0,"args":{"name":"x"}}]}' > "$tmp/empty.json"
for f in bad empty; do
  err=$(python3 "$script" "$tmp/$f.json" 2>&1 >/dev/null); rc=$?
  if [[ $rc == 2 && -n "$err" ]]; then echo "ok: $f exits 2 ($err)"; else echo "FAIL: $f: exit $rc, stderr '$err'"; failures=$((failures + 1)); fi
done
exit $((failures > 0))
