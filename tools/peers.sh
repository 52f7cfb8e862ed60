#!/usr/bin/env bash
# Installs the comparison and interop peers (DESIGN.md "Performance") from PyPI into
# .venv at the repository root: tensorflow-cpu and tensorboard always; torch too with
# --with-torch (benchmark scripts only; PyPI's Linux torch wheel also pulls its CUDA
# runtime wheels, several GB). The product never uses this virtualenv; interop tests and
# tests/bench scripts do. Idempotent: a fast no-op when the packages import.
# Prints the virtualenv's python on stdout. Usage: bash tools/peers.sh [--with-torch]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
venv="$PWD/.venv"
want=(tensorflow-cpu tensorboard)
modules="tensorflow, tensorboard"
if [[ "${1:-}" == "--with-torch" ]]; then
  want+=(torch)
  modules+=", torch"
fi
if [[ ! -x "$venv/bin/python" ]]; then
  echo "peers.sh: creating $venv" >&2
  python3 -m venv "$venv" >&2
  "$venv/bin/pip" install -q --upgrade pip >&2
fi
if ! "$venv/bin/python" -c "import $modules" >/dev/null 2>&1; then
  echo "peers.sh: installing ${want[*]} into $venv (from PyPI)" >&2
  "$venv/bin/pip" install -q "${want[@]}" >&2
fi
echo "$venv/bin/python"
