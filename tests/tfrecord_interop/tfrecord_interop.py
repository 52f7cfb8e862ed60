# TensorFlow's side of the TFRecord / tf.train.Example interop test
# (tfrecord_interop_test.sh runs it with SLUICE_PEERS_PYTHON). It drives Sluice's
# example_records and cmd/records binaries as subprocesses and checks, with
# TensorFlow's own writer, reader and parser (tensorflow-cpu from PyPI):
#   1. the spec Examples (built independently here and in example_records.cc),
#      written by TensorFlow and by Sluice, dump to the same canonical text on
#      both sides (every feature value, floats bit for bit);
#   2. raw records written by both are the same bytes, and each reads the other's;
#   3. Fashion-MNIST converted by cmd/records reads in TensorFlow (tf.train.Example
#      and tf.io.parse_example) with every image byte and label equal to the IDX
#      files; Fashion-MNIST Examples written by TensorFlow come out of Sluice's
#      in-graph pipeline (TFRecordReader -> ParseExample) equal to the IDX files.
# Usage: tfrecord_interop.py EXAMPLE_RECORDS RECORDS_BIN WORK_DIR
import gzip
import os
import struct
import subprocess
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402

FASHION_DIR = "/usr/share/datasets/fashion-mnist"


def fail(msg):
    print("FAIL: " + msg, flush=True)
    sys.exit(1)


def from_bits(bits):
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def to_bits(v):
    return struct.unpack("<I", struct.pack("<f", v))[0]


def pattern(n, mul, add):
    return bytes((j * mul + add) & 0xFF for j in range(n))


# ---- the spec (keep in step with example_records.cc) ----

def spec_examples():
    out = [tf.train.Example()]  # 0: no features message
    e = tf.train.Example()  # 1: an empty features map
    e.features.SetInParent()
    out.append(e)
    e = tf.train.Example()  # 2: empty lists of every kind, a feature with no kind
    f = e.features.feature
    f["b"].bytes_list.SetInParent()
    f["f"].float_list.SetInParent()
    f["i"].int64_list.SetInParent()
    f.get_or_create("n")
    out.append(e)
    e = tf.train.Example()  # 3: edge values, unusual keys
    f = e.features.feature
    f["bytes"].bytes_list.value.extend([b"", b"\x00", b"\x00\xff\x80 binary", b"hello", "été".encode()])
    f["floats"].float_list.value.extend(from_bits(b) for b in [
        0x00000000, 0x80000000, 0x3FC00000, 0xC0500000, 0x00000001, 0x007FFFFF, 0x7F7FFFFF,
        0xFF7FFFFF, 0x7F800000, 0xFF800000, 0x7FC00000, 0x3EAAAAAB])
    f["ints"].int64_list.value.extend([0, 1, -1, 127, 128, -128, 2147483647, -2147483648,
                                       4294967296, 2**63 - 1, -2**63])
    f["ключ"].bytes_list.value.append(b"value")
    f["key with spaces/and:punct"].int64_list.value.append(42)
    out.append(e)
    e = tf.train.Example()  # 4: long lists (larger than Sluice's 256 KB read buffer)
    f = e.features.feature
    f["blob"].bytes_list.value.append(pattern(300000, 131, 7))
    f["many_floats"].float_list.value.extend(from_bits(0x3F800000 + i * 4099) for i in range(1000))
    f["many_ints"].int64_list.value.extend((-1 if i % 2 else 1) * i * i * 1000003 for i in range(1000))
    out.append(e)
    for i in range(50):  # 5..54: small records like a data set's
        e = tf.train.Example()
        f = e.features.feature
        f["id"].int64_list.value.append(i)
        f["name"].bytes_list.value.append(b"example-%d" % i)
        f["vals"].float_list.value.extend((i + k) * 0.25 for k in range(i % 5 + 1))
        out.append(e)
    return out


def spec_raw():
    return [b"", b"a", bytes(range(255)), pattern(70000, 7, 3), bytes(1000), pattern(300000, 13, 1)]


# ---- canonical dumps (the format is documented in example_records.cc) ----

