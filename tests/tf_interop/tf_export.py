"""A model trained by Sluice, exported with `train CONFIG --export`, runs in TensorFlow.

For each model (fashion_mlp, fashion_cnn, fashion_lstm with its in-graph while loop,
fashion_resnet with batch normalization and residual sums, fashion_resnet_augmented whose
augment layer the export leaves out, and fashion_sampled_softmax with its output weights in
two parts): `train` runs a few steps and
its final evaluation over the 10,000 test images; `train --export` writes the frozen
inference graph; TensorFlow (graph mode) imports that GraphDef as it is and runs it on the
same 10,000 images. Checked:
  - TensorFlow's accuracy and mean cross-entropy over the test set equal what Sluice's own
    evaluation wrote to eval.txt (accuracy within 2 of 10,000 examples, for near-ties that
    summation order can flip; loss within 2e-4);
  - Sluice running the same file (run_graphdef) gives TensorFlow's logits within 1e-5 of
    their scale, and the exported probabilities and classes are the softmax and argmax;
  - the summary printed by --export names the input and outputs with their shapes.

And text_lstm (word ids in, logits per position out): TensorFlow runs its export on random
ids to Sluice's logits within 1e-5, and its 10,000-word vocabulary is written beside it.

Each model is also exported as a SavedModel (--export DIR): tf.saved_model.load runs its
serving_default signature, and TensorFlow 1's SavedModel loader its graph, to the GraphDef's
logits within 1e-5; text_lstm's vocabulary is its assets/vocab.txt.

Usage: python tf_export.py --train=PATH --run_graphdef=PATH --configs=DIR --workdir=DIR
"""
import argparse
import gzip
import os
import re
import sys

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402

tf1 = tf.compat.v1
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tf_models import rel_error, run, run_sluice  # noqa: E402

DATA = "/usr/share/datasets/fashion-mnist"

# (config, train steps, the exported logits, the summary's line for them)
MODELS = [
    ("fashion_mlp", 60, "outputs/logits", "outputs/logits:0  float [?,10]"),
    ("fashion_cnn", 30, "outputs/logits", "outputs/logits:0  float [?,10]"),
    ("fashion_lstm", 30, "outputs/logits", "outputs/logits:0  float [?,10]"),
    # Residual blocks and batch normalization: TensorFlow's FusedBatchNormV3 in inference
    # mode on the moving statistics, AddN for the residual sums.
    ("fashion_resnet", 30, "outputs/logits", "outputs/logits:0  float [?,10]"),
    # An augment layer: training flips and shifts, the export takes plain images.
    ("fashion_resnet_augmented", 30, "outputs/logits", "outputs/logits:0  float [?,10]"),
    ("fashion_sampled_softmax", 60, "outputs/sampled_softmax/logits",
     "outputs/sampled_softmax/logits:0  float [?,10]"),
]


# Settings a short run needs besides train.steps: the shipped warmup is longer than it.
SHORT_RUN_SETS = {name: ["--set", "optimizer.schedule.warmup_cosine.warmup_steps=10"]
                  for name in ("fashion_resnet", "fashion_resnet_augmented")}


def read_idx(name, header):
    with gzip.open(os.path.join(DATA, name), "rb") as f:
        return np.frombuffer(f.read(), dtype=np.uint8, offset=header)


def last_eval(run_dir):
    """{name: value} of the last line of eval.txt."""
    with open(os.path.join(run_dir, "eval.txt")) as f:
        line = f.read().strip().splitlines()[-1]
    m = re.match(r"eval at step \d+: (.*) \(([\d,]+) examples\)$", line)
    if not m:
        raise RuntimeError("unexpected eval line: " + line)
    parts = m.group(1).split()
    return dict((parts[i], float(parts[i + 1])) for i in range(0, len(parts), 2)), int(m.group(2).replace(",", ""))


def tf_run(graph_pb, fetches, feed, feed_name="image"):
    graph_def = tf1.GraphDef()
    with open(graph_pb, "rb") as f:
        graph_def.ParseFromString(f.read())
    graph = tf.Graph()
    with graph.as_default():
        tf1.import_graph_def(graph_def, name="")
    with tf1.Session(graph=graph) as sess:
        return sess.run([f + ":0" for f in fetches], {feed_name + ":0": feed})


