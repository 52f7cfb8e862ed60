"""Training parity of the census models (issue 21): each TensorFlow training
graph of census_models.py trains 20 steps in TensorFlow and in Sluice (the
GraphDef run unchanged by run_graphdef), and every variable (model variables,
optimizer slots, metric accumulators, the global step) must then match:
max |sluice - tf| / max |tf| below 1e-4.

Both sides start from the same values: after TensorFlow's initializers ran,
the graph gets a `parity_init` op that assigns each variable those values as
constants, and Sluice runs it instead of the initializers. Random ops that a
training step runs (dropout, random augmentation, the GAN's noise, sampled
softmax's candidates) are fed on both sides with values TensorFlow drew once,
so both see the same numbers; random ops inside a while loop cannot be fed,
and a model with one would be reported as a failure. A model whose
variables did not move in training (nothing to compare) fails too.

A model written in NCHW may run at most one Transpose per step more than its
NHWC twin (the count comes from run_graphdef --op_counts).

Usage: python census_parity.py --run_graphdef=PATH [--workdir=DIR] [--models=a,b]
Prints one line per variable and per model its worst error; exit status 1 on
any failure.
"""

import argparse
import os
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tf_interop"))
import census_models  # noqa: E402
from tf_models import rel_error, run_sluice  # noqa: E402

tf1 = tf.compat.v1

STEPS = 20
RTOL = 1e-4
B = census_models.BATCH
RANDOM_OPS = {"RandomUniform", "RandomStandardNormal", "TruncatedNormal", "RandomUniformInt", "RandomShuffle",
              "LogUniformCandidateSampler", "UniformCandidateSampler", "Multinomial", "RandomGamma"}


def ints(rng, high, shape, dtype):
    return rng.integers(0, high, size=shape).astype(dtype)


def normal(rng, shape, scale=1.0):
    return (scale * rng.standard_normal(shape)).astype(np.float32)


def wide_deep_feeds(rng):
    rows, per_row = B, 3
    indices = np.array([[r, j] for r in range(rows) for j in range(per_row)], np.int64)
    return {"ids/indices:0": indices, "ids/values:0": ints(rng, 500, [rows * per_row], np.int64),
            "ids/shape:0": np.array([rows, per_row], np.int64), "dense:0": normal(rng, [rows, 4]),
            "label:0": ints(rng, 2, [rows, 1], np.float32)}


# Placeholder values per model (tensor name -> array).
FEEDS = {
    "mlp_momentum": lambda r: {"image:0": normal(r, [B, 784], 0.5), "label:0": ints(r, 10, [B], np.int64)},
    "resnet_bn": lambda r: {"image:0": normal(r, [B, 28, 28, 1]), "label:0": ints(r, 10, [B], np.int32)},
    # The same draws as resnet_bn's, the images transposed: one function of the same values.
    "resnet_bn_nchw": lambda r: {"image:0": np.ascontiguousarray(normal(r, [B, 28, 28, 1]).transpose(0, 3, 1, 2)),
                                 "label:0": ints(r, 10, [B], np.int32)},
    "lstm_lm": lambda r: {"ids:0": ints(r, 1000, [B, 12], np.int64), "targets:0": ints(r, 1000, [B, 12], np.int64)},
    "attention": lambda r: {"x:0": normal(r, [B, 16, 32]), "target:0": normal(r, [B, 16, 32])},
    "wide_deep": wide_deep_feeds,
    "sgd_clipping": lambda r: {"x:0": normal(r, [B, 13]), "y:0": normal(r, [B, 1])},
    "augment_metrics": lambda r: {"images:0": ints(r, 256, [B, 32, 32, 3], np.uint8),
                                  "labels:0": ints(r, 10, [B], np.int64)},
    "gan": lambda r: {"real:0": normal(r, [B, 64])},
    "seq2seq": lambda r: {"src:0": ints(r, 200, [B, 10], np.int32), "tgt:0": ints(r, 200, [B, 10], np.int32)},
}


# Transposes Sluice's last training step ran, by model.
TRANSPOSES = {}


def layout_checks():
    """[(check, ok)]: a model written in NCHW (name_nchw) runs at most one Transpose
    more per step than its NHWC twin (name): the images', which come in NCHW. The
    data format pass moves the rest into NHWC, and its Transposes cancel with each
    other and with the model's own (engine/graph/optimizer_layout.h)."""
    checks = []
    for name, count in sorted(TRANSPOSES.items()):
        twin = name[:-len("_nchw")]
        if name.endswith("_nchw") and twin in TRANSPOSES:
            checks.append(("%s runs %d Transposes per step, %s %d" % (name, count, twin, TRANSPOSES[twin]),
                           count <= TRANSPOSES[twin] + 1))
    return checks


