"""TensorFlow's side of sampled_softmax_test (issue 19).

For a few cases (partitions 1 and 3, accidental hits removed or kept), draws
inputs with numpy, computes tf.compat.v1.nn.sampled_softmax_loss (weights and
biases as a list of partitions, partition_strategy="mod", the sampler's
values given as sampled_values so both sides use the same candidates), its
mean, the gradients of the mean with respect to the whole weights and biases,
and the full softmax cross-entropy; runs Sluice's sampled_softmax_check on the
same values and compares (relative 1e-5, absolute 1e-6).

Usage: sampled_softmax_tf.py --check=PATH --workdir=DIR
"""
import argparse
import os
import subprocess
import sys

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402


def write_arrays(path, arrays):
    with open(path, "w") as f:
        for name, value in arrays.items():
            value = np.asarray(value)
            dims = ",".join(str(d) for d in value.shape) if value.ndim else "-"
            f.write("%s %s %s\n" % (name, dims, " ".join(repr(float(v)) for v in value.reshape(-1))))


def read_arrays(path):
    out = {}
    with open(path) as f:
        for line in f:
            words = line.split()
            dims = () if words[1] == "-" else tuple(int(d) for d in words[1].split(","))
            out[words[0]] = np.array([float(v) for v in words[2:]]).reshape(dims)
    return out


def tensorflow_side(x, w, b, labels, sampled, true_q, sampled_q, parts, remove_hits):
    w_parts = [tf.Variable(w[p::parts]) for p in range(parts)]
    b_parts = [tf.Variable(b[p::parts]) for p in range(parts)]
    with tf.GradientTape() as tape:
        per_example = tf.compat.v1.nn.sampled_softmax_loss(
            weights=w_parts, biases=b_parts, labels=labels.reshape(-1, 1), inputs=x,
            num_sampled=len(sampled), num_classes=w.shape[0], num_true=1,
            sampled_values=(tf.constant(sampled), tf.constant(true_q), tf.constant(sampled_q)),
            remove_accidental_hits=remove_hits, partition_strategy="mod")
        loss = tf.reduce_mean(per_example)
    grads = tape.gradient(loss, w_parts + b_parts)
    dw = np.zeros_like(w)
    db = np.zeros_like(b)
    for p in range(parts):
        dw[p::parts] = tf.convert_to_tensor(grads[p]).numpy()
        db[p::parts] = tf.convert_to_tensor(grads[parts + p]).numpy()
    logits = tf.matmul(x, w, transpose_b=True) + b
    full = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
    return {"loss": loss.numpy(), "full_loss": full.numpy(), "dweights": dw, "dbiases": db}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--check", required=True)
    parser.add_argument("--workdir", required=True)
    args = parser.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    rng = np.random.RandomState(19)
    batch, dim, classes, num_sampled = 6, 5, 13, 7
    failures = 0
    for parts in (1, 3):
        for remove_hits in (True, False):
            x = rng.normal(size=(batch, dim)).astype(np.float32)
            w = rng.normal(scale=0.7, size=(classes, dim)).astype(np.float32)
            b = rng.normal(scale=0.3, size=(classes,)).astype(np.float32)
            labels = rng.randint(0, classes, size=batch).astype(np.int64)
            # Unique candidates, some equal to true classes (accidental hits).
            sampled = rng.permutation(classes)[:num_sampled].astype(np.int64)
            if labels[0] not in sampled:
                sampled[0] = labels[0]
            true_q = rng.uniform(0.05, 0.9, size=(batch, 1)).astype(np.float32)
            sampled_q = rng.uniform(0.05, 0.9, size=(num_sampled,)).astype(np.float32)
            want = tensorflow_side(x, w, b, labels, sampled, true_q, sampled_q, parts, remove_hits)
            case = "parts=%d remove_accidental_hits=%s" % (parts, remove_hits)
            inp = os.path.join(args.workdir, "in_%d_%d.txt" % (parts, remove_hits))
            outp = os.path.join(args.workdir, "out_%d_%d.txt" % (parts, remove_hits))
            write_arrays(inp, {"x": x, "weights": w, "biases": b, "labels": labels, "sampled": sampled,
                               "true_expected": true_q, "sampled_expected": sampled_q,
                               "parts": np.array(parts), "remove_hits": np.array(int(remove_hits))})
            run = subprocess.run([args.check, inp, outp], capture_output=True, text=True)
            if run.returncode != 0:
                print("FAIL %s: sampled_softmax_check exited %d: %s" % (case, run.returncode, run.stderr.strip()))
                failures += 1
                continue
            got = read_arrays(outp)
            for name in ("loss", "full_loss", "dweights", "dbiases"):
                diff = np.max(np.abs(np.asarray(got[name]) - np.asarray(want[name])))
                ok = np.allclose(got[name], want[name], rtol=1e-5, atol=1e-6)
                print("%s %s %s: max |Sluice - TensorFlow| = %.3g" % ("ok  " if ok else "FAIL", case, name, diff))
                failures += 0 if ok else 1
            hits = int(np.sum(sampled[None, :] == labels[:, None]))
            print("     (%d accidental hit(s) among the sampled candidates)" % hits)
    if failures:
        print("FAIL: %d comparison(s) differ" % failures)
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