def check_saved_model(args, name, config, common, feed_name, feed, logits_name, tf_logits):
    """Exports `name` as a SavedModel and runs it in TensorFlow 2 (tf.saved_model.load, its
    serving_default signature) and through TensorFlow 1's loader: the logits are the GraphDef's.
    Returns the SavedModel's directory."""
    export_dir = os.path.join(args.workdir, name + "_savedmodel")
    summary = run([args.train, config] + common + ["--export", export_dir])
    key = logits_name[len("outputs/"):].replace("/", "_")
    for expected in ("to %s (a SavedModel: tag 'serve', signature 'serving_default')" % export_dir,
                     "key '%s'" % feed_name, "key '%s'" % key):
        if expected not in summary:
            raise RuntimeError("%s: the SavedModel export's summary lacks '%s':\n%s" % (name, expected, summary))
    signature = tf.saved_model.load(export_dir).signatures["serving_default"]
    outputs = signature(**{feed_name: tf.constant(feed)})
    if set(outputs) != {key, key + "_probabilities", key + "_classes"}:
        raise RuntimeError("%s: the signature's outputs are %s" % (name, sorted(outputs)))
    err2 = rel_error(outputs[key].numpy(), tf_logits)
    classes = outputs[key + "_classes"].numpy()
    if err2 > 1e-5 or not np.array_equal(classes, np.argmax(outputs[key].numpy(), axis=-1)):
        raise RuntimeError("%s: tf.saved_model.load's logits differ from the GraphDef's by %.3g of their scale, "
                           "or its classes are not their argmax" % (name, err2))
    with tf1.Session(graph=tf.Graph()) as sess:
        tf1.saved_model.loader.load(sess, ["serve"], export_dir)
        logits1 = sess.run(logits_name + ":0", {feed_name + ":0": feed})
    err1 = rel_error(logits1, tf_logits)
    if err1 > 1e-5:
        raise RuntimeError("%s: TensorFlow 1's SavedModel loader gives logits %.3g of their scale off" % (name, err1))
    print("ok   %s: its SavedModel runs in tf.saved_model.load (signature outputs %s) and TensorFlow 1's loader, "
          "logits within %.2g and %.2g of the GraphDef's" % (name, ", ".join(sorted(outputs)), err2, err1))
    return export_dir


def compare_sluice(args, name, graph_pb, feeds, logits_name, tf_logits):
    """(the GraphDef, max error over scale) of Sluice's run of the exported file against TensorFlow's logits."""
    graph_def = tf1.GraphDef()
    with open(graph_pb, "rb") as f:
        graph_def.ParseFromString(f.read())
    (sluice_logits,), _ = run_sluice(args.run_graphdef, args.workdir, name + "_sluice", graph_def, feeds, [logits_name])
    err = rel_error(sluice_logits, tf_logits)
    if err > 1e-5:
        raise RuntimeError("%s: Sluice's and TensorFlow's logits differ by %.3g of their scale" % (name, err))
    return graph_def, err


def check(name, steps, logits_name, summary_line, args, images, labels):
    run_dir = os.path.join(args.workdir, name)
    config = os.path.join(args.configs, name + ".pbtxt")
    common = ["--run_dir", run_dir, "--set", "devices.intra_op_threads=1", "--set", "devices.inter_op_threads=1"]
    common += SHORT_RUN_SETS.get(name, [])
    run([args.train, config] + common + ["--set", "train.steps=%d" % steps, "--set", "train.eval_every_steps=0",
                                         "--set", "summaries.every_steps=0"])
    want, examples = last_eval(run_dir)
    if examples != len(labels):
        raise RuntimeError("%s: Sluice evaluated %d examples, the test set has %d" % (name, examples, len(labels)))
    graph_pb = os.path.join(args.workdir, name + ".pb")
    summary = run([args.train, config] + common + ["--export", graph_pb])
    for expected in ("input   image:0  float [?,28,28,1]", summary_line, "exported step %d " % steps):
        if expected not in summary:
            raise RuntimeError("%s: the export's summary lacks '%s':\n%s" % (name, expected, summary))

    probabilities_name, classes_name = logits_name + "/probabilities", logits_name + "/classes"
    logits, probabilities, classes = tf_run(graph_pb, [logits_name, probabilities_name, classes_name], images)
    accuracy = float(np.mean(classes == labels))
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_softmax = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    loss = float(-np.mean(log_softmax[np.arange(len(labels)), labels]))
    if "accuracy" in want and abs(accuracy - want["accuracy"]) * len(labels) > 2.5:
        raise RuntimeError("%s: TensorFlow's accuracy %.4f, Sluice's evaluation %.4f" % (name, accuracy, want["accuracy"]))
    if abs(loss - want["loss"]) > 2e-4:
        raise RuntimeError("%s: TensorFlow's loss %.6f, Sluice's evaluation %.4f" % (name, loss, want["loss"]))
    if not np.array_equal(classes, np.argmax(logits, axis=1)):
        raise RuntimeError("%s: the exported classes are not the logits' argmax" % name)
    if rel_error(probabilities, np.exp(log_softmax)) > 1e-5:
        raise RuntimeError("%s: the exported probabilities are not the logits' softmax" % name)

    graph_def, err = compare_sluice(args, name, graph_pb, {"image": images}, logits_name, logits)
    check_saved_model(args, name, config, common, "image", images, logits_name, logits)
    ops = sorted(set(n.op for n in graph_def.node))
    print("ok   %s: %d steps, exported %d nodes (%s); TensorFlow: accuracy %.4f loss %.4f, Sluice's eval %s; "
          "logits within %.2g" % (name, steps, len(graph_def.node), " ".join(ops), accuracy, loss,
                                  " ".join("%s %.4f" % kv for kv in sorted(want.items())), err))


