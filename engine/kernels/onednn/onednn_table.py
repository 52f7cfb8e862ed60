#!/usr/bin/env python3
"""Markdown table of onednn_bench's JSON output (--benchmark_out=FILE
--benchmark_out_format=json, with --benchmark_repetitions=N): per case and
thread count, our kernel's and oneDNN's rate (median [min, max] over the
repetitions) and the ratio ours / oneDNN (median [min, max] of the per-
repetition ratios, repetition i of one against repetition i of the other).

  python3 engine/kernels/onednn/onednn_table.py /tmp/onednn.json
"""
import collections
import json
import re
import statistics
import sys


def main(path):
    with open(path) as f:
        data = json.load(f)
    # (family, case, threads) -> impl -> {repetition: (rate, label)}
    runs = collections.defaultdict(lambda: collections.defaultdict(dict))
    unit = {}
    for b in data["benchmarks"]:
        if b.get("run_type") != "iteration" or b.get("error_occurred"):
            continue
        m = re.match(r"BM_(\w+)/(?:case|shape):(\d+)/onednn:(\d)/threads:(\d)", b["run_name"])
        if not m:
            continue
        family, case, impl, threads = m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4))
        counter = "GFLOPs" if "GFLOPs" in b else "GBps"
        unit[family] = "GFLOP/s" if counter == "GFLOPs" else "GB/s"
        label = re.sub(r" (ours|onednn|winograd)$", "", b.get("label", ""))
        runs[(family, case, threads)][impl][b.get("repetition_index", 0)] = (b[counter], label)
    def fmt(xs, digits=1):
        return f"{statistics.median(xs):.{digits}f} [{min(xs):.{digits}f}, {max(xs):.{digits}f}]"

    # impl 0 ours, 1 oneDNN, 2 the Winograd kernel (convolutions; shapes it
    # does not take run ours): one table per pair against oneDNN.
    for impl, name in ((0, "ours"), (2, "Winograd")):
        rows = []
        for key in sorted(runs):
            family, case, threads = key
            mine, theirs = runs[key][impl], runs[key][1]
            if not mine or not theirs:
                continue
            label = next(iter(mine.values()))[1]
            o = [v[0] for v in mine.values()]
            t = [v[0] for v in theirs.values()]
            ratios = [mine[i][0] / theirs[i][0] for i in mine if i in theirs]
            rows.append(f"| {label} | {threads} | {fmt(o)} {unit[family]} | {fmt(t)} | {fmt(ratios, 2)} |")
        if not rows:
            continue
        print(f"| op (shape) | threads | {name} | oneDNN | {name} / oneDNN |")
        print("|---|---|---|---|---|")
        print("\n".join(rows))
        print()


if __name__ == "__main__":
    main(sys.argv[1])