def ancestors(op):
    """Every op the given op depends on (data and control inputs)."""
    seen, stack = set(), [op]
    while stack:
        o = stack.pop()
        if o in seen:
            continue
        seen.add(o)
        stack.extend(t.op for t in o.inputs)
        stack.extend(o.control_inputs)
    return seen


def check_model(name, run_graphdef, workdir):
    """Returns [(check, rel error)] for every variable of the model."""
    rng = np.random.default_rng(2026)
    graph = census_models.build(name)
    with graph.as_default():
        train = graph.get_operation_by_name("train")
        variables = tf1.global_variables() + tf1.local_variables()
        feeds = {graph.get_tensor_by_name(k): v for k, v in FEEDS[name](rng).items()}
        random_ops = [o for o in ancestors(train) if o.type in RANDOM_OPS]
        in_loop = [o.name for o in random_ops if o._control_flow_context is not None]  # noqa: SLF001
        if in_loop:
            raise RuntimeError("random ops inside a loop cannot be fed: " + ", ".join(sorted(in_loop)))
        with tf1.Session(graph=graph) as sess:
            sess.run([tf1.global_variables_initializer(), tf1.local_variables_initializer()])
            start = sess.run([v.read_value() for v in variables])
            assigns = [tf1.assign(v, tf.constant(x), name="parity_assign_%d" % i).op
                       for i, (v, x) in enumerate(zip(variables, start))]
            parity_init = tf.group(*assigns, name="parity_init")
            reads = [tf.identity(v.read_value(), name="parity_final_%d" % i) for i, v in enumerate(variables)]
            random_outputs = [t for o in random_ops for t in o.outputs]
            drawn = sess.run(random_outputs, feeds)
            feeds.update(zip(random_outputs, drawn))
            sess.run(parity_init)
            for _ in range(STEPS):
                sess.run(train, feeds)
            want = sess.run(reads)
        ops = {}
        got, _ = run_sluice(run_graphdef, workdir, name, graph.as_graph_def(), {t.name: v for t, v in feeds.items()},
                            [r.name for r in reads], init=parity_init.name, train=train.name, steps=STEPS,
                            op_counts=ops)
    if len(got) != len(variables):
        raise RuntimeError("Sluice returned %d of %d variables" % (len(got), len(variables)))
    fed = ", ".join(sorted(o.name for o in random_ops)) or "none"
    # Of the float variables, other than the optimizers' beta powers (the global
    # step and those move whatever the gradients are).
    moved = max([rel_error(x, w) for v, x, w in zip(variables, start, want)
                 if v.dtype.base_dtype == tf.float32 and "power" not in v.op.name] or [0.0])
    print("     %s: %d variables, random ops fed: %s; largest change in training %.2e; Sluice's step ran %d nodes,"
          " %d of them Transposes" % (name, len(variables), fed, moved, sum(ops.values()), ops.get("Transpose", 0)))
    if not moved > 1e-3:
        raise RuntimeError("%d steps changed no variable by more than 1e-3: nothing to compare" % STEPS)
    TRANSPOSES[name] = ops.get("Transpose", 0)
    return [("%s after %d steps: %s" % (name, STEPS, v.op.name), rel_error(g, w)) for v, g, w in zip(variables, got, want)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run_graphdef", required=True)
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--models", default=",".join(census_models.MODELS))
    args = parser.parse_args()
    tf1.disable_eager_execution()
    tf1.disable_control_flow_v2()
    workdir = args.workdir or tempfile.mkdtemp(prefix="census_parity.")
    os.makedirs(workdir, exist_ok=True)
    print("TensorFlow %s; files in %s" % (tf.__version__, workdir))
    failed, passed_models = 0, 0
    models = [m for m in args.models.split(",") if m]
    for name in models:
        try:
            results = check_model(name, args.run_graphdef, workdir)
        except Exception as e:  # a graph Sluice rejects is a failed model, reported in full
            print("FAIL %s: %s" % (name, str(e)[-3000:]))
            failed += 1
            continue
        bad = 0
        for check, err in results:
            ok = err <= RTOL
            bad += 0 if ok else 1
            print("%s %-70s rel_err=%.2e" % ("ok  " if ok else "FAIL", check, err))
        worst = max(err for _, err in results)
        print("     %s worst rel_err=%.2e" % (name, worst))
        failed += bad
        passed_models += 0 if bad else 1
    for check, ok in layout_checks():
        print("%s %s" % ("ok  " if ok else "FAIL", check))
        failed += 0 if ok else 1
    print("census parity: %d of %d models match TensorFlow after %d steps" % (passed_models, len(models), STEPS))
    print("%d failed" % failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