def check_text(args):
    """text_lstm: word ids in, per-position logits out, and the vocabulary beside the graph."""
    name = "text_lstm"
    run_dir = os.path.join(args.workdir, name)
    config = os.path.join(args.configs, name + ".pbtxt")
    common = ["--run_dir", run_dir, "--set", "devices.intra_op_threads=1", "--set", "devices.inter_op_threads=1"]
    run([args.train, config] + common + ["--set", "train.steps=3", "--set", "train.eval_every_steps=0",
                                         "--set", "summaries.every_steps=0"])
    graph_pb = os.path.join(args.workdir, name + ".pb")
    summary = run([args.train, config] + common + ["--export", graph_pb])
    for expected in ("input   tokens:0  int64 [?,35]", "outputs/sampled_softmax/logits:0  float [?,35,10000]",
                     "vocabulary  %s.vocab.txt  (10000 words" % graph_pb):
        if expected not in summary:
            raise RuntimeError("%s: the export's summary lacks '%s':\n%s" % (name, expected, summary))
    with open(graph_pb + ".vocab.txt") as f:
        words = f.read().split("\n")
    if len(words) != 10001 or words[:2] != ["<unk>", "<eos>"] or words[-1] != "" or len(set(words)) != 10001:
        raise RuntimeError("%s: the vocabulary file is not 10,000 distinct words from <unk> and <eos>" % name)
    tokens = np.random.default_rng(5).integers(0, 10000, size=(3, 35)).astype(np.int64)
    logits_name = "outputs/sampled_softmax/logits"
    logits, classes = tf_run(graph_pb, [logits_name, logits_name + "/classes"], tokens, "tokens")
    if logits.shape != (3, 35, 10000) or not np.array_equal(classes, np.argmax(logits, axis=2)):
        raise RuntimeError("%s: TensorFlow's logits %s and classes do not fit" % (name, logits.shape))
    graph_def, err = compare_sluice(args, name, graph_pb, {"tokens": tokens}, logits_name, logits)
    export_dir = check_saved_model(args, name, config, common, "tokens", tokens, logits_name, logits)
    with open(os.path.join(export_dir, "assets", "vocab.txt")) as f:
        if f.read().split("\n") != words:
            raise RuntimeError("%s: the SavedModel's assets/vocab.txt is not the vocabulary" % name)
    print("ok   %s: exported %d nodes with its 10,000-word vocabulary; TensorFlow runs it on word ids, "
          "logits [3,35,10000] within %.2g of Sluice's" % (name, len(graph_def.node), err))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--train", required=True)
    p.add_argument("--run_graphdef", required=True)
    p.add_argument("--configs", required=True)
    p.add_argument("--workdir", required=True)
    p.add_argument("--models", default=",".join([m[0] for m in MODELS] + ["text_lstm"]))
    args = p.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    # As the input pipeline scales them (ImageToFloat: pixel times the float 1/255).
    images = read_idx("t10k-images-idx3-ubyte.gz", 16).reshape(-1, 28, 28, 1).astype(np.float32) * np.float32(1 / 255)
    labels = read_idx("t10k-labels-idx1-ubyte.gz", 8).astype(np.int64)
    wanted = args.models.split(",")
    for name, steps, logits_name, summary_line in MODELS:
        if name in wanted:
            check(name, steps, logits_name, summary_line, args, images, labels)
    if "text_lstm" in wanted:
        check_text(args)


if __name__ == "__main__":
    main()
