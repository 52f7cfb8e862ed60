"""TensorFlow's side of tests/bench/recv_tensor_bench (issue 15): a tensor moved
between two TensorFlow tasks by TensorFlow's own gRPC runtime. Started and
driven by recv_tensor_bench, under the peers' python (tools/peers.sh); not
meant to be run by hand.

Two processes, one tf.distribute.Server each, in a cluster of two jobs on
127.0.0.1 (the same task names as Sluice's side):
  --serve   /job:ps/task:0: holds one float32 variable per size (all ones);
            serves until stdin closes.
  --client  /job:worker/task:0: the master and the receiving task. For each
            size the graph reads the variable on the ps task (ReadVariableOp
            there: its output shares the variable's buffer) and slices its
            first element on the worker task, so every step moves the whole
            tensor with one RecvTensor from ps to worker, and only 4 bytes come
            back to Python. A session step (Session.make_callable, tf.compat.v1
            graph mode, default Grappler) runs both tasks' partitions: RunGraph
            on ps (which Sends the value), RunGraph on the worker (whose Recv
            pulls it). Commands on stdin, one result line each on stdout:
              tf <bytes> <warmup> <iters>      the step of that size
              tfnoop <bytes> <warmup> <iters>  a local no-op step on the worker
                                               (the session's own overhead)
            -> "result side=<side> bytes=<b> iters=<n> seconds=<total> p50_us=.. p99_us=.. us=<t1>,.."
               (us: every timed step in microseconds)
Both processes use --threads for TensorFlow's inter- and intra-op pools.
"""
import argparse
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def wait_for_stdin_eof():
    for _ in sys.stdin:
        pass


def measure(run, warmup, iters):
    for _ in range(warmup):
        run()
    us = []
    start = last = time.perf_counter()
    for _ in range(iters):
        run()
        now = time.perf_counter()
        us.append((now - last) * 1e6)
        last = now
    ordered = sorted(us)
    return (last - start, ordered[min(len(us) - 1, len(us) // 2)], ordered[min(len(us) - 1, int(0.99 * len(us)))],
            us)


def main():
    ap = argparse.ArgumentParser()
    role = ap.add_mutually_exclusive_group(required=True)
    role.add_argument("--serve", action="store_true")
    role.add_argument("--client", action="store_true")
    ap.add_argument("--ps", required=True, help="127.0.0.1:PORT of the ps task")
    ap.add_argument("--worker", required=True, help="127.0.0.1:PORT of the worker task")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--sizes", default="", help="comma list of byte counts (client)")
    args = ap.parse_args()

    import tensorflow as tf

    cluster = tf.train.ClusterSpec({"ps": [args.ps], "worker": [args.worker]})
    config = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=args.threads,
                                      inter_op_parallelism_threads=args.threads)
    if args.serve:
        tf.distribute.Server(cluster, job_name="ps", task_index=0, config=config, start=True)
        print("ready", flush=True)
        wait_for_stdin_eof()
        os._exit(0)

    server = tf.distribute.Server(cluster, job_name="worker", task_index=0, config=config, start=True)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    graph = tf.Graph()
    fetches = {}
    with graph.as_default():
        for size in sizes:
            if size % 4:
                sys.exit("error: size %d is not a whole number of floats" % size)
            with tf.device("/job:ps/task:0/device:CPU:0"):
                v = tf.compat.v1.get_variable("v%d" % size, shape=[size // 4], dtype=tf.float32,
                                              initializer=tf.compat.v1.ones_initializer(), use_resource=True)
                value = v.read_value()
            with tf.device("/job:worker/task:0/device:CPU:0"):
                fetches[size] = tf.strided_slice(value, [0], [1])
        with tf.device("/job:worker/task:0/device:CPU:0"):
            noop = tf.no_op()
        init = tf.compat.v1.global_variables_initializer()
    sess = tf.compat.v1.Session(server.target, graph=graph, config=config)
    sess.run(init)
    runs = {size: sess.make_callable(fetches[size]) for size in sizes}
    for size, run in runs.items():
        if run()[0] != 1.0:
            sys.exit("error: the %d-byte step fetched %r" % (size, run()))
    run_noop = sess.make_callable(noop)
    print("ready", flush=True)

    for line in sys.stdin:
        parts = line.split()
        if len(parts) != 4 or parts[0] not in ("tf", "tfnoop"):
            print("error bad command %r" % line, flush=True)
            sys.exit(1)
        side, size, warmup, iters = parts[0], int(parts[1]), int(parts[2]), int(parts[3])
        if side == "tf" and size not in runs:
            print("error no graph for %d bytes" % size, flush=True)
            sys.exit(1)
        seconds, p50, p99, us = measure(runs[size] if side == "tf" else run_noop, warmup, iters)
        print("result side=%s bytes=%d iters=%d seconds=%.6f p50_us=%.1f p99_us=%.1f us=%s"
              % (side, size, iters, seconds, p50, p99, ",".join("%.1f" % u for u in us)), flush=True)
    os._exit(0)


if __name__ == "__main__":
    main()
