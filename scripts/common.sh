# Shared by the scripts: paths and the configure+build step.
# shellcheck shell=bash
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${PTPROF_VENV:-$HOME/.cache/ptprof/venv}"
PY="$VENV/bin/python"
JOBS="${PTPROF_JOBS:-$(nproc)}"

# ccache, where the machine has it (scripts/setup installs it): every configure below, and the
# nested ones the tests run (the installed-package consumer, gpu-check's build), pick it up
# from CMAKE_CXX_COMPILER_LAUNCHER. Paths under the checkout are hashed relative to it, so a
# clone elsewhere, or gpu-check's own build tree beside build/, hits the same entries.
if command -v ccache >/dev/null 2>&1 && [ -z "${PTPROF_NO_CCACHE:-}" ]; then
  export CMAKE_CXX_COMPILER_LAUNCHER="${CMAKE_CXX_COMPILER_LAUNCHER:-ccache}"
  export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$ROOT}"
  export CCACHE_NOHASHDIR=1
  export CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-20G}"  # three builds' objects with torch's debug info
  # The test binaries share a precompiled torch header, which ccache can cache only with these.
  export CCACHE_SLOPPINESS="${CCACHE_SLOPPINESS:-pch_defines,time_macros,include_file_mtime,include_file_ctime}"
fi

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
