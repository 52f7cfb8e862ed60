"""TensorFlow -> Sluice interop: exports graphs from TensorFlow (tf.compat.v1 graph
mode, variables frozen to constants), runs them in Sluice with run_graphdef, and
compares the outputs with TensorFlow's own.

Cases: FusedBatchNormV3 and its gradient (training and inference, NHWC and
NCHW); MLP 784-512-512-10 (relu, softmax) and the Fashion-MNIST CNN (conv 5x5x32
SAME relu, maxpool 2x2, conv 5x5x64 relu, maxpool, fc 1024 relu, fc 10, softmax),
the CNN also with NCHW convolutions, biases and pools (a graph written for a
GPU, which Sluice's layout pass runs on its NHWC kernels), each as an inference graph and as a training-gradient graph (tf.gradients of the
mean softmax cross-entropy w.r.t. the input and every weight). Gradients are
checked twice: TensorFlow's gradient graph run by Sluice, and Sluice's own
symbolic gradients (run_graphdef --grad_y/--grad_x) of the frozen forward graph.

Training parity with resource variables (use_resource=True, not frozen): small
training graphs (logistic regression with GradientDescent, Adam, Adagrad,
RMSProp and FTRL; an embedding lookup plus a dense layer with Momentum, Adagrad
and FTRL, whose embedding update is sparse; FTRL also as FtrlV2 with
l2_shrinkage and lr_power -0.6) exported with their initializer and train op; Sluice runs the
initializer, then TRAIN_STEPS train steps on fixed fed inputs, and every
variable must match TensorFlow's after the same steps within TRAIN_RTOL.

Usage: python tf_models.py --run_graphdef=PATH [--workdir=DIR]
Exit status 0 iff every comparison is within tolerance. Also imported by
tests/bench/ops_vs_peers for its TensorProto and run_graphdef helpers.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

# Quiet TensorFlow's C++ logging before it is imported.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402
from tensorflow.core.framework import tensor_pb2  # noqa: E402

tf1 = tf.compat.v1

# Max |sluice - tf| / max|tf| over a tensor.
RTOL = 1e-5


# ---------------------------------------------------------------- helpers

def run(cmd):
    """Runs a command; its stdout, or RuntimeError with its output's tail when it fails."""
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError("%s failed (exit %d):\n%s\n%s" % (" ".join(cmd), proc.returncode, proc.stdout[-3000:],
                                                             proc.stderr[-3000:]))
    return proc.stdout


def write_tensor(path, array):
    with open(path, "wb") as f:
        f.write(tf1.make_tensor_proto(array).SerializeToString())


def read_tensor(path):
    proto = tensor_pb2.TensorProto()
    with open(path, "rb") as f:
        proto.ParseFromString(f.read())
    return tf1.make_ndarray(proto)


