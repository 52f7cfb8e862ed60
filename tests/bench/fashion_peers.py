"""Shared pieces of the peer scripts in tests/bench (parity_vs_peers, train_vs_peers).

What is here: the Debian Fashion-MNIST IDX files read with gzip + numpy; the MLP and
CNN of configs/fashion_mlp.pbtxt and configs/fashion_cnn.pbtxt written in TensorFlow
(tf.compat.v1 graph mode) and in PyTorch; Sluice's `train` run as a subprocess with
its progress and eval lines parsed. The peers come from the benchmark virtualenv
(tools/peers.sh): `ensure_peers_python()` re-executes the calling script under it.
"""
import gzip
import math
import os
import re
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# $SLUICE_FASHION_DIR: where the IDX files are on a machine without Debian's package (a GPU bundle).
DATA = os.environ.get("SLUICE_FASHION_DIR", "/usr/share/datasets/fashion-mnist")


def _train_bin():
    """$SLUICE_TRAIN, else the optimized build's binary (bazel-out/k8-opt, the
    .bazelrc default): bazel-bin follows whichever configuration was built last
    (a dbg or asan build elsewhere in the tree would make it slow or missing)."""
    if os.environ.get("SLUICE_TRAIN"):
        return os.environ["SLUICE_TRAIN"]
    opt = os.path.join(REPO, "bazel-out/k8-opt/bin/cmd/train/train")
    return opt if os.access(opt, os.X_OK) else os.path.join(REPO, "bazel-bin/cmd/train/train")


TRAIN_BIN = _train_bin()


def ensure_peers_python():
    """Re-executes the running script under the peers' python (SLUICE_PEERS_PYTHON or
    <repo>/.venv/bin/python) unless it already is that python."""
    if os.environ.get("_SLUICE_PEERS_REEXEC"):
        return
    py = os.environ.get("SLUICE_PEERS_PYTHON") or os.path.join(REPO, ".venv/bin/python")
    if not os.access(py, os.X_OK) or os.path.abspath(sys.executable) == os.path.abspath(py):
        return
    os.environ["_SLUICE_PEERS_REEXEC"] = "1"
    script = os.path.abspath(sys.argv[0])
    os.execv(py, [py, script] + sys.argv[1:])


def require_peers(script, modules):
    """Exits with status 2 and a line that says how to install them when the running python
    cannot import one of `modules` (checked without importing them; a peer child that
    fails on its import would otherwise end the run with a traceback from deep inside)."""
    import importlib.util
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        print("%s: %s not installed for %s: run `bash tools/peers.sh%s`" % (
            script, " and ".join(missing), sys.executable, " --with-torch" if "torch" in missing else ""),
            file=sys.stderr)
        sys.exit(2)


# ---------------------------------------------------------------- data

def read_idx(path):
    import numpy as np
    with gzip.open(path, "rb") as f:
        raw = f.read()
    magic = int.from_bytes(raw[0:4], "big")
    if magic >> 8 != 0x08:  # unsigned byte data
        raise ValueError("%s: unexpected IDX type 0x%x" % (path, magic))
    ndim = magic & 0xFF
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    data = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim)
    return data.reshape(dims)


def load_fashion():
    """(train_x, train_y, test_x, test_y): images float32 [n, 28, 28, 1] in [0, 1]
    (scale_to_unit, as the configs), labels int64 [n]."""
    import numpy as np
    out = []
    for split in ("train", "t10k"):
        x = read_idx(os.path.join(DATA, "%s-images-idx3-ubyte.gz" % split))
        y = read_idx(os.path.join(DATA, "%s-labels-idx1-ubyte.gz" % split))
        out.append((x.reshape(-1, 28, 28, 1).astype(np.float32) / np.float32(255.0)))
        out.append(y.astype(np.int64))
    return tuple(out)


