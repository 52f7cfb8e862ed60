#!/usr/bin/env python3
"""Summarizes step traces written by `train --trace_steps=A-B` (<run_dir>/traces/step_N.json,
Chrome trace-event JSON; monitoring/trace.h): where one step's time goes, per device and per op.

For each trace file (and, with several, their means):
  - the step's span (first node start to last node end) and its node count;
  - per device: nodes, busy time (the union of its nodes' intervals, but for the nodes that wait
    for another task or thread: receives and queue dequeues), the sum of node durations, busy
    as a share of the span, and the time spent only waiting (a ps's step is mostly _Recv of the
    workers' gradients); a GPU device's durations are host time (the kernel's launch and any
    wait inside Compute), not the GPU's execution time;
  - idle: the part of the span when no node ran on any device (executor dispatch, hand-offs
    between threads, waits on the input queue);
  - the op types and the nodes with the largest total duration.

Usage: python3 tools/trace_summary.py [--top N] TRACE.json [TRACE.json ...]
Exit 2 when a file cannot be read or holds no node events.
"""
import argparse
import collections
import json
import sys


# Ops whose time is a wait for a tensor from another device, task or thread, not work.
WAITING_OPS = {"_Recv", "_HostRecv", "QueueDequeue", "QueueDequeueV2", "QueueDequeueMany", "QueueDequeueManyV2",
               "QueueDequeueUpTo", "QueueDequeueUpToV2", "AccumulatorTakeGradient", "SparseAccumulatorTakeGradient"}


def union_length(intervals):
    """Total length covered by a list of (start, end) intervals."""
    total = 0.0
    current_start = current_end = None
    for start, end in sorted(intervals):
        if current_end is None or start > current_end:
            if current_end is not None:
                total += current_end - current_start
            current_start, current_end = start, end
        else:
            current_end = max(current_end, end)
    if current_end is not None:
        total += current_end - current_start
    return total


def load(path):
    """(device names by pid, node events, otherData) of one trace file."""
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    events = data.get("traceEvents", []) if isinstance(data, dict) else data
    devices = {}
    nodes = []
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "process_name":
            devices[e.get("pid")] = e.get("args", {}).get("name", str(e.get("pid")))
        elif e.get("ph") == "X":
            nodes.append(e)
    other = data.get("otherData", {}) if isinstance(data, dict) else {}
    return devices, nodes, other


def summarize(path, top):
    """Prints one trace's summary; returns its figures for the mean, or None."""
    try:
        devices, nodes, other = load(path)
    except (OSError, ValueError) as err:
        print("%s: cannot read: %s" % (path, err), file=sys.stderr)
        return None
    if not nodes:
        print("%s: no node events" % path, file=sys.stderr)
        return None
    intervals = [(float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0.0))) for e in nodes]
    first = min(s for s, _ in intervals)
    span = max(end for _, end in intervals) - first
    busy_any = union_length(intervals)
    step = other.get("step", "?")
    print("%s: step %s, %d nodes, span %.1f us, idle (no node running) %.1f us (%.0f%%)" %
          (path, step, len(nodes), span, span - busy_any, 100.0 * (span - busy_any) / span if span else 0.0))
    by_device = collections.defaultdict(list)
    for e, interval in zip(nodes, intervals):
        by_device[e.get("pid")].append((e, interval))
    per_device = {}
    for pid in sorted(by_device, key=str):
        entries = by_device[pid]
        working = [iv for e, iv in entries if e.get("args", {}).get("op") not in WAITING_OPS]
        busy = union_length(working)
        waiting = union_length([iv for _, iv in entries]) - busy
        total = sum(end - start for _, (start, end) in entries)
        name = devices.get(pid, "pid %s" % pid)
        per_device[name] = busy
        print("  device %s: %d nodes, busy %.1f us (%.0f%% of the span), sum of durations %.1f us%s" %
              (name, len(entries), busy, 100.0 * busy / span if span else 0.0, total,
               ", only waiting (receives, dequeues) %.1f us" % waiting if waiting > 0 else ""))
    by_op = collections.defaultdict(lambda: [0, 0.0])
    for e, (start, end) in zip(nodes, intervals):
        op = e.get("args", {}).get("op", "?")
        by_op[op][0] += 1
        by_op[op][1] += end - start
    print("  top op types by total duration:")
    for op, (count, total) in sorted(by_op.items(), key=lambda kv: -kv[1][1])[:top]:
        print("    %-28s %4d nodes %10.1f us" % (op, count, total))
    print("  longest nodes:")
    for e, (start, end) in sorted(zip(nodes, intervals), key=lambda x: -(x[1][1] - x[1][0]))[:top]:
        print("    %-44s %-22s %10.1f us at %.1f" % (e.get("name", "?"), e.get("args", {}).get("op", "?"),
                                                    end - start, start - first))
    return {"span": span, "idle": span - busy_any, "nodes": len(nodes), "devices": per_device}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--top", type=int, default=8, help="op types and nodes to list (default 8)")
    parser.add_argument("traces", nargs="+")
    args = parser.parse_args()
    figures = [f for f in (summarize(p, args.top) for p in args.traces) if f is not None]
    if len(figures) != len(args.traces):
        return 2
    if len(figures) > 1:
        n = len(figures)
        print("mean of %d traces: span %.1f us, idle %.1f us, %.1f nodes" %
              (n, sum(f["span"] for f in figures) / n, sum(f["idle"] for f in figures) / n,
               sum(f["nodes"] for f in figures) / n))
    return 0


if __name__ == "__main__":
    sys.exit(main())
