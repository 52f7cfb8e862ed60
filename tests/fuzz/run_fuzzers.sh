#!/bin/bash
# Builds every libFuzzer target (bazel build --config=fuzz) and runs each for SECONDS, one after
# another, stopping at the first crash (or leak, timeout, out-of-memory), whose reproducer path it
# prints. Each target starts from its seeds (tests/fuzz/corpus/<t>/) and reproducers
# (tests/fuzz/regressions/<t>/); what it learns goes to $FUZZ_WORK/<t>/corpus (default
# /tmp/sluice_fuzz), never into the tree. Prints one summary line per target (runs, exec/s,
# corpus size) for docs/RELIABILITY.md.
# Usage: bash tests/fuzz/run_fuzzers.sh SECONDS [TARGET...]   (TARGET: record_reader, ...)
# FUZZ_NO_BUILD=1 runs the binaries already in bazel-bin (built with --config=fuzz).
# A crash: copy the reproducer into tests/fuzz/regressions/<t>/, fix the code, and
# `bazel test //tests/fuzz:<t>_fuzz_test` replays it from then on.
set -euo pipefail
cd "$(dirname "$0")/../.."
if [[ $# -lt 1 || ! "$1" =~ ^[0-9]+$ ]]; then
  echo "usage: $0 SECONDS [TARGET...]" >&2
  exit 2
fi
seconds=$1
shift
work=${FUZZ_WORK:-/tmp/sluice_fuzz}

if [[ $# -gt 0 ]]; then
  targets=("$@")
else
  mapfile -t targets < <(ls tests/fuzz/corpus)
fi
labels=()
for t in "${targets[@]}"; do labels+=("//tests/fuzz:${t}_fuzzer"); done
if [[ "${FUZZ_NO_BUILD:-0}" != 1 ]]; then
  nice -n 19 bazel build --config=fuzz "${labels[@]}"
fi

for t in "${targets[@]}"; do
  dir="$work/$t"
  mkdir -p "$dir/corpus"
  rm -f "$dir"/crash-* "$dir"/leak-* "$dir"/timeout-* "$dir"/oom-*
  inputs=("$dir/corpus" "tests/fuzz/corpus/$t")
  [[ -d "tests/fuzz/regressions/$t" ]] && inputs+=("tests/fuzz/regressions/$t")
  echo "=== $t: ${seconds}s"
  status=0
  nice -n 19 "bazel-bin/tests/fuzz/${t}_fuzzer" -max_total_time="$seconds" -timeout=30 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$dir/" "${inputs[@]}" >"$dir/log" 2>&1 || status=$?
  if [[ $status -ne 0 ]]; then
    tail -n 60 "$dir/log"
    echo "FAILED: $t (exit $status); log: $dir/log"
    for f in "$dir"/crash-* "$dir"/leak-* "$dir"/timeout-* "$dir"/oom-*; do
      [[ -e "$f" ]] && echo "reproducer: $f"
    done
    exit 1
  fi
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$dir/log")
  rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$dir/log")
  files=$(find "$dir/corpus" -type f | wc -l)
  bytes=$(find "$dir/corpus" -type f -exec cat {} + | wc -c)
  echo "$t: ${seconds}s, $runs runs, $rate exec/s, corpus $files files ($bytes bytes), peak RSS ${rss} MiB, no crash"
done
