#!/usr/bin/env bash
# run_example_check.sh TRAIN_EXAMPLE PTPROF_CLI WORK_DIR
# Runs the example under ptprof (as scripts/demo does), builds ptprof's own table of every
# trace with the `ptprof` command, and checks the traces through TensorBoard's plugin (loader
# and a live server on loopback) and HTA against those tables.
set -euo pipefail
example="$1" cli="$2" work="$3"
here="$(cd "$(dirname "$0")" && pwd)"
py="${PTPROF_VENV:-$HOME/.cache/ptprof/venv}/bin/python"
rm -rf "$work"
mkdir -p "$work/log"
"$example" "$work/log/ptprof_example" >"$work/example.log" 2>&1 || { cat "$work/example.log"; exit 1; }
"$py" - "$cli" "$work/log/ptprof_example" "$work/ops.json" "$work/memory.json" <<'PY'
import json, os, subprocess, sys
cli, run_dir, out, mem_out = sys.argv[1:]
tables, peaks = {}, {}
for f in sorted(os.listdir(run_dir)):
    path = os.path.join(run_dir, f)
    rows = json.loads(subprocess.check_output([cli, "table", path, "--json"]))["rows"]
    tables[f] = {r["name"]: r["count"] for r in rows}
    peaks[f] = json.loads(subprocess.check_output([cli, "memory", path]))
    if not peaks[f]:
        sys.exit(f"{f}: ptprof found no [memory] events (the example runs with profile_memory)")
json.dump({"traces": tables}, open(out, "w"), indent=1)
json.dump({"traces": peaks}, open(mem_out, "w"), indent=1)
print(f"ptprof tables and memory peaks of {len(tables)} traces -> {out}, {mem_out}")
PY
# The flame graph names the example's own functions: model_forward sits above (outside)
# aten::addmm in the collapsed stacks of the last window.
reports="$work/log/ptprof_example_reports"
for f in stacks.txt flamegraph.svg memory.json memory.html; do
  [ -s "$reports/$f" ] || { echo "missing report $reports/$f"; exit 1; }
done
grep -E '(^|;)[^;]*model_forward[^;]*;.*aten::addmm( |;)' "$reports/stacks.txt" >/dev/null ||
  { echo "no stack with model_forward above aten::addmm in $reports/stacks.txt"; head -5 "$reports/stacks.txt"; exit 1; }
echo "flame graph: model_forward above aten::addmm"
# The example: schedule(wait=1, warmup=1, active=3, repeat=2) -> 2 traces of 3 steps each.
"$py" "$here/check_consumers.py" --logdir "$work/log" --run ptprof_example \
  --expect-workers 1 --expect-spans 2 --expect-steps 3 --ops-json "$work/ops.json" \
  --memory-json "$work/memory.json" \
  --tensorboard --hta