def run_sluice(run_graphdef, workdir, tag, graph_def, feeds, fetches, grad_y=None, grad_xs=(), grad_dy=None,
               iters=0, warmup=2, max_seconds=0, write_outputs=True, env=None, prefix=(), init=None, train=None,
               steps=0, op_counts=None):
    """Runs `graph_def` in Sluice; returns (outputs list, timing dict or None).

    feeds: {tensor name: ndarray}; fetches: tensor names (or "@grad:i").
    With write_outputs=False the outputs list is empty (timing-only runs).
    With train and op_counts (a dict), op_counts gets {op type: nodes run}
    of the last training step.
    """
    gpath = os.path.join(workdir, tag + ".graph.pb")
    with open(gpath, "wb") as f:
        f.write(graph_def.SerializeToString())
    cmd = list(prefix) + [run_graphdef, "--graph=" + gpath]
    for i, (name, value) in enumerate(feeds.items()):
        p = os.path.join(workdir, "%s.feed%d.pb" % (tag, i))
        write_tensor(p, value)
        cmd.append("--feed=%s=%s" % (name, p))
    outs = []
    for i, name in enumerate(fetches):
        if not write_outputs:
            cmd.append("--fetch=" + name)
            continue
        p = os.path.join(workdir, "%s.fetch%d.pb" % (tag, i))
        outs.append(p)
        cmd.append("--fetch=%s=%s" % (name, p))
    if grad_y:
        cmd.append("--grad_y=" + grad_y)
        cmd += ["--grad_x=" + x for x in grad_xs]
        if grad_dy:
            cmd.append("--grad_dy=" + grad_dy)
    if init:
        cmd.append("--init=" + init)
    if train:
        cmd += ["--train=" + train, "--steps=%d" % steps]
    counts_path = os.path.join(workdir, tag + ".op_counts.txt")
    if train and op_counts is not None:
        cmd.append("--op_counts=" + counts_path)
    if iters:
        cmd += ["--iters=%d" % iters, "--warmup=%d" % warmup]
        if max_seconds:
            cmd.append("--max_seconds=%g" % max_seconds)
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise RuntimeError("run_graphdef failed for %s: %s" % (tag, proc.stderr.strip()[-2000:]))
    timing = None
    m = re.search(r"timing: iters=(\d+) mean_us=([\d.]+) min_us=([\d.]+) median_us=([\d.]+)", proc.stdout)
    if m:
        timing = {"mean_us": float(m.group(2)), "min_us": float(m.group(3)), "median_us": float(m.group(4))}
    if train and op_counts is not None:
        with open(counts_path) as f:
            for line in f:
                op, count = line.split()
                op_counts[op] = int(count)
    return [read_tensor(p) for p in outs], timing


def rel_error(got, want):
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    if got.shape != want.shape:
        return float("inf")
    if want.size == 0:
        return 0.0
    scale = max(np.max(np.abs(want)), 1e-30)
    return float(np.max(np.abs(got - want)) / scale)


def freeze(sess, graph, output_names):
    """The graph with every variable replaced by a Const holding its value."""
    gd = graph.as_graph_def()
    return tf1.graph_util.convert_variables_to_constants(sess, gd, output_names)


# ---------------------------------------------------------------- models

def glorot(rng, shape, fan_in, fan_out):
    limit = np.sqrt(6.0 / (fan_in + fan_out))
    return rng.uniform(-limit, limit, size=shape).astype(np.float32)


def build_mlp(rng, batch):
    """Returns (x placeholder, labels placeholder, logits, probs, weights list)."""
    x = tf1.placeholder(tf.float32, [batch, 784], name="x")
    labels = tf1.placeholder(tf.float32, [batch, 10], name="labels")
    h = x
    weights = []
    sizes = [784, 512, 512, 10]
    for i in range(3):
        w = tf1.Variable(glorot(rng, [sizes[i], sizes[i + 1]], sizes[i], sizes[i + 1]), name="w%d" % i)
        b = tf1.Variable(rng.uniform(-0.1, 0.1, size=[sizes[i + 1]]).astype(np.float32), name="b%d" % i)
        weights += [w, b]
        h = tf.nn.bias_add(tf.matmul(h, w), b)
        if i < 2:
            h = tf.nn.relu(h)
    logits = tf.identity(h, name="logits")
    probs = tf.nn.softmax(logits, name="probs")
    return x, labels, logits, probs, weights


