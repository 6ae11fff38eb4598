#!/usr/bin/env bash
# Set-up and entry points for a fresh machine: installs what is missing, then runs.
#   bash scripts/dev.sh demo   # run the dot-product example kernel
#   bash scripts/dev.sh test   # run the test suite (what CI runs)
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${QWENGPU_VENV:-.venv}"

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else "$@"; fi; }

ensure_clang() {
  if command -v clang >/dev/null 2>&1 || [ -n "${QWENGPU_CLANG:-}" ]; then return; fi
  echo "setup: clang not found, installing it" >&2
  if command -v apt-get >/dev/null 2>&1; then
    as_root apt-get update -qq && as_root apt-get install -y -qq clang >/dev/null
  elif command -v brew >/dev/null 2>&1; then
    brew install llvm && export PATH="$(brew --prefix llvm)/bin:$PATH"
  else
    echo "setup: please install clang (Debian/Ubuntu: apt-get install clang; macOS: brew install llvm)" >&2
    exit 1
  fi
}

ensure_venv() {
  if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
  fi
  local stamp="$VENV/.qwengpu-installed"
  if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
    "$VENV/bin/pip" install -q --upgrade pip >/dev/null
    "$VENV/bin/pip" install -q -e '.[test]'
    touch "$stamp"
  fi
}

cmd="${1:-demo}"; shift || true
ensure_clang
ensure_venv
case "$cmd" in
  demo)
    exec "$VENV/bin/qwengpu-mlx" run examples/kernels/dot.cu --check \
      --arg a=1,2,3 --arg b=4,5,6 --arg out=0 --arg n=3 "$@" ;;
  test)
    exec "$VENV/bin/python" -m pytest -q "$@" ;;
  *)
    exec "$VENV/bin/qwengpu-mlx" "$cmd" "$@" ;;
esac
