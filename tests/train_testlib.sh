# Shell helpers for the tests that drive the real `train` binary (sourced, not
# run): paths from the runfiles tree, a scratch directory, the deterministic
# fashion_mlp flags, and readers for train's output and checkpoint state file.
# A test sources this from its runfiles root (Bazel's working directory).

TRAIN="$PWD/cmd/train/train"
CKPT="$PWD/cmd/ckpt/ckpt"
CONFIG="$PWD/configs/fashion_mlp.pbtxt"
SCRATCH="${TEST_TMPDIR:-$(mktemp -d)}"
FASHION_IMAGES=/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz

fail() { echo "FAIL: $*" >&2; exit 1; }

skip_without_data() {
  if [[ ! -r "$FASHION_IMAGES" ]]; then
    echo "SKIP: Fashion-MNIST is not installed ($FASHION_IMAGES)"
    exit 0
  fi
}

# Background processes started by a test; killed on exit, whatever happens.
BACKGROUND_PIDS=()
cleanup_background() {
  for p in "${BACKGROUND_PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
  wait 2>/dev/null
}
trap cleanup_background EXIT

# Deterministic fashion_mlp for STEPS steps, checkpoints every EVERY steps
# (keep KEEP), no periodic eval, progress every 5 steps.
mlp_flags() {  # STEPS EVERY KEEP
  echo "--set train.steps=$1 --set train.deterministic=true --set train.eval_every_steps=0" \
       "--set checkpoint.every_steps=$2 --set checkpoint.keep=$3 --set train.log_every_steps=5" \
       "--set monitoring.metrics_port=-1"
}

# The full-precision loss train prints at its end ("last step N loss X").
last_loss() {  # LOG [STEP]
  awk -v want="${2:-}" '/^last step [0-9]+ loss / { if (want == "" || $3 == want) l = $5 } END { print l }' "$1"
}

# The step train resumed from ("resumed from DIR at step N"), or empty.
resumed_step() {  # LOG
  sed -n 's/^resumed from .* at step \([0-9]*\)$/\1/p' "$1" | tail -1
}

# The latest checkpoint's step according to the state file, or empty.
state_latest_step() {  # RUN_DIR
  local f="$1/checkpoints/checkpoint"
  [[ -f "$f" ]] && sed -n 's/^latest: "ckpt-\([0-9]*\)"$/\1/p' "$f"
}

# The checkpoint directories the state file lists (its `best` names one of them again).
state_listed_dirs() {  # RUN_DIR
  local f="$1/checkpoints/checkpoint"
  [[ -f "$f" ]] && sed -n '/^checkpoints {/,/^}/s/^ *dir: "\(ckpt-[0-9]*\)"$/\1/p' "$f"
}

# Waits (up to 60 s) until the train process PID, logging to LOG, reports a
# step >= STEP, then stops it with SIGTERM (it finishes the step,
# checkpoints and exits 143) and sets STOPPED_AT to the step it stopped at.
# Fails the test on another exit code or without the "stopped by signal" line.
# Not in $(...): PID must be a child of the calling shell.
stop_with_sigterm_at() {  # PID LOG STEP
  local pid=$1 log=$2 at=$3 step rc
  for _ in $(seq 1 600); do
    step=$(sed -n 's/^step \([0-9]*\)\/.*/\1/p' "$log" | tail -1)
    [[ -n "$step" && "$step" -ge "$at" ]] && break
    sleep 0.1
  done
  kill -TERM "$pid"
  wait "$pid"
  rc=$?
  [[ $rc == 143 ]] || fail "SIGTERM gave exit code $rc, want 143: $(tail -3 "$log")"
  STOPPED_AT=$(sed -n 's/^stopped by signal at step \([0-9]*\);.*/\1/p' "$log")
  [[ -n "$STOPPED_AT" ]] || fail "no 'stopped by signal at step k' line: $(tail -3 "$log")"
}

# |a - b| / |b| <= tol
close_enough() {  # A B TOL
  awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; m = b < 0 ? -b : b;
    if (m == 0) m = 1; exit !(d / m <= t) }'
}

relative_difference() {  # A B
  awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; m = b < 0 ? -b : b; if (m == 0) m = 1;
    printf "%.3g", d / m }'
}

# N free 127.0.0.1 ports, space-separated, all held open together so that they differ.
free_ports() {  # N: N distinct free ports of 127.0.0.1, below the ephemeral range (tests/free_ports.py)
  python3 tests/free_ports.py "$1"
}