class Batches:
    """Endless shuffled minibatches: a new permutation each epoch, batches run across
    epoch boundaries (as Sluice's shuffle queue hands them out)."""

    def __init__(self, n, batch, seed):
        import numpy as np
        self.n, self.batch = n, batch
        self.rng = np.random.RandomState(seed)
        self.order = self.rng.permutation(n)
        self.pos = 0

    def next(self):
        import numpy as np
        idx = []
        need = self.batch
        while need > 0:
            take = min(need, self.n - self.pos)
            idx.append(self.order[self.pos:self.pos + take])
            self.pos += take
            need -= take
            if self.pos == self.n:
                self.order = self.rng.permutation(self.n)
                self.pos = 0
        return np.concatenate(idx)


def decayed_lr(base, step, decay_steps, decay_rate, staircase=False):
    """models/schedule.cc's exponential decay at 0-based step `step`."""
    p = step / float(max(1, decay_steps))
    if staircase:
        p = math.floor(p)
    return base * decay_rate ** p


# ---------------------------------------------------------------- TensorFlow (graph mode)

def tf_session_config(threads):
    import tensorflow as tf
    return tf.compat.v1.ConfigProto(intra_op_parallelism_threads=threads,
                                    inter_op_parallelism_threads=threads)


def tf_mlp(tf, x, hidden=(512, 512), classes=10, zero_logits=False):
    init = tf.compat.v1.glorot_uniform_initializer()
    h = tf.reshape(x, [-1, 28 * 28])
    n_in = 28 * 28
    for i, units in enumerate(list(hidden) + [classes]):
        last = i == len(hidden)
        w = tf.compat.v1.get_variable("fc%d/kernel" % i, [n_in, units],
                                      initializer=tf.compat.v1.zeros_initializer() if last and zero_logits else init)
        b = tf.compat.v1.get_variable("fc%d/bias" % i, [units], initializer=tf.compat.v1.zeros_initializer())
        h = tf.nn.bias_add(tf.matmul(h, w), b)  # BiasAdd, the op TensorFlow's Dense layer emits
        if i < len(hidden):
            h = tf.nn.relu(h)
        n_in = units
    return h


def tf_cnn(tf, x, training):
    init = tf.compat.v1.glorot_uniform_initializer()
    zeros = tf.compat.v1.zeros_initializer()
    h = x
    c_in = 1
    for i, filters in enumerate((32, 64)):
        w = tf.compat.v1.get_variable("conv%d/kernel" % i, [5, 5, c_in, filters], initializer=init)
        b = tf.compat.v1.get_variable("conv%d/bias" % i, [filters], initializer=zeros)
        h = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(h, w, [1, 1, 1, 1], "SAME"), b))
        h = tf.nn.max_pool2d(h, 2, 2, "VALID")
        c_in = filters
    h = tf.reshape(h, [-1, 7 * 7 * 64])
    w = tf.compat.v1.get_variable("fc1/kernel", [7 * 7 * 64, 1024], initializer=init)
    b = tf.compat.v1.get_variable("fc1/bias", [1024], initializer=zeros)
    h = tf.nn.relu(tf.nn.bias_add(tf.matmul(h, w), b))
    if training:
        h = tf.nn.dropout(h, rate=0.4)
    w = tf.compat.v1.get_variable("logits/kernel", [1024, 10], initializer=init)
    b = tf.compat.v1.get_variable("logits/bias", [10], initializer=zeros)
    return tf.nn.bias_add(tf.matmul(h, w), b)


