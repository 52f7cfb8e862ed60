#!/usr/bin/env bash
# Runs the whole test suite: tools/setup.sh (Debian packages), tools/peers.sh (the PyPI
# peers that interop tests use, in .venv), then `bazel test //...`
# (settings from .bazelrc), then prints one final line "N passed, M failed" from Bazel's
# per-test summary. Exits 0 iff every test passed (no test targets at all counts as a pass).
# Usage: bash tools/test.sh [bazel test flags...] [target patterns...]   (default: //...)
#   e.g. bash tools/test.sh --config=asan //engine/...
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1

bash tools/setup.sh || { echo "tools/setup.sh failed" >&2; echo "0 passed, 1 failed"; exit 1; }

# Interop tests compare with TensorFlow and TensorBoard from PyPI (tools/peers.sh
# installs them into .venv); they find that python through SLUICE_PEERS_PYTHON.
peers_python=$(bash tools/peers.sh) || { echo "tools/peers.sh failed" >&2; echo "0 passed, 1 failed"; exit 1; }

args=(--test_env=SLUICE_PEERS_PYTHON="$peers_python" "$@")
has_target=0
for a in "${args[@]}"; do
  [[ "$a" == //* || "$a" == @* || "$a" == -//* || "$a" == :* ]] && has_target=1
done
# The GPU targets compile with nvcc, cuBLAS and cuDNN from /usr/local/cuda (CUDA 13 with cuDNN
# 9, on our machines; not a Debian package, so tools/setup.sh does not install it). Without it
# they are left out of the default run, with a note; the rest does not need CUDA.
if ((!has_target)); then
  if [[ -x /usr/local/cuda/bin/nvcc && -e /usr/local/cuda/include/cudnn.h ]]; then
    args+=(//...)
  else
    echo "tools/test.sh: no CUDA toolkit with cuDNN at /usr/local/cuda (nvcc, cudnn.h): leaving out the GPU targets" \
      "(//engine/kernels/gpu, //engine/runtime/gpu, //inputs/gpu and the CUDA libraries of //third_party)" >&2
    args+=(-- //... -//engine/kernels/gpu/... -//engine/runtime/gpu/... -//inputs/gpu/...
           -//third_party:cuda_headers -//third_party:cuda_runtime -//third_party:cublas -//third_party:cudnn)
  fi
fi

log=$(mktemp "${TMPDIR:-/tmp}/sluice-test.XXXXXX")
trap 'rm -f "$log"' EXIT

# --keep_going: one broken target must not hide the other results.
bazel test --keep_going --test_summary=short --color=no --curses=no "${args[@]}" \
  </dev/null 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}

# Bazel exit code 4: the patterns matched no test targets.
if ((rc == 4)) && grep -q "No test targets were found" "$log"; then
  echo "0 passed, 0 failed"
  exit 0
fi

# Per-test summary lines, printed after "Build completed" / "Build did NOT complete":
#   //pkg:test   (cached) PASSED in 0.1s | FAILED in ... | TIMEOUT in ... | NO STATUS
#   | FAILED TO BUILD | INCOMPLETE | FLAKY, failed in 1 out of 2 ...
read -r passed failed < <(awk '
  /^(INFO: Build completed|FAILED: Build did NOT complete)/ { summary = 1; next }
  summary && /^(\/\/|@)[^ ]+ +/ {
    label = $1; status = $0
    sub(/^[^ ]+ +/, "", status); sub(/^\(cached\) /, "", status)
    if (status ~ /^(PASSED|FLAKY)/) result[label] = "pass"
    else if (status ~ /^(FAILED|TIMEOUT|NO STATUS|INCOMPLETE)/) result[label] = "fail"
  }
  END { p = 0; f = 0; for (l in result) { if (result[l] == "pass") p++; else f++ }; print p, f }
' "$log")

# A build or loading failure that left no failed test line still counts as a failure.
if ((rc != 0 && failed == 0)); then
  failed=1
fi
echo "${passed} passed, ${failed} failed"
((rc == 0 && failed == 0))
