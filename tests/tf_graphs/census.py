"""The op census of issue 21: which op types of ordinary TensorFlow training
graphs (census_models.py) Sluice registers (list_ops).

Prints, per model, how many of its op types Sluice registers and which are
missing, then the union: "ops: N of M registered" (N counts op types Sluice
registers; those among them without any kernel are listed, since a graph that
uses them cannot run). Exit status 1 when N is below --min_registered, or
when an input is malformed.

Usage: python census.py --list_ops=PATH [--census=FILE.json] [--min_registered=N]
  Without --census, census_models.py (beside this file) builds the graphs.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile


def registered_ops(list_ops):
    out = subprocess.run([list_ops], check=True, capture_output=True, text=True).stdout
    ops = {}
    for line in out.splitlines():
        name, kernel = line.split("\t")
        ops[name] = kernel == "kernel"
    if not ops:
        raise ValueError(f"{list_ops} listed no ops")
    return ops


def build_census():
    here = os.path.dirname(os.path.abspath(__file__))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "census.json")
        subprocess.run([sys.executable, os.path.join(here, "census_models.py"), "--out=" + path], check=True,
                       stderr=subprocess.DEVNULL)
        with open(path) as f:
            return json.load(f)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--list_ops", required=True)
    parser.add_argument("--census")
    parser.add_argument("--min_registered", type=int, default=0)
    args = parser.parse_args()
    ops = registered_ops(args.list_ops)
    if args.census:
        with open(args.census) as f:
            census = json.load(f)
    else:
        census = build_census()

    used = set()
    for model, types in sorted(census.items()):
        missing = [t for t in types if t not in ops]
        used.update(types)
        print(f"{model}: {len(types) - len(missing)} of {len(types)} registered"
              + (f"; missing: {' '.join(missing)}" if missing else ""))
    registered = sorted(t for t in used if t in ops)
    missing = sorted(t for t in used if t not in ops)
    no_kernel = [t for t in registered if not ops[t]]
    print(f"missing ({len(missing)}): {' '.join(missing)}")
    if no_kernel:
        print(f"registered without a kernel ({len(no_kernel)}): {' '.join(no_kernel)}")
    print(f"ops: {len(registered)} of {len(used)} registered")
    if len(registered) < args.min_registered:
        print(f"FAIL: {len(registered)} registered op types, fewer than the floor {args.min_registered}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
