"""TensorFlow V2 checkpoints (tensor bundles) move both ways between TensorFlow and Sluice.

1. tf.compat.v1.train.Saver saves variables with fashion_mlp's names and shapes;
   Sluice's RestoreV2 (a TensorFlow-built GraphDef run by run_graphdef) reads them
   bit for bit, `ckpt verify` accepts the bundle, and `train configs/fashion_mlp.pbtxt`
   warm-starts from the prefix (learning rate 1e-30, so the weights it trains for a
   few steps stay the TensorFlow values exactly; its final checkpoint is compared).
2. `ckpt convert` turns that Sluice run's checkpoint into a bundle that
   tf.train.load_checkpoint and tf.compat.v1.train.Saver.restore read with
   the same values; a TensorFlow-built SaveV2 GraphDef run in Sluice writes a
   bundle TensorFlow restores.

Usage: python tf_checkpoint.py --run_graphdef=PATH --ckpt=PATH --train=PATH --config=PATH --workdir=DIR
"""
import argparse
import os
import subprocess
import sys

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402

tf1 = tf.compat.v1
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tf_models import run, run_sluice  # noqa: E402

# fashion_mlp.pbtxt: flat -> fc1 (512) -> fc2 (512) -> logits (10).
SHAPES = {
    "fc1/kernel": (784, 512), "fc1/bias": (512,),
    "fc2/kernel": (512, 512), "fc2/bias": (512,),
    "logits/kernel": (512, 10), "logits/bias": (10,),
}


def check_equal(what, got, want):
    got, want = np.asarray(got), np.asarray(want)
    if want.dtype.kind == "S":  # TensorFlow returns strings as an object array of bytes
        if got.shape != want.shape or [bytes(x) for x in got.ravel()] != list(want.ravel()):
            raise AssertionError("%s: got %r, want %r" % (what, got, want))
        return
    if got.dtype != want.dtype or got.shape != want.shape or not np.array_equal(got, want):
        raise AssertionError("%s: got %s %s, want %s %s (max diff %s)" % (
            what, got.dtype, got.shape, want.dtype, want.shape,
            np.max(np.abs(got.astype(np.float64) - want.astype(np.float64))) if got.shape == want.shape else "-"))


def tf_dtype(value):
    value = np.asarray(value)
    return tf.string if value.dtype.kind == "S" else tf.as_dtype(value.dtype)


def tf_save(prefix, values):
    """tf.compat.v1.train.Saver on variables holding `values`."""
    graph = tf.Graph()
    with graph.as_default():
        variables = [tf1.Variable(v, name=n) for n, v in values.items()]
        saver = tf1.train.Saver(var_list={v.op.name: v for v in variables})
        with tf1.Session(graph=graph) as sess:
            sess.run(tf1.global_variables_initializer())
            saver.save(sess, prefix, write_meta_graph=False, write_state=False)


def tf_restore(prefix, like):
    """tf.compat.v1.train.Saver.restore into fresh variables shaped like `like`."""
    graph = tf.Graph()
    with graph.as_default():
        variables = {n: tf1.Variable(tf1.zeros(v.shape, dtype=v.dtype), name=n) for n, v in like.items()}
        saver = tf1.train.Saver(var_list={n: v for n, v in variables.items()})
        with tf1.Session(graph=graph) as sess:
            saver.restore(sess, prefix)
            return sess.run(variables)


