"""Loads a Sluice run directory with TensorBoard's own EventAccumulator (PyPI tensorboard) and
checks that TensorBoard finds the scalars, histograms, images and graph `train` wrote.
Usage: python tensorboard_load.py RUN_DIR STEP [STEP...]   (the summary steps expected)
Prints what it found; exits 1 with a message on the first missing piece."""
import sys

from tensorboard.backend.event_processing import event_accumulator as ea


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def main():
    run_dir = sys.argv[1]
    steps = [int(s) for s in sys.argv[2:]]
    acc = ea.EventAccumulator(run_dir, size_guidance={ea.SCALARS: 0, ea.HISTOGRAMS: 0, ea.IMAGES: 0,
                                                      ea.GRAPH: 0, ea.COMPRESSED_HISTOGRAMS: 0})
    acc.Reload()
    tags = acc.Tags()
    print("tags:", tags)
    for tag in ["train/loss", "train/learning_rate", "train/accuracy", "train/examples_per_second"]:
        if tag not in tags["scalars"]:
            fail("scalar %s missing; scalars: %s" % (tag, tags["scalars"]))
    loss = acc.Scalars("train/loss")
    if [e.step for e in loss] != steps:
        fail("train/loss at steps %s, want %s" % ([e.step for e in loss], steps))
    for e in loss:
        if not (0 < e.value < 10):
            fail("train/loss %f at step %d" % (e.value, e.step))
    print("train/loss:", [(e.step, round(e.value, 4)) for e in loss])

    for tag, num in [("fc1/kernel", 784 * 512), ("fc1/kernel/gradient", 784 * 512), ("fc1/bias", 512)]:
        if tag not in tags["histograms"]:
            fail("histogram %s missing; histograms: %s" % (tag, tags["histograms"]))
        events = acc.Histograms(tag)
        if [e.step for e in events] != steps:
            fail("%s at steps %s" % (tag, [e.step for e in events]))
        h = events[-1].histogram_value
        if h.num != num or sum(h.bucket) != num or len(h.bucket) != len(h.bucket_limit):
            fail("%s: num %s, bucket sum %s, %d buckets, %d limits" % (tag, h.num, sum(h.bucket), len(h.bucket),
                                                                      len(h.bucket_limit)))
        if list(h.bucket_limit) != sorted(h.bucket_limit) or h.min > h.max:
            fail("%s: limits not increasing or min > max" % tag)
        # TensorBoard's distributions dashboard compresses the same data.
        if not acc.CompressedHistograms(tag):
            fail("no compressed histogram for " + tag)
        print("%s: num %d, %d buckets, min %.4f max %.4f" % (tag, h.num, len(h.bucket), h.min, h.max))

    images = [t for t in tags["images"] if t.startswith("input/image")]
    if not images:
        fail("no input images; images: %s" % tags["images"])
    for tag in images:
        im = acc.Images(tag)[-1]
        if (im.width, im.height) != (28, 28) or not im.encoded_image_string.startswith(b"\x89PNG"):
            fail("%s: %dx%d, %d bytes" % (tag, im.width, im.height, len(im.encoded_image_string)))
    print("images:", images)

    if not tags["graph"]:
        fail("no graph")
    graph = acc.Graph()  # parses the bytes as TensorFlow's GraphDef
    ops = {n.name: n.op for n in graph.node}
    if ops.get("fc1/kernel") != "VariableV2" or "summaries/merged" not in ops:
        fail("the graph lacks fc1/kernel or summaries/merged")
    print("graph: %d nodes" % len(graph.node))
    # TensorFlow's own graph import accepts it (name scopes draw as groups in TensorBoard).
    try:
        import tensorflow as tf  # noqa: PLC0415
        with tf.Graph().as_default():
            tf.compat.v1.import_graph_def(tf.compat.v1.GraphDef.FromString(graph.SerializeToString()), name="")
        print("tensorflow import_graph_def: ok")
    except ImportError:
        pass
    except Exception as e:  # an op TensorFlow lacks (ours are TF's, so this should not happen)
        print("note: tensorflow import_graph_def: %s" % str(e).splitlines()[0])
    print("PASS")


if __name__ == "__main__":
    main()
