#!/usr/bin/env bash
# check_gpu_consumers.sh GPU_TESTS_BINARY WORK_DIR
# Writes the synthetic GPU trace (GpuTraceFixture) and loads it into TensorBoard's plugin and
# HTA: three steps, a Kernel view listing the kernels.
set -euo pipefail
tests="$1" work="$2"
here="$(cd "$(dirname "$0")" && pwd)"
py="${PTPROF_VENV:-$HOME/.cache/ptprof/venv}/bin/python"
rm -rf "$work"
mkdir -p "$work/log/gpu_fixture"
PTPROF_GPU_FIXTURE_DIR="$work/log/gpu_fixture" "$tests" \
  --gtest_filter=GpuTraceFixture.WritesATraceForTheConsumerCheck > "$work/fixture.log" 2>&1 ||
  { cat "$work/fixture.log"; exit 1; }
"$py" "$here/../consumers/check_consumers.py" --logdir "$work/log" --run gpu_fixture \
  --expect-workers 1 --expect-spans 1 --expect-steps 3 --expect-kernels --hta