def main():
    parser = argparse.ArgumentParser()
    for flag in ("run_graphdef", "ckpt", "train", "config", "workdir"):
        parser.add_argument("--" + flag, required=True)
    args = parser.parse_args()
    work = args.workdir
    os.makedirs(work, exist_ok=True)
    tf1.disable_eager_execution()
    rng = np.random.default_rng(21)
    values = {n: rng.normal(0.0, 0.05, s).astype(np.float32) for n, s in SHAPES.items()}
    extra = {"step": np.int64(1234), "tags": np.array([b"fc1", b"", b"\x00\xff"]), "flags": np.array([True, False]),
             "table": np.arange(6, dtype=np.int32).reshape(2, 3), "precise": np.array([1e-300, 2.5])}

    # 1a. TensorFlow writes; Sluice's RestoreV2 reads bit for bit.
    tf_prefix = os.path.join(work, "tf", "model.ckpt")
    tf_save(tf_prefix, dict(values, **extra))
    names = sorted(values) + sorted(extra)
    want = dict(values, **extra)
    graph = tf.Graph()
    with graph.as_default():
        tf1.raw_ops.RestoreV2(prefix=tf_prefix, tensor_names=names, shape_and_slices=[""] * len(names),
                              dtypes=[tf_dtype(want[n]) for n in names], name="restore")
    got, _ = run_sluice(args.run_graphdef, work, "restore_v2", graph.as_graph_def(), {},
                        ["restore:%d" % i for i in range(len(names))])
    for n, g in zip(names, got):
        check_equal("RestoreV2 in Sluice of TensorFlow's " + n, g, np.asarray(want[n]))
    print("ok   RestoreV2 in Sluice reads %d tensors TensorFlow's Saver wrote, bit for bit" % len(names))
    out = run([args.ckpt, "verify", tf_prefix])
    assert out.startswith("OK"), out
    out = run([args.ckpt, "list", tf_prefix])
    assert "fc1/kernel" in out and "[784,512]" in out, out
    print("ok   ckpt verify/list accept TensorFlow's bundle")

    # 1b. train warm-starts from the TensorFlow prefix.
    run_dir = os.path.join(work, "run")
    out = run([args.train, args.config, "--run_dir", run_dir, "--set", "train.steps=3",
               "--set", "train.eval_every_steps=0", "--set", "optimizer.momentum.learning_rate=1e-30",
               "--set", "checkpoint.warm_start.from=" + tf_prefix])
    assert "warm-started 6 variables from " + tf_prefix in out, out
    # 2a. Its final checkpoint, converted to a bundle, holds TensorFlow's values.
    back = os.path.join(work, "back", "model.ckpt")
    out = run([args.ckpt, "convert", run_dir, back])
    assert "TensorFlow checkpoint " + back in out, out
    reader = tf.train.load_checkpoint(back)
    for n, v in values.items():
        check_equal("tf.train.load_checkpoint of the warm-started run's " + n, reader.get_tensor(n), v)
    restored = tf_restore(back, values)
    for n, v in values.items():
        check_equal("Saver.restore of the warm-started run's " + n, restored[n], v)
    print("ok   train warm-starts fashion_mlp from TensorFlow's checkpoint; ckpt convert of its checkpoint "
          "restores in TensorFlow with the same values")

    # 2b. Sluice's SaveV2, in a TensorFlow-built GraphDef, writes what TensorFlow restores.
    sluice_prefix = os.path.join(work, "sluice_savev2", "model.ckpt")
    graph = tf.Graph()
    with graph.as_default():
        consts = [tf1.constant(want[n], name="c%d" % i) for i, n in enumerate(names)]
        save = tf1.raw_ops.SaveV2(prefix=sluice_prefix, tensor_names=names, shape_and_slices=[""] * len(names),
                                  tensors=consts, name="save")
        with tf1.control_dependencies([save]):
            tf1.identity(tf1.constant(sluice_prefix), name="saved")  # run_graphdef needs a fetch
    run_sluice(args.run_graphdef, work, "save_v2", graph.as_graph_def(), {}, ["saved"])
    reader = tf.train.load_checkpoint(sluice_prefix)
    shapes = reader.get_variable_to_shape_map()
    assert sorted(shapes) == sorted(names), sorted(shapes)
    for n in names:
        check_equal("tf.train.load_checkpoint of Sluice's SaveV2 " + n, reader.get_tensor(n), np.asarray(want[n]))
    restored = tf_restore(sluice_prefix, {n: np.asarray(want[n]) for n in names if np.asarray(want[n]).dtype.kind != "S"})
    for n, v in restored.items():
        check_equal("Saver.restore of Sluice's SaveV2 " + n, v, np.asarray(want[n]))
    print("ok   SaveV2 run in Sluice writes a bundle TensorFlow reads (load_checkpoint, Saver.restore)")

    # Damage TensorFlow's bundle: Sluice reports the file, TensorFlow agrees it is corrupt.
    data = tf_prefix + ".data-00000-of-00001"
    with open(data, "r+b") as f:
        f.seek(100)
        byte = f.read(1)
        f.seek(100)
        f.write(bytes([byte[0] ^ 0xff]))
    proc = subprocess.run([args.ckpt, "verify", tf_prefix], capture_output=True, text=True)
    assert proc.returncode == 1 and data in proc.stdout and "CRC32C mismatch" in proc.stdout, proc.stdout
    print("ok   a flipped byte in TensorFlow's data file is reported with the file name")
    print("PASS")


if __name__ == "__main__":
    main()