def build_cnn(rng, batch, data_format="NHWC"):
    """The Fashion-MNIST CNN; with data_format "NCHW" its convolutions, biases
    and pools are written as TensorFlow graphs for GPUs are (Sluice's CPU
    kernels take NHWC: its layout pass converts them)."""
    nchw = data_format == "NCHW"
    x = tf1.placeholder(tf.float32, [batch, 1, 28, 28] if nchw else [batch, 28, 28, 1], name="x")
    labels = tf1.placeholder(tf.float32, [batch, 10], name="labels")
    weights = []

    def var(name, shape, fan_in, fan_out):
        v = tf1.Variable(glorot(rng, shape, fan_in, fan_out), name=name)
        weights.append(v)
        return v

    def bias(name, n):
        v = tf1.Variable(rng.uniform(-0.1, 0.1, size=[n]).astype(np.float32), name=name)
        weights.append(v)
        return v

    fmt = {"data_format": data_format}
    h = tf.nn.conv2d(x, var("conv1/w", [5, 5, 1, 32], 25, 25 * 32), strides=[1, 1, 1, 1], padding="SAME", **fmt)
    h = tf.nn.relu(tf.nn.bias_add(h, bias("conv1/b", 32), **fmt))
    h = tf.nn.max_pool2d(h, ksize=2, strides=2, padding="SAME", **fmt)
    h = tf.nn.conv2d(h, var("conv2/w", [5, 5, 32, 64], 25 * 32, 25 * 64), strides=[1, 1, 1, 1], padding="SAME",
                     **fmt)
    h = tf.nn.relu(tf.nn.bias_add(h, bias("conv2/b", 64), **fmt))
    h = tf.nn.max_pool2d(h, ksize=2, strides=2, padding="SAME", **fmt)
    if nchw:
        h = tf.transpose(h, [0, 2, 3, 1])  # flattened as the NHWC model does: the same function of x
    h = tf.reshape(h, [-1, 7 * 7 * 64])
    h = tf.nn.relu(tf.nn.bias_add(tf.matmul(h, var("fc1/w", [3136, 1024], 3136, 1024)), bias("fc1/b", 1024)))
    h = tf.nn.bias_add(tf.matmul(h, var("fc2/w", [1024, 10], 1024, 10)), bias("fc2/b", 10))
    logits = tf.identity(h, name="logits")
    probs = tf.nn.softmax(logits, name="probs")
    return x, labels, logits, probs, weights


def check_model(name, builder, x_shape, run_graphdef, workdir, batch=8):
    """Exports `builder`'s model; returns a list of (check name, rel error)."""
    rng = np.random.default_rng(1234)
    results = []
    graph = tf.Graph()
    with graph.as_default():
        x, labels, logits, probs, weights = builder(rng, batch)
        loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits), name="loss")
        wrt = [x] + weights
        grads = tf.gradients(loss, wrt)
        grad_names = []
        for i, g in enumerate(grads):
            grad_names.append(tf.identity(g, name="grad_%d" % i).op.name)
        with tf1.Session(graph=graph) as sess:
            sess.run(tf1.global_variables_initializer())
            x_val = rng.standard_normal(size=x_shape).astype(np.float32)
            label_ids = rng.integers(0, 10, size=batch)
            labels_val = np.eye(10, dtype=np.float32)[label_ids]
            feed = {x: x_val, labels: labels_val}
            want_probs, want_logits, want_loss = sess.run([probs, logits, loss], feed)
            want_grads = sess.run([graph.get_tensor_by_name(n + ":0") for n in grad_names], feed)

            # Inference graph: frozen, pruned to the softmax output.
            infer = freeze(sess, graph, ["probs", "logits"])
            got, _ = run_sluice(run_graphdef, workdir, name + "_infer", infer, {"x:0": x_val},
                                ["probs:0", "logits:0"])
            results.append((name + " inference probs", rel_error(got[0], want_probs)))
            results.append((name + " inference logits", rel_error(got[1], want_logits)))

            # TensorFlow's gradient graph, frozen, run by Sluice.
            train = freeze(sess, graph, ["loss"] + grad_names)
            fetches = ["loss:0"] + [n + ":0" for n in grad_names]
            got, _ = run_sluice(run_graphdef, workdir, name + "_tfgrad", train,
                                {"x:0": x_val, "labels:0": labels_val}, fetches)
            results.append((name + " loss", rel_error(got[0], want_loss)))
            wrt_names = ["x"] + [w.op.name for w in weights]
            for i, g in enumerate(want_grads):
                results.append(("%s tf.gradients d loss/d %s" % (name, wrt_names[i]), rel_error(got[1 + i], g)))

            # Sluice's own symbolic gradients of the frozen forward graph. The
            # frozen variables are Consts read through Identity nodes ("w0/read"
            # in TF1 style, or the ReadVariableOp turned Identity).
            fwd = freeze(sess, graph, ["loss"])
            reads = {}
            for node in fwd.node:
                if node.op == "Identity" and node.input and node.input[0] in wrt_names:
                    reads[node.input[0]] = node.name
            xs = ["x:0"] + [reads.get(w, w) + ":0" for w in wrt_names[1:]]
            got, _ = run_sluice(run_graphdef, workdir, name + "_symgrad", fwd,
                                {"x:0": x_val, "labels:0": labels_val},
                                ["@grad:%d" % i for i in range(len(xs))], grad_y="loss:0", grad_xs=xs)
            for i, g in enumerate(want_grads):
                results.append(("%s Sluice gradient d loss/d %s" % (name, wrt_names[i]), rel_error(got[i], g)))
    return results