# configs/fashion_resnet.pbtxt's layers: (name, input(s), kind, filters). A conv has no
# bias; "bn" is batch normalization with its activation (relu or none); "add" sums two
# layers and applies a ReLU.
RESNET = [
    ("stem", "image", "conv", 32), ("stem_bn", "stem", "bn_relu", 0),
    ("b1_conv1", "stem_bn", "conv", 32), ("b1_bn1", "b1_conv1", "bn_relu", 0),
    ("b1_conv2", "b1_bn1", "conv", 32), ("b1_bn2", "b1_conv2", "bn", 0),
    ("b1", ("stem_bn", "b1_bn2"), "add", 0), ("pool1", "b1", "pool", 0),
    ("widen", "pool1", "conv", 64), ("widen_bn", "widen", "bn_relu", 0),
    ("b2_conv1", "widen_bn", "conv", 64), ("b2_bn1", "b2_conv1", "bn_relu", 0),
    ("b2_conv2", "b2_bn1", "conv", 64), ("b2_bn2", "b2_conv2", "bn", 0),
    ("b2", ("widen_bn", "b2_bn2"), "add", 0), ("pool2", "b2", "pool", 0),
]
RESNET_MOMENTUM, RESNET_EPSILON = 0.9, 1e-3


def tf_resnet(tf, x):
    """configs/fashion_resnet.pbtxt in TensorFlow 1 graph ops, training mode: each batch
    normalization a FusedBatchNormV3 (tf.compat.v1.nn.fused_batch_norm) whose moving mean and
    variance are updated by assign ops collected in UPDATE_OPS (run them with the train op)."""
    init = tf.compat.v1.glorot_uniform_initializer()
    out = {"image": x}
    channels = {"image": 1}
    for name, src, kind, filters in RESNET:
        if kind == "conv":
            w = tf.compat.v1.get_variable(name + "/kernel", [3, 3, channels[src], filters], initializer=init)
            out[name], channels[name] = tf.nn.conv2d(out[src], w, [1, 1, 1, 1], "SAME"), filters
        elif kind.startswith("bn"):
            c = channels[src]
            gamma = tf.compat.v1.get_variable(name + "/gamma", [c], initializer=tf.compat.v1.ones_initializer())
            beta = tf.compat.v1.get_variable(name + "/beta", [c], initializer=tf.compat.v1.zeros_initializer())
            mean = tf.compat.v1.get_variable(name + "/moving_mean", [c], trainable=False,
                                             initializer=tf.compat.v1.zeros_initializer())
            var = tf.compat.v1.get_variable(name + "/moving_variance", [c], trainable=False,
                                            initializer=tf.compat.v1.ones_initializer())
            y, batch_mean, batch_var = tf.compat.v1.nn.fused_batch_norm(out[src], gamma, beta,
                                                                        epsilon=RESNET_EPSILON, is_training=True)
            for moving, batch in ((mean, batch_mean), (var, batch_var)):
                tf.compat.v1.add_to_collection(tf.compat.v1.GraphKeys.UPDATE_OPS, tf.compat.v1.assign_sub(
                    moving, (moving - batch) * (1 - RESNET_MOMENTUM)))
            out[name], channels[name] = (tf.nn.relu(y) if kind == "bn_relu" else y), c
        elif kind == "add":
            out[name], channels[name] = tf.nn.relu(out[src[0]] + out[src[1]]), channels[src[0]]
        else:
            out[name], channels[name] = tf.nn.max_pool2d(out[src], 2, 2, "VALID"), channels[src]
    h = tf.reduce_mean(out["pool2"], axis=[1, 2])  # the 7x7 average pool, flattened
    w = tf.compat.v1.get_variable("logits/kernel", [64, 10], initializer=init)
    b = tf.compat.v1.get_variable("logits/bias", [10], initializer=tf.compat.v1.zeros_initializer())
    return tf.nn.bias_add(tf.matmul(h, w), b)


# ---------------------------------------------------------------- PyTorch

def torch_mlp(torch, hidden=(512, 512), classes=10, zero_logits=False):
    nn = torch.nn
    layers = [nn.Flatten()]
    n_in = 28 * 28
    for units in hidden:
        layers += [nn.Linear(n_in, units), nn.ReLU()]
        n_in = units
    layers.append(nn.Linear(n_in, classes))
    model = nn.Sequential(*layers)
    glorot_zero(torch, model)
    if zero_logits:
        torch.nn.init.zeros_(layers[-1].weight)
    return model


