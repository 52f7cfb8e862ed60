#!/usr/bin/env python3
"""A/B of Sluice settings on the lent GPU machine (issue 17): each variant's train steps in ms,
round by round, the variants in turn within each round (so drift hits them alike), then the
median per variant and configuration. Uses tests/bench/gpu_vs_torch --sluice-only (Sluice alone,
its progress lines after the warm-up) with the bundle of tools/gpu_bundle.sh.

A variant is one argument: a label, then ENV=VALUE words (set in train's environment), then
optionally --set and KEY=VALUE words (config overrides; later --set words may repeat), e.g.
  'default'  'any_transform SLUICE_CUDNN_TRANSFORM_TOLERANCE=1'  'threads16 --set devices.intra_op_threads=16'
Usage (repository root of the GPU machine):
  python3 tools/gpu_ab.py [--rounds 3] [--models cnn] [--batches 128,1024] VARIANT...
Environment: BUNDLE (default gpu_bundle).
"""
import argparse
import os
import re
import statistics
import subprocess
import sys

LINE = re.compile(r"^\s+(\w+) batch (\d+): sluice ([0-9.]+) ms per step")


def parse_variant(text):
    words = text.split()
    label, env, sets = words[0], {}, []
    rest = words[1:]
    if "--set" in rest:
        i = rest.index("--set")
        rest, sets = rest[:i], [w for w in rest[i + 1:] if w != "--set"]
    for w in rest:
        key, _, value = w.partition("=")
        env[key] = value
    return label, env, sets


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--models", default="cnn")
    ap.add_argument("--batches", default="128,1024")
    ap.add_argument("--sluice-steps", type=int, default=600)
    ap.add_argument("--sluice-skip", type=int, default=200)
    ap.add_argument("variants", nargs="+")
    args = ap.parse_args()
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    bundle = os.path.join(repo, os.environ.get("BUNDLE", "gpu_bundle"))
    variants = [parse_variant(v) for v in args.variants]
    results = {}  # (label, model, batch) -> [ms]
    for rnd in range(args.rounds):
        for label, env, sets in variants:
            cmd = [sys.executable, os.path.join(repo, "tests/bench/gpu_vs_torch"), "--sluice-only", "--rounds", "1",
                   "--models", args.models, "--batches", args.batches, "--sluice-steps", str(args.sluice_steps),
                   "--sluice-skip", str(args.sluice_skip)]
            for s in sets:
                cmd += ["--sluice-set", s]
            run_env = dict(os.environ, SLUICE_TRAIN=os.path.join(bundle, "run.sh") + " train",
                           SLUICE_FASHION_DIR=os.path.join(bundle, "data"), **env)
            p = subprocess.run(cmd, cwd=repo, env=run_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True)
            got = [m.groups() for m in map(LINE.match, p.stdout.splitlines()) if m]
            if p.returncode != 0 or not got:
                print(p.stdout[-2000:])
                print("gpu_ab: variant %s failed (exit %d)" % (label, p.returncode))
                return 1
            for model, batch, ms in got:
                results.setdefault((label, model, int(batch)), []).append(float(ms))
                print("round %d %-16s %s batch %4s: %.3f ms" % (rnd, label, model, batch, float(ms)), flush=True)
    print("medians (ms per step; min-max) over %d rounds:" % args.rounds)
    for (label, model, batch), ms in results.items():
        print("  %-16s %s batch %4d: %.3f (%.3f-%.3f)" % (label, model, batch, statistics.median(ms), min(ms),
                                                           max(ms)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
