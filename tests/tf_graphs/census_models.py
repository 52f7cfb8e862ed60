"""The census models of issue 21: ordinary TensorFlow 1.x training graphs, built the
way a user of TensorFlow 2.21 builds them in graph mode (tf.compat.v1 with eager
execution off, so variables are resource variables), each with its initializer,
its train op and a Saver. Nothing here depends on Sluice.

Each builder adds one model family to the default graph, its train op named
"train" (census_parity.py runs it); `op_types(graph)` lists
the op types its GraphDef uses (functions inlined by TensorFlow's graph-mode
builders are not used: every op here is a node of the top-level GraphDef).

Usage: python census_models.py --out=FILE.json [--graphdefs=DIR]
  FILE.json: {"model": ["OpType", ...], ...}; with --graphdefs, each model's
  GraphDef is also written to DIR/<model>.pb.
"""

import argparse
import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402

tf1 = tf.compat.v1

BATCH = 8


def dense(x, units, name, activation=None):
    with tf1.variable_scope(name):
        w = tf1.get_variable("w", [x.shape[-1], units], initializer=tf1.glorot_uniform_initializer())
        b = tf1.get_variable("b", [units], initializer=tf1.zeros_initializer())
        y = tf.nn.bias_add(tf.matmul(x, w), b)
        return activation(y) if activation is not None else y


def finish(loss, optimizer, var_list=None):
    """Train op with a global step, the initializer and a Saver."""
    global_step = tf1.train.get_or_create_global_step()
    train = optimizer.minimize(loss, global_step=global_step, var_list=var_list, name="train")
    tf1.global_variables_initializer()
    tf1.local_variables_initializer()
    tf1.train.Saver()
    return train


def mlp_momentum():
    """MLP 784-256-10, dropout, momentum with exponential LR decay."""
    x = tf1.placeholder(tf.float32, [None, 784], name="image")
    y = tf1.placeholder(tf.int64, [None], name="label")
    h = dense(x, 256, "fc1", tf.nn.relu)
    h = tf1.nn.dropout(h, rate=0.2)
    logits = dense(h, 10, "logits")
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    step = tf1.train.get_or_create_global_step()
    lr = tf1.train.exponential_decay(0.05, step, 1000, 0.9, staircase=True)
    finish(loss, tf1.train.MomentumOptimizer(lr, 0.9))


def resnet_bn(data_format="NHWC"):
    """Conv + fused batch norm residual block, pooling, Adam; with "NCHW", written
    as for a GPU (NCHW convolutions, batch norms and pools, which Sluice's
    layout pass runs on its NHWC kernels), transposed to NHWC before the flatten
    so that both variants are one function of the same values. (Flattened in
    NCHW order instead, TensorFlow's default oneDNN kernels part from Sluice
    after about 5 steps, 3.7e-3 after 20, in the stem's one-input-channel
    convolution, and part as much from themselves: the same function written
    in NHWC gives 3.4e-3 between TensorFlow's two graphs. TensorFlow's Eigen
    kernels (TF_ENABLE_ONEDNN_OPTS=0, NHWC only) agree with Sluice's NCHW graph
    within 4.6e-6, and Sluice's two graphs are bit-identical. 2026-12-05, TF
    2.21; docs/RELIABILITY.md, session 44.)"""
    nchw = data_format == "NCHW"
    x = tf1.placeholder(tf.float32, [BATCH, 1, 28, 28] if nchw else [BATCH, 28, 28, 1], name="image")
    y = tf1.placeholder(tf.int32, [BATCH], name="label")
    fmt = {"data_format": data_format}

    def conv_bn(inp, channels, name, relu=True):
        with tf1.variable_scope(name):
            k = tf1.get_variable("k", [3, 3, inp.shape[1 if nchw else -1], channels])
            scale = tf1.get_variable("scale", [channels], initializer=tf1.ones_initializer())
            offset = tf1.get_variable("offset", [channels], initializer=tf1.zeros_initializer())
            c = tf.nn.conv2d(inp, k, strides=1, padding="SAME", **fmt)
            c, _, _ = tf1.nn.fused_batch_norm(c, scale, offset, is_training=True, **fmt)
            return tf.nn.relu(c) if relu else c

    h = conv_bn(x, 16, "stem")
    r = conv_bn(conv_bn(h, 16, "block_a"), 16, "block_b", relu=False)
    h = tf.nn.relu(h + r)
    h = tf.nn.max_pool2d(h, 2, 2, "VALID", **fmt)
    h = tf.nn.avg_pool2d(h, 2, 2, "VALID", **fmt)
    if nchw:
        h = tf.transpose(h, [0, 2, 3, 1])  # flattened as the NHWC model: one function of the same values
    h = tf.reshape(h, [BATCH, -1])
    logits = dense(h, 10, "logits")
    loss = tf1.losses.sparse_softmax_cross_entropy(y, logits)
    finish(loss, tf1.train.AdamOptimizer(1e-3))