def dump_example(index, e):
    feats = e.features.feature
    lines = ["record %d features:%d n:%d" % (index, 1 if e.HasField("features") else 0, len(feats))]
    for key in sorted(feats.keys(), key=lambda k: k.encode()):
        f = feats[key]
        kind = f.WhichOneof("kind")
        head = key.encode().hex()
        if kind == "bytes_list":
            vals = list(f.bytes_list.value)
            lines.append(" ".join([head, "bytes", str(len(vals))] + [v.hex() for v in vals]))
        elif kind == "float_list":
            vals = list(f.float_list.value)
            lines.append(" ".join([head, "float", str(len(vals))] + ["%08x" % to_bits(v) for v in vals]))
        elif kind == "int64_list":
            vals = list(f.int64_list.value)
            lines.append(" ".join([head, "int64", str(len(vals))] + [str(v) for v in vals]))
        else:
            lines.append(head + " none")
    return "\n".join(lines) + "\n"


def tf_records(paths):
    """Every record of the files, read by TensorFlow's TFRecordDataset."""
    return [r.numpy() for r in tf.data.TFRecordDataset(paths)]


def tf_dump(paths):
    return "".join(dump_example(i, tf.train.Example.FromString(r)) for i, r in enumerate(tf_records(paths)))


def run(args):
    p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode != 0:
        fail("%s exited %d: %s" % (" ".join(args), p.returncode, p.stderr.decode(errors="replace")))
    return p.stdout.decode()


def first_difference(a, b):
    al, bl = a.splitlines(), b.splitlines()
    for i, (x, y) in enumerate(zip(al, bl)):
        if x != y:
            return "line %d:\n  %s\n  %s" % (i + 1, x[:200], y[:200])
    return "line counts %d vs %d" % (len(al), len(bl))


def expect_same(what, got, want):
    if got != want:
        fail("%s differs from the spec: %s" % (what, first_difference(got, want)))
    print("ok: " + what, flush=True)


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    zero, dtype, ndim = struct.unpack(">HBB", data[:4])
    if zero != 0 or dtype != 0x08:
        fail("%s: not a uint8 IDX file" % path)
    dims = struct.unpack(">%dI" % ndim, data[4:4 + 4 * ndim])
    item = 1
    for d in dims[1:]:
        item *= d
    body = data[4 + 4 * ndim:]
    return [body[i * item:(i + 1) * item] for i in range(dims[0])]


def synthetic_fashion(work):
    """Small IDX files shaped like Fashion-MNIST's, when the data set is not installed."""
    d = os.path.join(work, "fashion")
    os.makedirs(d, exist_ok=True)
    n = 500
    images = pattern(n * 784, 37, 11)
    labels = bytes(i % 10 for i in range(n))
    with gzip.open(os.path.join(d, "t10k-images-idx3-ubyte.gz"), "wb") as f:
        f.write(struct.pack(">HBBIII", 0, 8, 3, n, 28, 28) + images)
    with gzip.open(os.path.join(d, "t10k-labels-idx1-ubyte.gz"), "wb") as f:
        f.write(struct.pack(">HBBI", 0, 8, 1, n) + labels)
    return d


