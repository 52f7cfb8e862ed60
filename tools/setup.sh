#!/usr/bin/env bash
# Installs the Debian 12 packages Sluice builds and tests with. Idempotent: a fast no-op (one
# dpkg-query) when everything is present; otherwise one `apt-get update` and one install.
# Uses sudo only when not root. Safe in CI (no prompts, no stdin).
set -euo pipefail

PACKAGES=(
  bazel-bootstrap protobuf-compiler libprotobuf-dev libgrpc++-dev protobuf-compiler-grpc
  libabsl-dev libeigen3-dev librocksdb-dev rocksdb-tools prometheus-cpp-dev libgtest-dev
  libgmock-dev libbenchmark-dev libdnnl-dev dataset-fashion-mnist zlib1g-dev libpng-dev python3-venv
  libtcmalloc-minimal4 ca-certificates prometheus prometheus-pushgateway curl openssl slurm-wlm munge fortunes
)

# One dpkg-query for all: prints "ii <name>" for each installed package.
installed=" $(dpkg-query -W -f='${db:Status-Abbrev}${Package}\n' "${PACKAGES[@]}" 2>/dev/null \
  | awk '$1 == "ii" { printf "%s ", $2 }' || true)"
missing=()
for pkg in "${PACKAGES[@]}"; do
  [[ "$installed" == *" $pkg "* ]] || missing+=("$pkg")
done
if ((${#missing[@]} == 0)); then
  exit 0
fi

echo "setup.sh: installing missing packages: ${missing[*]}" >&2
SUDO=()
if [[ "$(id -u)" != 0 ]]; then
  SUDO=(sudo -n)   # -n: fail instead of prompting (CI has no stdin)
fi
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get update -q
"${SUDO[@]}" apt-get install -y -q "${missing[@]}"
