#!/usr/bin/env bash
# install_consumer.sh BUILD_DIR EXAMPLES_DIR WORK_DIR TORCH_PREFIX
# Installs the ptprof build into a prefix, then, as users of that prefix would:
#  - builds examples/ as a separate project with find_package(ptprof) (ptprof::ptprof and
#    ptprof::core) and trains the example once;
#  - runs the installed `ptprof` command with an empty environment on the trace it wrote (it
#    links the core alone: no libtorch to find);
#  - builds a project that asks for find_package(ptprof COMPONENTS core) with no libtorch on its
#    CMAKE_PREFIX_PATH, and runs it on the same trace.
set -euo pipefail
build="$1" examples="$2" work="$3" torch_prefix="$4"
rm -rf "$work"
mkdir -p "$work"
cmake --install "$build" --prefix "$work/prefix" >"$work/install.log"

cmake -S "$examples" -B "$work/build" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$work/prefix;$torch_prefix" >"$work/configure.log" 2>&1 ||
  { cat "$work/configure.log"; exit 1; }
cmake --build "$work/build" -j 2 --target train_example --target trace_report \
  >"$work/build.log" 2>&1 || { tail -50 "$work/build.log"; exit 1; }
"$work/build/train_example" "$work/log/run" --steps 6 >"$work/run.log" 2>&1 ||
  { cat "$work/run.log"; exit 1; }
n=$(ls "$work/log/run"/*.pt.trace.json | wc -l)
[ "$n" = 1 ] || { echo "expected 1 trace from 6 steps, found $n"; exit 1; }
trace=$(ls "$work/log/run"/*.pt.trace.json)

# The installed command, from the prefix, with nothing set.
for cmd in summary table report; do
  env -i "$work/prefix/bin/ptprof" "$cmd" "$trace" >"$work/cli_$cmd.log" 2>&1 ||
    { echo "installed 'ptprof $cmd' failed:"; cat "$work/cli_$cmd.log"; exit 1; }
done
grep -q "3 steps" "$work/cli_summary.log" || { cat "$work/cli_summary.log"; exit 1; }
grep -q "aten::addmm" "$work/cli_table.log" || { cat "$work/cli_table.log"; exit 1; }
# `ptprof view`, installed, with nothing set: it serves the trace's Overview.
get() {  # get PORT PATH: the body of a GET to the server (bash's /dev/tcp: no curl needed)
  exec 3<>"/dev/tcp/127.0.0.1/$1"
  printf 'GET %s HTTP/1.1\r\nHost: 127.0.0.1:%s\r\nConnection: close\r\n\r\n' "$2" "$1" >&3
  sed '1,/^\r$/d' <&3
  exec 3<&-
}
env -i "$work/prefix/bin/ptprof" view "$work/log" --port 0 >"$work/cli_view.log" 2>&1 &
view_pid=$!
port=""
for _ in $(seq 100); do
  port=$(sed -n 's|.*http://127.0.0.1:\([0-9]*\)/.*|\1|p' "$work/cli_view.log")
  [ -n "$port" ] && break
  sleep 0.1
done
[ -n "$port" ] || { kill "$view_pid"; echo "installed 'ptprof view' printed no URL:"; cat "$work/cli_view.log"; exit 1; }
overview=""
for _ in $(seq 600); do
  id=$(get "$port" /api/runs | sed -n 's/.*"id": "\(t[0-9]*\)".*/\1/p')
  [ -n "$id" ] && overview=$(get "$port" "/api/overview?trace=$id")
  case "$overview" in *'"report"'*) break ;; esac
  sleep 0.1
done
kill "$view_pid"
wait "$view_pid" || true
case "$overview" in *'"per_step"'*) ;; *) echo "installed 'ptprof view' served no overview:"; cat "$work/cli_view.log"; echo "$overview" | head -c 500; exit 1 ;; esac

if ldd "$work/prefix/bin/ptprof" | grep -q -e libtorch -e libc10; then
  echo "the installed ptprof command links libtorch:"; ldd "$work/prefix/bin/ptprof"; exit 1
fi
"$work/build/trace_report" "$trace" >"$work/trace_report.log" 2>&1 ||
  { cat "$work/trace_report.log"; exit 1; }

# ptprof::core alone: no libtorch on the path.
mkdir -p "$work/core_consumer"
cat >"$work/core_consumer/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.25)
project(core_consumer LANGUAGES CXX)
set(CMAKE_CXX_STANDARD 17)
find_package(ptprof REQUIRED COMPONENTS core)
if(TARGET ptprof::ptprof OR TARGET torch)
  message(FATAL_ERROR "COMPONENTS core brought in the recorder or libtorch")
endif()
add_executable(trace_report "$examples/trace_report.cpp")
target_link_libraries(trace_report PRIVATE ptprof::core)
CMAKE
cmake -S "$work/core_consumer" -B "$work/core_build" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$work/prefix" >"$work/core_configure.log" 2>&1 ||
  { cat "$work/core_configure.log"; exit 1; }
cmake --build "$work/core_build" -j 2 >"$work/core_build.log" 2>&1 ||
  { tail -50 "$work/core_build.log"; exit 1; }
"$work/core_build/trace_report" "$trace" >"$work/core_report.log" 2>&1 ||
  { cat "$work/core_report.log"; exit 1; }
grep -q "ptprof report: 3 steps" "$work/core_report.log" || { cat "$work/core_report.log"; exit 1; }
echo "consumer projects (ptprof::ptprof + ptprof::core, and ptprof::core alone) built against" \
  "$work/prefix; the installed ptprof command ran with an empty environment on $(basename "$trace")"