def check_batch_norm(run_graphdef, workdir):
    """tf.compat.v1.nn.fused_batch_norm (FusedBatchNormV3) in training mode
    (NHWC and NCHW, running averages blended by exponential_avg_factor) and
    inference mode, with tf.gradients (FusedBatchNormGradV3) for x, scale and
    offset: Sluice's outputs against TensorFlow's."""
    rng = np.random.RandomState(5)
    results = []
    for fmt, training in [("NHWC", True), ("NCHW", True), ("NHWC", False)]:
        graph = tf.Graph()
        shape = [2, 3, 4, 5]
        channels = shape[3] if fmt == "NHWC" else shape[1]
        with graph.as_default():
            x = tf1.placeholder(tf.float32, shape, name="x")
            params = [tf.constant(rng.uniform(lo, hi, channels).astype(np.float32))
                      for lo, hi in [(0.5, 2), (-1, 1), (-1, 1), (0.5, 2)]]
            y, mean, var = tf1.nn.fused_batch_norm(
                x, params[0], params[1], mean=params[2], variance=params[3], epsilon=1e-3, data_format=fmt,
                is_training=training, exponential_avg_factor=0.7 if training else 1.0)
            weights = tf.constant(rng.uniform(-1, 1, shape).astype(np.float32))
            grads = tf.gradients(tf.reduce_sum(y * weights), [x, params[0], params[1]])
            fetches = [y, mean, var] + grads
            x_value = rng.uniform(-2, 3, shape).astype(np.float32)
            with tf1.Session(graph=graph) as sess:
                want = sess.run(fetches, {x: x_value})
        tag = "batch_norm_%s_%s" % (fmt, "train" if training else "infer")
        got, _ = run_sluice(run_graphdef, workdir, tag, graph.as_graph_def(), {"x:0": x_value},
                            [t.name for t in fetches])
        for label, g, w in zip(["y", "batch_mean", "batch_variance", "dx", "dscale", "doffset"], got, want):
            results.append(("%s %s" % (tag, label), rel_error(g, w)))
    return results


