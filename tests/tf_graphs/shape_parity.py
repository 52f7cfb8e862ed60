"""Static shapes on TensorFlow's own graphs: for every census model
(census_models.py), the shapes TensorFlow infers for each node output against
those Sluice infers (infer_shapes) for the same GraphDef.

Prints per model how many outputs TensorFlow knows fully and how many of them
Sluice knows less well, then those by op type. Fails when a shape contradicts
TensorFlow's (a rank or a known dim differs), or when more outputs are known
less well than --max_less (a ratchet: lower it as inference improves).
Resource handles are left out: TensorFlow gives its TensorArray and stack
handles a legacy shape [2], Sluice a scalar, and neither is a value's shape.

Usage: python shape_parity.py --infer_shapes=PATH [--max_less=N]
"""

import argparse
import collections
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import census_models  # noqa: E402

tf = census_models.tf
tf1 = census_models.tf1


def tf_dims(proto):
    return None if proto.unknown_rank else [d.size for d in proto.dim]


def sluice_dims(text):
    if text == "<unknown>":
        return None
    inner = text.strip("[]")
    return [] if not inner else [-1 if d == "?" else int(d) for d in inner.split(",")]


def contradicts(theirs, ours):
    if theirs is None or ours is None:
        return False
    if len(theirs) != len(ours):
        return True
    return any(a >= 0 and b >= 0 and a != b for a, b in zip(theirs, ours))


def compare(name, infer_shapes, workdir):
    graph = census_models.build(name)
    graph_def = graph.as_graph_def(add_shapes=True)
    theirs, op_of = {}, {}
    for node in graph_def.node:
        op_of[node.name] = node.op
        shapes = node.attr["_output_shapes"].list.shape if "_output_shapes" in node.attr else []
        for i, proto in enumerate(shapes):
            if graph.get_operation_by_name(node.name).outputs[i].dtype != tf.resource:
                theirs[f"{node.name}:{i}"] = tf_dims(proto)
        node.attr.pop("_output_shapes", None)
    path = os.path.join(workdir, name + ".pb")
    with open(path, "wb") as f:
        f.write(graph_def.SerializeToString())
    run = subprocess.run([infer_shapes, path], capture_output=True, text=True, timeout=120)
    if run.returncode != 0:
        raise SystemExit(f"{name}: infer_shapes failed: {run.stderr.strip()}")
    ours = dict(line.split("\t") for line in run.stdout.splitlines())
    known = less = 0
    less_by_op = collections.Counter()
    conflicts = []
    for tensor, dims in theirs.items():
        mine = sluice_dims(ours.get(tensor, "<unknown>"))
        if contradicts(dims, mine):
            conflicts.append(f"{tensor} ({op_of[tensor.split(':')[0]]}): TensorFlow {dims}, Sluice {mine}")
        if dims is None or -1 in dims:
            continue
        known += 1
        if mine != dims:
            less += 1
            less_by_op[op_of[tensor.split(":")[0]]] += 1
    return known, less, less_by_op, conflicts


def main():
    tf1.disable_eager_execution()
    tf1.disable_control_flow_v2()
    parser = argparse.ArgumentParser()
    parser.add_argument("--infer_shapes", required=True)
    parser.add_argument("--max_less", type=int, default=-1)
    args = parser.parse_args()
    total_known = total_less = 0
    by_op = collections.Counter()
    conflicts = []
    with tempfile.TemporaryDirectory() as workdir:
        for name in census_models.MODELS:
            known, less, less_by_op, model_conflicts = compare(name, args.infer_shapes, workdir)
            print(f"{name}: TensorFlow knows {known} outputs fully, Sluice {known - less} of them")
            total_known += known
            total_less += less
            by_op.update(less_by_op)
            conflicts += [f"{name}: {c}" for c in model_conflicts]
    print(f"shapes: Sluice knows {total_known - total_less} of the {total_known} outputs TensorFlow knows fully "
          f"({total_less} less well)")
    if by_op:
        print("known less well, by op: " + ", ".join(f"{op} {n}" for op, n in by_op.most_common()))
    for c in conflicts:
        print(f"CONTRADICTS: {c}")
    failed = bool(conflicts)
    if args.max_less >= 0 and total_less > args.max_less:
        print(f"FAIL: {total_less} outputs known less well than TensorFlow knows them, over the floor of {args.max_less}")
        failed = True
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
