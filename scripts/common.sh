# Shared by the scripts: paths and the configure+build step.
# shellcheck shell=bash
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${PTPROF_VENV:-$HOME/.cache/ptprof/venv}"
PY="$VENV/bin/python"
JOBS="${PTPROF_JOBS:-$(nproc)}"

# configure_and_build BUILD_DIR [extra cmake args...] [--target TARGET]...
# (the cmake args apply when BUILD_DIR is first configured; --target builds only TARGET)
configure_and_build() {
  local dir="$1"
  shift
  local args=() targets=()
  while [ $# -gt 0 ]; do
    if [ "$1" = --target ]; then
      targets+=(--target "$2")
      shift 2
    else
      args+=("$1")
      shift
    fi
  done
  local prefix
  prefix="$("$PY" -c 'import torch.utils; print(torch.utils.cmake_prefix_path)' 2>/dev/null)"
  if [ ! -f "$dir/CMakeCache.txt" ]; then
    cmake -S "$ROOT" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_PREFIX_PATH="$prefix" -DPTPROF_PYTHON="$PY" "${args[@]}" >"$dir.configure.log" 2>&1 ||
      { cat "$dir.configure.log"; return 1; }
  fi
  cmake --build "$dir" -j "$JOBS" "${targets[@]}"
}