def check_more_ops(run_graphdef, workdir):
    """Ops TensorFlow programs use beyond the census models (session 48):
    Erf, Lgamma, Digamma, Atan2, Softsign, Cumsum and Cumprod (exclusive,
    reverse), Roll, ReverseSequence, GatherNd, ScatterNd, Where, ListDiff,
    ResizeBilinear and ResizeNearestNeighbor in each pixel rule, Segment{Sum,
    Mean,Max,Min} and UnsortedSegment{Max,Min},
    DepthwiseConv2dNative (SAME and VALID, strides, multipliers), LRN; and the
    tf.gradients TensorFlow builds for them (SoftsignGrad, Polygamma,
    ResizeBilinearGrad, ResizeNearestNeighborGrad, the depthwise backprops...), all run by Sluice
    from TensorFlow's GraphDef: Sluice's outputs against TensorFlow's."""
    rng = np.random.RandomState(11)
    graph = tf.Graph()
    with graph.as_default():
        x = tf1.placeholder(tf.float32, [4, 6], name="x")
        pos = tf1.placeholder(tf.float32, [4, 6], name="pos")
        img = tf1.placeholder(tf.float32, [2, 5, 7, 3], name="img")
        seq = tf1.placeholder(tf.float32, [3, 5, 2], name="seq")
        lengths = tf.constant([5, 2, 0], tf.int64)
        outs = {
            "erf": tf.math.erf(x), "lgamma": tf.math.lgamma(pos), "digamma": tf.math.digamma(pos),
            "atan2": tf.atan2(x, pos - 1.5), "softsign": tf.nn.softsign(x),
            "cumsum": tf.cumsum(x, axis=1), "cumsum_ex_rev": tf.cumsum(x, axis=0, exclusive=True, reverse=True),
            "cumprod": tf.math.cumprod(pos, axis=1, reverse=True),
            "roll": tf.roll(x, shift=[1, -2], axis=[0, 1]),
            "reverse_sequence": tf.reverse_sequence(seq, lengths, seq_axis=1, batch_axis=0),
            "gather_nd": tf.gather_nd(x, [[0, 1], [3, 5], [2, 2]]),
            "gather_nd_rows": tf.gather_nd(seq, [[2], [0]]),
            "scatter_nd": tf.scatter_nd([[1], [3], [1]], x[:3], [5, 6]),
            "segment_sum": tf.math.segment_sum(x, [0, 0, 2, 2]), "segment_mean": tf.math.segment_mean(x, [0, 1, 1, 1]),
            "segment_max": tf.math.segment_max(x, [0, 0, 1, 3]), "segment_min": tf.math.segment_min(x, [1, 1, 1, 2]),
            "unsorted_segment_max": tf.math.unsorted_segment_max(x, [2, -1, 2, 1], 3),
            "unsorted_segment_sum": tf.math.unsorted_segment_sum(x, [1, -1, 0, 1], 2),
            "unsorted_segment_min": tf.math.unsorted_segment_min(seq, [[1, 0, 1, 1, 2], [0, 0, 2, 1, 2], [2, 1, 0, 0, 1]], 3),
            "where": tf.where(x > 0.5), "setdiff": tf1.setdiff1d(tf.constant([4, 1, 7, 1, 3]), tf.constant([1, 3]))[0],
        }
        for align, half in [(False, False), (True, False), (False, True)]:
            for size in [(9, 4), (3, 10)]:
                tag = "%dx%d%s%s" % (size[0], size[1], "_align" if align else "", "_half" if half else "")
                outs["bilinear_" + tag] = tf1.image.resize_bilinear(img, size, align_corners=align,
                                                                    half_pixel_centers=half)
                outs["nearest_" + tag] = tf1.image.resize_nearest_neighbor(img, size, align_corners=align,
                                                                           half_pixel_centers=half)
        outs["lrn"] = tf.nn.lrn(img, depth_radius=1, bias=1.5, alpha=0.3, beta=0.75)
        outs["lrn_default"] = tf.nn.lrn(img)
        kernels = []
        for padding, stride, mult in [("SAME", 1, 2), ("VALID", 2, 1), ("SAME", 2, 3)]:
            kernel = tf.constant(rng.uniform(-1, 1, [3, 3, 3, mult]).astype(np.float32))
            kernels.append(kernel)
            outs["depthwise_%s_%d_%d" % (padding, stride, mult)] = tf.nn.depthwise_conv2d(
                img, kernel, [1, stride, stride, 1], padding)
        differentiable = [k for k in outs if k not in ("where", "setdiff")]
        def weighted(t):  # random weights where the shape is static (segment ops' rows are not): sum(w t) or sum(t^2)
            if t.shape.is_fully_defined():
                return tf.reduce_sum(t * tf.constant(rng.uniform(-1, 1, t.shape.as_list()).astype(np.float32)))
            return tf.reduce_sum(t * t)
        loss = tf.add_n([weighted(outs[k]) for k in differentiable])
        grads = tf.gradients(loss, [x, pos, img, seq] + kernels)
        names = list(outs) + ["d_x", "d_pos", "d_img", "d_seq"] + ["d_depthwise_filter%d" % i for i in range(3)]
        fetches = list(outs.values()) + grads
        feeds = {x: rng.uniform(-2, 2, [4, 6]).astype(np.float32),
                 pos: rng.uniform(0.5, 3, [4, 6]).astype(np.float32),
                 img: rng.uniform(0, 1, [2, 5, 7, 3]).astype(np.float32),
                 seq: rng.uniform(-1, 1, [3, 5, 2]).astype(np.float32)}
        with tf1.Session(graph=graph) as sess:
            want = sess.run(fetches, feeds)
    got, _ = run_sluice(run_graphdef, workdir, "more_ops", graph.as_graph_def(),
                        {t.name: v for t, v in feeds.items()}, [t.name for t in fetches])
    return [("more_ops %s" % name, rel_error(g, w)) for name, g, w in zip(names, got, want)]