def lstm_lm():
    """Word LSTM language model: partitioned embedding, a while_loop over time
    with TensorArrays (what dynamic_rnn builds), sampled softmax, clipping."""
    vocab, dim, steps = 1000, 32, 12
    ids = tf1.placeholder(tf.int64, [BATCH, steps], name="ids")
    targets = tf1.placeholder(tf.int64, [BATCH, steps], name="targets")
    emb = tf1.get_variable("embedding", [vocab, dim], partitioner=tf1.fixed_size_partitioner(2))
    inputs = tf.nn.embedding_lookup(emb, ids)  # [B, T, D]
    kernel = tf1.get_variable("lstm/kernel", [2 * dim, 4 * dim])
    bias = tf1.get_variable("lstm/bias", [4 * dim], initializer=tf1.zeros_initializer())
    xs = tf.TensorArray(tf.float32, size=steps).unstack(tf.transpose(inputs, [1, 0, 2]))
    hs = tf.TensorArray(tf.float32, size=steps)

    def cell(t, c, h, out):
        gates = tf.nn.bias_add(tf.matmul(tf.concat([xs.read(t), h], 1), kernel), bias)
        i, j, f, o = tf.split(gates, 4, axis=1)
        c = tf.sigmoid(f + 1.0) * c + tf.sigmoid(i) * tf.tanh(j)
        h = tf.sigmoid(o) * tf.tanh(c)
        return t + 1, c, h, out.write(t, h)

    zeros = tf.zeros([BATCH, dim])
    _, _, _, hs = tf1.while_loop(lambda t, *_: t < steps, cell, [tf.constant(0), zeros, zeros, hs])
    outputs = tf.reshape(tf.transpose(hs.stack(), [1, 0, 2]), [-1, dim])
    softmax_w = tf1.get_variable("softmax/w", [vocab, dim])
    softmax_b = tf1.get_variable("softmax/b", [vocab], initializer=tf1.zeros_initializer())
    loss = tf.reduce_mean(tf.nn.sampled_softmax_loss(
        softmax_w, softmax_b, tf.reshape(targets, [-1, 1]), outputs, num_sampled=64, num_classes=vocab))
    tf.exp(loss, name="perplexity")
    optimizer = tf1.train.GradientDescentOptimizer(1.0)
    grads, variables = zip(*optimizer.compute_gradients(loss))
    grads, _ = tf.clip_by_global_norm(grads, 5.0)
    step = tf1.train.get_or_create_global_step()
    optimizer.apply_gradients(zip(grads, variables), global_step=step, name="train")
    tf1.global_variables_initializer()
    tf1.train.Saver()


