#!/usr/bin/env bash
# install_consumer.sh BUILD_DIR EXAMPLES_DIR WORK_DIR TORCH_PREFIX
# Installs the ptprof build into a prefix and builds examples/ as a separate project with
# find_package(ptprof), then runs the result once.
set -euo pipefail
build="$1" examples="$2" work="$3" torch_prefix="$4"
rm -rf "$work"
mkdir -p "$work"
cmake --install "$build" --prefix "$work/prefix" >"$work/install.log"
cmake -S "$examples" -B "$work/build" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$work/prefix;$torch_prefix" >"$work/configure.log" 2>&1 ||
  { cat "$work/configure.log"; exit 1; }
cmake --build "$work/build" -j 2 >"$work/build.log" 2>&1 || { tail -50 "$work/build.log"; exit 1; }
"$work/build/train_example" "$work/log/run" --steps 6 >"$work/run.log" 2>&1 ||
  { cat "$work/run.log"; exit 1; }
n=$(ls "$work/log/run"/*.pt.trace.json | wc -l)
[ "$n" = 1 ] || { echo "expected 1 trace from 6 steps, found $n"; exit 1; }
echo "consumer project built against $work/prefix and wrote $(ls "$work/log/run")"