# ---------------------------------------------------------------- training parity

TRAIN_STEPS = 20
TRAIN_RTOL = 1e-4


def build_logreg(rng, optimizer):
    """Logistic regression 20 -> 5 on resource variables; returns (feeds, train_op)."""
    x = tf1.placeholder(tf.float32, [16, 20], name="x")
    labels = tf1.placeholder(tf.float32, [16, 5], name="labels")
    w = tf1.get_variable("w", initializer=(0.1 * rng.standard_normal((20, 5))).astype(np.float32),
                         use_resource=True)
    b = tf1.get_variable("b", initializer=np.zeros(5, np.float32), use_resource=True)
    logits = tf.matmul(x, w) + b
    loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits), name="loss")
    train = optimizer.minimize(loss, name="train")
    feeds = {x: rng.standard_normal((16, 20)).astype(np.float32),
             labels: np.eye(5, dtype=np.float32)[rng.integers(0, 5, size=16)]}
    return feeds, train


def build_embedding(rng, optimizer):
    """Embedding 50 x 8 (gathered, so its gradient is sparse) + dense 8 -> 3."""
    ids = tf1.placeholder(tf.int32, [12], name="ids")
    labels = tf1.placeholder(tf.float32, [12, 3], name="labels")
    emb = tf1.get_variable("emb", initializer=rng.standard_normal((50, 8)).astype(np.float32), use_resource=True)
    w = tf1.get_variable("w", initializer=(0.3 * rng.standard_normal((8, 3))).astype(np.float32), use_resource=True)
    h = tf.nn.embedding_lookup(emb, ids)
    logits = tf.matmul(h, w)
    loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits), name="loss")
    train = optimizer.minimize(loss, name="train")
    feeds = {ids: rng.integers(0, 50, size=12).astype(np.int32),  # repeats: duplicate rows
             labels: np.eye(3, dtype=np.float32)[rng.integers(0, 3, size=12)]}
    return feeds, train


def check_training(name, builder, make_optimizer, run_graphdef, workdir):
    """Trains `builder`'s model TRAIN_STEPS steps in TensorFlow and in Sluice;
    returns [(check name, rel error)] per variable (and slot)."""
    rng = np.random.default_rng(77)
    graph = tf.Graph()
    with graph.as_default():
        feeds, train = builder(rng, make_optimizer())
        init = tf1.global_variables_initializer()
        variables = tf1.global_variables()  # model variables and optimizer slots
        reads = [tf.identity(v.read_value(), name="final_%d" % i) for i, v in enumerate(variables)]
        ops = sorted({n.op for n in graph.as_graph_def().node})
        with tf1.Session(graph=graph) as sess:
            sess.run(init)
            for _ in range(TRAIN_STEPS):
                sess.run(train, feeds)
            want = sess.run(reads)
        got, _ = run_sluice(run_graphdef, workdir, name, graph.as_graph_def(),
                            {t.name: v for t, v in feeds.items()}, [r.name for r in reads],
                            init=init.name, train=train.name, steps=TRAIN_STEPS)
    print("     %s uses %s" % (name, " ".join(ops)))
    return [("%s after %d steps: %s" % (name, TRAIN_STEPS, v.op.name), rel_error(g, w_))
            for v, g, w_ in zip(variables, got, want)]


