#!/usr/bin/env bash
# Set-up and entry points for a fresh machine: installs what is missing, then runs.
#   bash scripts/dev.sh demo   # run the dot-product example kernel
#   bash scripts/dev.sh test   # run the test suite (what CI runs)
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${QWENGPU_VENV:-.venv}"

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else "$@"; fi; }

# A clang can compile CUDA for us only with LLVM's NVPTX back end (Apple's clang has none).
has_nvptx() { echo 'void f(void) {}' | "$1" --target=nvptx64-nvidia-cuda -x c -S -o /dev/null - >/dev/null 2>&1; }

ensure_clang() {
  if [ -n "${QWENGPU_CLANG:-}" ]; then return; fi
  if [ "$(uname)" = Darwin ]; then  # the same order as host/frontend.py's find_clang
    for c in /opt/homebrew/opt/llvm/bin/clang /usr/local/opt/llvm/bin/clang "$(command -v clang || true)"; do
      if [ -x "$c" ] && has_nvptx "$c"; then return; fi
    done
    if command -v brew >/dev/null 2>&1; then
      echo "setup: no clang with the NVPTX back end (Apple's clang has none); brew install llvm" >&2
      brew install llvm
      return
    fi
    echo "setup: install LLVM's clang (Apple's has no NVPTX back end): https://brew.sh, then brew install llvm" >&2
    exit 1
  fi
  if command -v clang >/dev/null 2>&1; then
    if has_nvptx clang; then return; fi
    echo "setup: warning: $(command -v clang) has no NVPTX back end; kernels will not compile" >&2
    return
  fi
  echo "setup: clang not found, installing it" >&2
  if command -v apt-get >/dev/null 2>&1; then
    as_root apt-get update -qq && as_root apt-get install -y -qq clang >/dev/null
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

# The native token step (qwengpu_mlx/runtime/native) is built with CMake on first use; without it
# launches still run, on the slower MLX-ops path.
ensure_cmake() {
  if command -v cmake >/dev/null 2>&1 || [ -x "$VENV/bin/cmake" ]; then return; fi
  echo "setup: no cmake on PATH, installing it into $VENV" >&2
  "$VENV/bin/pip" install -q "cmake>=3.24,<5"
}

cmd="${1:-demo}"; shift || true
ensure_clang
ensure_venv
ensure_cmake
case "$cmd" in
  demo)
    exec "$VENV/bin/qwengpu-mlx" run examples/kernels/dot.cu --check \
      --arg a=1,2,3 --arg b=4,5,6 --arg out=0 --arg n=3 "$@" ;;
  test)  # the slowest tests are listed at the end: the suite must stay under 15 minutes. One
    # worker per core, each test file whole on one worker (its module fixtures built once)
    exec "$VENV/bin/python" -m pytest -q -n auto --dist loadfile --durations=25 "$@" ;;
  *)
    exec "$VENV/bin/qwengpu-mlx" "$cmd" "$@" ;;
esac