def attention():
    """A transformer block: layer norm, multi-head attention with a causal mask,
    GELU feed-forward, residuals, Adam with a warm-up schedule."""
    seq, dim, heads = 16, 32, 4
    x = tf1.placeholder(tf.float32, [BATCH, seq, dim], name="x")
    target = tf1.placeholder(tf.float32, [BATCH, seq, dim], name="target")

    def layer_norm(v, name):
        with tf1.variable_scope(name):
            g = tf1.get_variable("g", [dim], initializer=tf1.ones_initializer())
            b = tf1.get_variable("b", [dim], initializer=tf1.zeros_initializer())
            mean, var = tf.nn.moments(v, axes=[-1], keepdims=True)
            return (v - mean) * tf.math.rsqrt(var + 1e-5) * g + b

    def split_heads(v):
        return tf.transpose(tf.reshape(v, [BATCH, seq, heads, dim // heads]), [0, 2, 1, 3])

    h = layer_norm(x, "ln1")
    w_qkv = tf1.get_variable("qkv", [dim, 3 * dim])
    q, k, v = tf.split(tf.einsum("bsd,de->bse", h, w_qkv), 3, axis=-1)
    q, k, v = split_heads(q), split_heads(k), split_heads(v)
    scores = tf.matmul(q, k, transpose_b=True) / tf.sqrt(float(dim // heads))
    mask = tf.linalg.band_part(tf.ones([seq, seq]), -1, 0)
    scores = tf.where(mask > 0, scores, tf.fill(tf.shape(scores), -1e9))
    context = tf.matmul(tf.nn.softmax(scores), v)
    context = tf.reshape(tf.transpose(context, [0, 2, 1, 3]), [BATCH, seq, dim])
    w_out = tf1.get_variable("out", [dim, dim])
    x = x + tf.tensordot(context, w_out, axes=1)
    h = layer_norm(x, "ln2")
    w1 = tf1.get_variable("ff1", [dim, 4 * dim])
    w2 = tf1.get_variable("ff2", [4 * dim, dim])
    x = x + tf.tensordot(tf.nn.gelu(tf.tensordot(h, w1, axes=1)), w2, axes=1)
    loss = tf.reduce_mean(tf.math.squared_difference(x, target))
    step = tf1.train.get_or_create_global_step()
    warmup = tf.minimum(1.0, tf.cast(step + 1, tf.float32) / 100.0)
    finish(loss, tf1.train.AdamOptimizer(1e-3 * warmup))


def wide_deep():
    """Wide (sparse linear, FTRL) and deep (embedding bag + MLP, Adagrad) parts."""
    buckets, dim = 500, 8
    sparse_ids = tf1.sparse_placeholder(tf.int64, name="ids")
    dense_x = tf1.placeholder(tf.float32, [None, 4], name="dense")
    label = tf1.placeholder(tf.float32, [None, 1], name="label")
    with tf1.variable_scope("wide"):
        wide_w = tf1.get_variable("w", [buckets, 1], initializer=tf1.zeros_initializer())
        wide = tf.nn.embedding_lookup_sparse(wide_w, sparse_ids, None, combiner="sum")
    with tf1.variable_scope("deep"):
        emb = tf1.get_variable("emb", [buckets, dim])
        bag = tf.nn.embedding_lookup_sparse(emb, sparse_ids, None, combiner="mean")
        h = dense(tf.concat([bag, dense_x], 1), 16, "fc1", tf.nn.relu)
        deep = dense(h, 1, "fc2")
    logits = wide + deep
    loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=label, logits=logits))
    tf1.metrics.auc(label, tf.sigmoid(logits))
    wide_vars = tf1.get_collection(tf1.GraphKeys.TRAINABLE_VARIABLES, "wide")
    deep_vars = tf1.get_collection(tf1.GraphKeys.TRAINABLE_VARIABLES, "deep")
    step = tf1.train.get_or_create_global_step()
    train_wide = tf1.train.FtrlOptimizer(0.1, l1_regularization_strength=0.01).minimize(loss, var_list=wide_vars)
    train_deep = tf1.train.AdagradOptimizer(0.05).minimize(loss, var_list=deep_vars, global_step=step)
    tf.group(train_wide, train_deep, name="train")
    tf1.global_variables_initializer()
    tf1.local_variables_initializer()
    tf1.train.Saver()


def sgd_clipping():
    """Linear regression with L2 regularization, gradient clipping by value and
    by norm, plain SGD with a piecewise-constant schedule."""
    x = tf1.placeholder(tf.float32, [None, 13], name="x")
    y = tf1.placeholder(tf.float32, [None, 1], name="y")
    pred = dense(x, 1, "linear")
    loss = tf1.losses.mean_squared_error(y, pred) + 1e-4 * tf.add_n(
        [tf.nn.l2_loss(v) for v in tf1.trainable_variables()])
    step = tf1.train.get_or_create_global_step()
    lr = tf1.train.piecewise_constant(step, [100, 200], [0.1, 0.01, 0.001])
    optimizer = tf1.train.GradientDescentOptimizer(lr)
    grads_and_vars = [(tf.clip_by_norm(tf.clip_by_value(g, -1.0, 1.0), 0.5), v)
                      for g, v in optimizer.compute_gradients(loss)]
    optimizer.apply_gradients(grads_and_vars, global_step=step, name="train")
    tf1.global_variables_initializer()
    tf1.train.Saver()


def augment_metrics():
    """Images augmented in the graph (random flips, crops, brightness,
    standardization), a small CNN, streaming accuracy and mean, RMSProp."""
    images = tf1.placeholder(tf.uint8, [BATCH, 32, 32, 3], name="images")
    labels = tf1.placeholder(tf.int64, [BATCH], name="labels")
    x = tf.image.convert_image_dtype(images, tf.float32)
    x = tf.image.random_flip_left_right(x)
    x = tf1.image.random_crop(x, [BATCH, 28, 28, 3])
    x = tf.image.random_brightness(x, 0.2)
    x = tf.map_fn(tf.image.per_image_standardization, x)
    k = tf1.get_variable("conv/k", [5, 5, 3, 8])
    h = tf.nn.relu(tf.nn.conv2d(x, k, 2, "SAME"))
    h = tf.reduce_mean(h, axis=[1, 2])
    logits = dense(h, 10, "logits")
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
    tf1.metrics.accuracy(labels, tf.argmax(logits, 1))
    tf1.metrics.mean(loss)
    tf1.summary.scalar("loss", loss)
    tf1.summary.histogram("logits", logits)
    tf1.summary.merge_all()
    finish(loss, tf1.train.RMSPropOptimizer(1e-3, momentum=0.9))


def gan():
    """A GAN on vectors: generator and discriminator MLPs with leaky ReLU,
    sigmoid cross-entropy losses, two Adam optimizers over disjoint variables."""
    z = tf1.random_normal([BATCH, 16], name="z")
    real = tf1.placeholder(tf.float32, [BATCH, 64], name="real")
    with tf1.variable_scope("generator"):
        fake = tf.tanh(dense(dense(z, 32, "fc1", tf.nn.leaky_relu), 64, "fc2"))

    def discriminator(v):
        with tf1.variable_scope("discriminator", reuse=tf1.AUTO_REUSE):
            return dense(dense(v, 32, "fc1", tf.nn.leaky_relu), 1, "fc2")

    d_real, d_fake = discriminator(real), discriminator(fake)
    xent = tf.nn.sigmoid_cross_entropy_with_logits
    d_loss = tf.reduce_mean(xent(labels=tf.ones_like(d_real), logits=d_real) +
                            xent(labels=tf.zeros_like(d_fake), logits=d_fake))
    g_loss = tf.reduce_mean(xent(labels=tf.ones_like(d_fake), logits=d_fake))
    d_vars = tf1.get_collection(tf1.GraphKeys.TRAINABLE_VARIABLES, "discriminator")
    g_vars = tf1.get_collection(tf1.GraphKeys.TRAINABLE_VARIABLES, "generator")
    step = tf1.train.get_or_create_global_step()
    train_d = tf1.train.AdamOptimizer(2e-4, beta1=0.5).minimize(d_loss, var_list=d_vars)
    with tf.control_dependencies([train_d]):
        tf1.train.AdamOptimizer(2e-4, beta1=0.5).minimize(g_loss, var_list=g_vars, global_step=step, name="train")
    tf1.global_variables_initializer()
    tf1.train.Saver()


def seq2seq():
    """A GRU encoder (while_loop) whose final state starts a greedy decoder loop
    with an argmax feedback and a data-dependent stop (tf.cond inside)."""
    vocab, dim, steps = 200, 16, 10
    src = tf1.placeholder(tf.int32, [BATCH, steps], name="src")
    tgt = tf1.placeholder(tf.int32, [BATCH, steps], name="tgt")
    emb = tf1.get_variable("emb", [vocab, dim])
    w = tf1.get_variable("gru/w", [2 * dim, 3 * dim])
    out_w = tf1.get_variable("out/w", [dim, vocab])

    def gru(x, h):
        zr_c = tf.matmul(tf.concat([x, h], 1), w)
        z, r, c = tf.split(zr_c, 3, axis=1)
        z, r = tf.sigmoid(z), tf.sigmoid(r)
        return z * h + (1 - z) * tf.tanh(c * r)

    src_emb = tf.gather(emb, src)
    _, h = tf1.while_loop(lambda t, h: t < steps, lambda t, h: (t + 1, gru(src_emb[:, t], h)),
                          [tf.constant(0), tf.zeros([BATCH, dim])])
    logits_ta = tf.TensorArray(tf.float32, size=steps)

    def decode(t, h, prev, ta):
        inp = tf.cond(t > 0, lambda: tf.gather(emb, prev), lambda: tf.zeros([BATCH, dim]))
        h = gru(inp, h)
        logits = tf.matmul(h, out_w)
        return t + 1, h, tf.cast(tf.argmax(logits, 1), tf.int32), ta.write(t, logits)

    _, _, _, logits_ta = tf1.while_loop(lambda t, *_: t < steps, decode,
                                        [tf.constant(0), h, tf.zeros([BATCH], tf.int32), logits_ta])
    logits = tf.transpose(logits_ta.stack(), [1, 0, 2])
    loss = tf1.losses.sparse_softmax_cross_entropy(tgt, logits)
    finish(loss, tf1.train.AdamOptimizer(1e-3))


MODELS = {
    "mlp_momentum": mlp_momentum,
    "resnet_bn": resnet_bn,
    "resnet_bn_nchw": lambda: resnet_bn("NCHW"),
    "lstm_lm": lstm_lm,
    "attention": attention,
    "wide_deep": wide_deep,
    "sgd_clipping": sgd_clipping,
    "augment_metrics": augment_metrics,
    "gan": gan,
    "seq2seq": seq2seq,
}


def build(name):
    graph = tf.Graph()
    with graph.as_default():
        tf1.set_random_seed(1)
        MODELS[name]()
    return graph


def op_types(graph):
    graph_def = graph.as_graph_def()
    if graph_def.library.function:
        names = [f.signature.name for f in graph_def.library.function]
        raise ValueError(f"the GraphDef has functions ({', '.join(names)}): the census counts top-level nodes only")
    return sorted({node.op for node in graph_def.node})


def main():
    # Graph mode as a TensorFlow 1.x program runs in TensorFlow 2: resource
    # variables (TF2's default), loops and conds as v1 control flow (frames:
    # Enter/Exit/NextIteration, TensorArrayV3 and stacks for loop gradients).
    tf1.disable_eager_execution()
    tf1.disable_control_flow_v2()
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--graphdefs")
    args = parser.parse_args()
    census = {}
    for name in MODELS:
        graph = build(name)
        census[name] = op_types(graph)
        if args.graphdefs:
            os.makedirs(args.graphdefs, exist_ok=True)
            with open(os.path.join(args.graphdefs, name + ".pb"), "wb") as f:
                f.write(graph.as_graph_def().SerializeToString())
    with open(args.out, "w") as f:
        json.dump(census, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
