"""TensorFlow v1 control flow -> Sluice: a tf.compat.v1.while_loop (control flow
v1: Enter/Merge/Switch/LoopCond/NextIteration/Exit) of an RNN-like cell with
constant weights over TensorArrays (the [T, B, D] input unstacked, one output
written per step, the outputs stacked), and tf.gradients of the stacked
outputs w.r.t. the input and the weights, for which TensorFlow builds
StackV2/StackPushV2/StackPopV2 (the forward values the backward loop needs)
and TensorArrayGradV3 into the graph. The GraphDef runs unchanged in Sluice
with run_graphdef; every fetch is compared with TensorFlow's own within
tf_models.RTOL (relative).

Usage: python tf_control_flow.py --run_graphdef=PATH [--workdir=DIR]
Exit status 0 iff every comparison is within tolerance.
"""

import argparse
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tf_models import RTOL, rel_error, run_sluice, tf, tf1  # noqa: E402


def check_while_rnn(run_graphdef, workdir, steps=5, batch=3, depth=4, hidden=6):
    """TensorFlow's v1 while_loop over TensorArrays, and its gradient graph."""
    rng = np.random.default_rng(4321)
    graph = tf.Graph()
    with graph.as_default():
        x = tf1.placeholder(tf.float32, [steps, batch, depth], name="x")
        w = tf.constant(rng.standard_normal((depth + hidden, hidden)).astype(np.float32) * 0.5, name="w")
        b = tf.constant(rng.uniform(-0.1, 0.1, size=[hidden]).astype(np.float32), name="b")
        inputs = tf1.TensorArray(tf.float32, size=steps, name="inputs").unstack(x)
        outputs = tf1.TensorArray(tf.float32, size=steps, name="outputs")

        def body(t, h, out):
            h = tf.tanh(tf.matmul(tf.concat([inputs.read(t), h], 1), w) + b)
            return t + 1, h, out.write(t, h)

        _, h_last, outputs = tf1.while_loop(lambda t, h, out: t < steps, body,
                                            [tf.constant(0), tf.zeros([batch, hidden]), outputs])
        y = tf.identity(outputs.stack(), name="y")
        h_last = tf.identity(h_last, name="h_last")
        loss = tf.reduce_sum(y * y, name="loss")
        grads = tf.gradients(loss, [x, w, b])
        names = ["y", "h_last", "loss"]
        for i, g in enumerate(grads):
            names.append(tf.identity(g, name="grad_%d" % i).op.name)
        gd = graph.as_graph_def()
        ops = set(n.op for n in gd.node)
        for needed in ["StackPushV2", "StackPopV2", "TensorArrayGradV3", "Enter", "NextIteration"]:
            if needed not in ops:
                raise RuntimeError("TensorFlow's graph lacks %s; is control flow v2 on?" % needed)
        x_val = rng.standard_normal(size=[steps, batch, depth]).astype(np.float32)
        with tf1.Session(graph=graph) as sess:
            want = sess.run([n + ":0" for n in names], {x: x_val})
    got, _ = run_sluice(run_graphdef, workdir, "while_rnn", gd, {"x:0": x_val}, [n + ":0" for n in names])
    labels = ["outputs", "last state", "loss", "d loss/d x", "d loss/d w", "d loss/d b"]
    return [("while_rnn " + label, rel_error(g, v)) for label, g, v in zip(labels, got, want)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run_graphdef", required=True)
    parser.add_argument("--workdir", default=None)
    args = parser.parse_args()
    tf1.disable_eager_execution()
    tf1.disable_control_flow_v2()
    workdir = args.workdir or tempfile.mkdtemp(prefix="tf_control_flow.")
    os.makedirs(workdir, exist_ok=True)
    failed = 0
    try:
        results = check_while_rnn(args.run_graphdef, workdir)
    except Exception as e:  # a rejected graph is a failed check, reported in full
        print("FAIL while_rnn: %s" % e)
        results = []
        failed += 1
    for check, err in results:
        ok = err <= RTOL
        failed += 0 if ok else 1
        print("%s %-50s rel_err=%.2e" % ("ok  " if ok else "FAIL", check, err))
    print("%d failed" % failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