def torch_cnn(torch):
    nn = torch.nn
    model = nn.Sequential(
        nn.Conv2d(1, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(7 * 7 * 64, 1024), nn.ReLU(), nn.Dropout(0.4), nn.Linear(1024, 10))
    glorot_zero(torch, model)
    return model


def torch_resnet(torch):
    """configs/fashion_resnet.pbtxt as a torch.nn.Module (NCHW input); BatchNorm2d with
    PyTorch's momentum 1 - RESNET_MOMENTUM."""
    nn = torch.nn

    class ResNet(nn.Module):
        def __init__(self):
            super().__init__()
            channels = {"image": 1}
            self.layers = nn.ModuleDict()
            for name, src, kind, filters in RESNET:
                if kind == "conv":
                    self.layers[name] = nn.Conv2d(channels[src], filters, 3, padding=1, bias=False)
                    channels[name] = filters
                elif kind.startswith("bn"):
                    self.layers[name] = nn.BatchNorm2d(channels[src], eps=RESNET_EPSILON,
                                                       momentum=1 - RESNET_MOMENTUM)
                    channels[name] = channels[src]
                else:
                    channels[name] = channels[src if kind == "pool" else src[0]]
            self.logits = nn.Linear(64, 10)

        def forward(self, x):
            out = {"image": x}
            for name, src, kind, _ in RESNET:
                if kind == "conv":
                    out[name] = self.layers[name](out[src])
                elif kind.startswith("bn"):
                    y = self.layers[name](out[src])
                    out[name] = torch.relu(y) if kind == "bn_relu" else y
                elif kind == "add":
                    out[name] = torch.relu(out[src[0]] + out[src[1]])
                else:
                    out[name] = torch.nn.functional.max_pool2d(out[src], 2)
            return self.logits(out["pool2"].mean(dim=(2, 3)))

    model = ResNet()
    glorot_zero(torch, model)
    return model


def glorot_zero(torch, model):
    """Glorot-uniform kernels, zero biases (Sluice's defaults; PyTorch's own default
    is Kaiming-uniform)."""
    for m in model.modules():
        if isinstance(m, (torch.nn.Linear, torch.nn.Conv2d)):
            torch.nn.init.xavier_uniform_(m.weight)
            if m.bias is not None:  # the resnet's convolutions have none
                torch.nn.init.zeros_(m.bias)


# ---------------------------------------------------------------- Sluice

PROGRESS = re.compile(r"^step (\d+)/(\d+)\b.*?\bloss (\S+)(?:.*?([\d,]+) ex/s)?")
EVAL = re.compile(r"eval at step (\d+): loss (\S+) accuracy (\S+)")


def run_sluice(config, run_dir, sets=(), env=None, prefix=(), echo=False, timeout=None):
    """Runs `train config --run_dir run_dir --set ...` and returns (rc, lines, seconds)."""
    cmd = list(prefix) + [TRAIN_BIN, config, "--run_dir", run_dir]
    for s in sets:
        cmd += ["--set", s]
    start = time.time()
    p = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    lines = []
    for line in p.stdout:
        line = line.rstrip("\n")
        lines.append(line)
        if echo:
            print("    | " + line, flush=True)
    rc = p.wait(timeout=timeout)
    return rc, lines, time.time() - start


def parse_progress(lines):
    """[(step, loss, examples_per_second)] from the plain (non-tty) progress lines."""
    out = []
    for line in lines:
        m = PROGRESS.search(line)
        if m:
            rate = float(m.group(4).replace(",", "")) if m.group(4) else 0.0
            out.append((int(m.group(1)), float(m.group(3)), rate))
    return out


def parse_evals(lines):
    """[(step, loss, accuracy)] from the "eval at step N: ..." lines."""
    return [(int(m.group(1)), float(m.group(2)), float(m.group(3))) for m in map(EVAL.search, lines) if m]