def main():
    if len(sys.argv) != 4:
        fail("usage: tfrecord_interop.py EXAMPLE_RECORDS RECORDS_BIN WORK_DIR")
    tool, records_bin, work = sys.argv[1:]
    os.makedirs(work, exist_ok=True)
    print("TensorFlow %s" % tf.__version__, flush=True)

    # 1. Examples both ways.
    spec = spec_examples()
    want = "".join(dump_example(i, e) for i, e in enumerate(spec))
    tf_file = os.path.join(work, "tf_examples.tfrecord")
    sl_file = os.path.join(work, "sluice_examples.tfrecord")
    with tf.io.TFRecordWriter(tf_file) as w:
        for e in spec:
            w.write(e.SerializeToString())
    run([tool, "write-examples", sl_file])
    expect_same("TensorFlow reads TensorFlow's Examples", tf_dump([tf_file]), want)
    expect_same("TensorFlow reads Sluice's Examples", tf_dump([sl_file]), want)
    expect_same("Sluice reads TensorFlow's Examples", run([tool, "dump", tf_file]), want)
    expect_same("Sluice reads Sluice's Examples", run([tool, "dump", sl_file]), want)
    # Several files in a row, and the one dataset over both.
    expect_same("Sluice reads both files in a row", run([tool, "dump", tf_file, sl_file]),
                want + "".join(dump_example(len(spec) + i, e) for i, e in enumerate(spec)))

    # 2. Raw records: identical bytes.
    raw = spec_raw()
    tf_raw = os.path.join(work, "tf_raw.tfrecord")
    sl_raw = os.path.join(work, "sluice_raw.tfrecord")
    with tf.io.TFRecordWriter(tf_raw) as w:
        for r in raw:
            w.write(r)
    run([tool, "write-raw", sl_raw])
    with open(tf_raw, "rb") as a, open(sl_raw, "rb") as b:
        if a.read() != b.read():
            fail("raw record files differ between TensorFlow and Sluice")
    print("ok: raw record files are byte-identical", flush=True)
    if tf_records([sl_raw]) != raw:
        fail("TensorFlow reads different raw records from Sluice's file")
    want_raw = "".join("%d %s\n" % (len(r), r.hex()) for r in raw)
    expect_same("Sluice reads TensorFlow's raw records", run([tool, "dump-raw", tf_raw]), want_raw)

    # 3. Fashion-MNIST: cmd/records -> TensorFlow, TensorFlow -> Sluice's graph pipeline.
    src = FASHION_DIR
    if not os.path.exists(os.path.join(src, "t10k-images-idx3-ubyte.gz")):
        print("note: %s not installed, using synthetic IDX files" % src, flush=True)
        src = synthetic_fashion(work)
    images = read_idx(os.path.join(src, "t10k-images-idx3-ubyte.gz"))
    labels = [l[0] for l in read_idx(os.path.join(src, "t10k-labels-idx1-ubyte.gz"))]
    n = len(images)
    shards = 3
    out_dir = os.path.join(work, "converted")
    subprocess.run([records_bin, "--input_dir=" + src, "--output_dir=" + out_dir, "--splits=t10k",
                    "--shards=%d" % shards], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seen = 0
    for s in range(shards):
        path = os.path.join(out_dir, "t10k-%05d-of-%05d.tfrecord" % (s, shards))
        recs = tf_records([path])
        idx = list(range(s, n, shards))  # examples are dealt round-robin
        if len(recs) != len(idx):
            fail("%s: %d records, want %d" % (path, len(recs), len(idx)))
        for r, i in zip(recs, idx):
            e = tf.train.Example.FromString(r)
            f = e.features.feature
            if sorted(f.keys()) != ["image", "label"] or list(f["image"].bytes_list.value) != [images[i]] \
                    or list(f["label"].int64_list.value) != [labels[i]]:
                fail("%s: example %d differs from the IDX files" % (path, i))
        # TensorFlow's own parse op over the shard.
        parsed = tf.io.parse_example(tf.constant(recs), {
            "image": tf.io.FixedLenFeature([], tf.string), "label": tf.io.FixedLenFeature([], tf.int64)})
        got = list(zip(parsed["image"].numpy().tolist(), parsed["label"].numpy().tolist()))
        if got != [(images[i], labels[i]) for i in idx]:
            fail("%s: tf.io.parse_example disagrees with the IDX files" % path)
        seen += len(recs)
    print("ok: TensorFlow reads all %d Fashion-MNIST Examples converted by cmd/records" % seen, flush=True)

    tf_fashion = [os.path.join(work, "tf_fashion_%d.tfrecord" % s) for s in range(2)]
    writers = [tf.io.TFRecordWriter(p) for p in tf_fashion]
    for i in range(n):
        e = tf.train.Example(features=tf.train.Features(feature={
            "image": tf.train.Feature(bytes_list=tf.train.BytesList(value=[images[i]])),
            "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[labels[i]]))}))
        writers[i % 2].write(e.SerializeToString())
    for w in writers:
        w.close()
    want_fashion = "".join("%d %s\n" % (labels[i], images[i].hex())
                           for s in range(2) for i in range(s, n, 2))
    expect_same("Sluice's TFRecordReader -> ParseExample reads %d Fashion-MNIST Examples written by "
                "TensorFlow" % n, run([tool, "dump-fashion"] + tf_fashion), want_fashion)
    print("PASS", flush=True)


if __name__ == "__main__":
    main()
