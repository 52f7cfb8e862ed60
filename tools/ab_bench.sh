#!/bin/bash
# Compares Google Benchmark binaries built from different commits on this
# noisy shared machine: runs each binary in turn, ROUNDS times, each time with
# --benchmark_repetitions=3, and prints for every benchmark the minimum real
# time per binary (the least disturbed run).
#
# Usage: tools/ab_bench.sh FILTER ROUNDS BINARY...
#   e.g. (with copies of bazel-out/k8-opt/bin/engine/kernels/ops_bench from two commits)
#   tools/ab_bench.sh 'Conv|PoolGrad' 2 /tmp/ops_bench_before /tmp/ops_bench_after
set -euo pipefail
if [[ $# -lt 3 ]]; then
  sed -n '2,10p' "$0" >&2
  exit 2
fi
filter=$1
rounds=$2
shift 2
for _ in $(seq "$rounds"); do
  for binary in "$@"; do
    "$binary" --benchmark_filter="$filter" --benchmark_repetitions=3 2>/dev/null |
      grep -E '^BM_' | grep -v -E '_(mean|median|stddev|cv) ' |
      awk -v b="$(basename "$binary")" '{print b, $1, $2, $3}'
  done
done | awk '{k = $1 " " $2; if (!(k in m) || $3 < m[k]) {m[k] = $3; u[k] = $4}} END {for (k in m) print k, m[k], u[k]}' |
  sort -k2,2 -k1,1