TRAINING_CASES = [
    ("logreg_sgd", build_logreg, lambda: tf1.train.GradientDescentOptimizer(0.5)),
    ("logreg_adam", build_logreg, lambda: tf1.train.AdamOptimizer(0.05)),
    ("embedding_momentum", build_embedding, lambda: tf1.train.MomentumOptimizer(0.2, 0.9)),
    ("logreg_adagrad", build_logreg, lambda: tf1.train.AdagradOptimizer(0.5)),
    ("embedding_adagrad", build_embedding, lambda: tf1.train.AdagradOptimizer(0.3)),
    ("logreg_rmsprop", build_logreg, lambda: tf1.train.RMSPropOptimizer(0.02, decay=0.9, momentum=0.5)),
    ("logreg_ftrl", build_logreg, lambda: tf1.train.FtrlOptimizer(0.3, l1_regularization_strength=0.001,
                                                                  l2_regularization_strength=0.01)),
    ("embedding_ftrl", build_embedding, lambda: tf1.train.FtrlOptimizer(0.3, l1_regularization_strength=0.01)),
    # l2_shrinkage makes these FtrlV2; lr_power -0.6 takes the pow path.
    ("logreg_ftrl_v2", build_logreg, lambda: tf1.train.FtrlOptimizer(
        0.3, learning_rate_power=-0.6, l1_regularization_strength=0.001, l2_regularization_strength=0.01,
        l2_shrinkage_regularization_strength=0.02)),
    ("embedding_ftrl_v2", build_embedding, lambda: tf1.train.FtrlOptimizer(
        0.3, learning_rate_power=-0.6, l1_regularization_strength=0.01, l2_shrinkage_regularization_strength=0.02)),
]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run_graphdef", required=True)
    parser.add_argument("--workdir", default=None)
    args = parser.parse_args()
    tf1.disable_eager_execution()
    workdir = args.workdir or tempfile.mkdtemp(prefix="tf_interop.")
    os.makedirs(workdir, exist_ok=True)
    print("TensorFlow %s; files in %s" % (tf.__version__, workdir))
    failed = 0
    models = [("mlp", build_mlp, [8, 784]), ("cnn", build_cnn, [8, 28, 28, 1]),
              ("cnn_nchw", lambda rng, batch: build_cnn(rng, batch, "NCHW"), [8, 1, 28, 28])]
    for name, builder, shape in models:
        try:
            results = check_model(name, builder, shape, args.run_graphdef, workdir)
        except Exception as e:  # a rejected graph is a failed check, reported in full
            print("FAIL %s: %s" % (name, e))
            failed += 1
            continue
        for check, err in results:
            ok = err <= RTOL
            failed += 0 if ok else 1
            print("%s %-50s rel_err=%.2e" % ("ok  " if ok else "FAIL", check, err))
    for check, err in check_batch_norm(args.run_graphdef, workdir) + check_more_ops(args.run_graphdef, workdir):
        ok = err <= RTOL
        failed += 0 if ok else 1
        print("%s %-50s rel_err=%.2e" % ("ok  " if ok else "FAIL", check, err))
    for name, builder, make_optimizer in TRAINING_CASES:
        try:
            results = check_training(name, builder, make_optimizer, args.run_graphdef, workdir)
        except Exception as e:
            print("FAIL %s: %s" % (name, e))
            failed += 1
            continue
        worst = max(err for _, err in results)
        for check, err in results:
            ok = err <= TRAIN_RTOL
            failed += 0 if ok else 1
            print("%s %-50s rel_err=%.2e" % ("ok  " if ok else "FAIL", check, err))
        print("     %s worst rel_err=%.2e" % (name, worst))
    print("%d failed" % failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
