"""The op census of issue 21: which op types of ordinary TensorFlow training
graphs (census_models.py) Sluice registers (list_ops).

Prints, per model, how many of its op types Sluice registers and which are
missing, then the union: "ops: N of M registered" (N counts op types Sluice
registers; those among them without any kernel are listed, since a graph that
uses them cannot run). With TensorFlow importable, it also checks that the ops
marked SetSluiceOnly (list_ops' third column) are exactly the registered ones
TensorFlow lacks. Exit status 1 when N is below --min_registered, when a mark is
wrong, or when an input is malformed.

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
    """({op: has a kernel}, {ops marked sluice_only})."""
    out = subprocess.run([list_ops], check=True, capture_output=True, text=True).stdout
    ops, sluice_only = {}, set()
    for line in out.splitlines():
        fields = line.split("\t")
        ops[fields[0]] = fields[1] == "kernel"
        if fields[2:] == ["sluice_only"]:
            sluice_only.add(fields[0])
    if not ops:
        raise ValueError(f"{list_ops} listed no ops")
    return ops, sluice_only


def check_sluice_only(ops, sluice_only):
    """The ops marked SetSluiceOnly are exactly those TensorFlow lacks (names with a leading
    underscore are TensorFlow's internal ops, which tf.raw_ops does not list: only their marks
    are printed). The export refuses marked ops, so a wrong mark lets an export that TensorFlow
    cannot load through, or refuses one it can. None when TensorFlow cannot be imported."""
    try:
        import tensorflow as tf
    except ImportError:
        return None
    tf_ops = set(dir(tf.raw_ops))
    unmarked = sorted(o for o in ops if not o.startswith("_") and o not in tf_ops and o not in sluice_only)
    wrongly = sorted(o for o in sluice_only if o in tf_ops)
    print(f"sluice-only ops ({len(sluice_only)}): {' '.join(sorted(sluice_only))}")
    problems = []
    if unmarked:
        problems.append(f"TensorFlow lacks these ops, which are not marked SetSluiceOnly: {' '.join(unmarked)}")
    if wrongly:
        problems.append(f"these ops are marked SetSluiceOnly, but TensorFlow has them: {' '.join(wrongly)}")
    return problems


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
    ops, sluice_only = registered_ops(args.list_ops)
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
    problems = check_sluice_only(ops, sluice_only)
    if problems:
        for p in problems:
            print("FAIL: " + p)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
