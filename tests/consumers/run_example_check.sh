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
"$py" - "$cli" "$work/log/ptprof_example" "$work/ops.json" <<'PY'
import json, os, subprocess, sys
cli, run_dir, out = sys.argv[1:]
tables = {}
for f in sorted(os.listdir(run_dir)):
    rows = json.loads(subprocess.check_output([cli, "table", os.path.join(run_dir, f), "--json"]))["rows"]
    tables[f] = {r["name"]: r["count"] for r in rows}
json.dump({"traces": tables}, open(out, "w"), indent=1)
print(f"ptprof tables of {len(tables)} traces -> {out}")
PY
# The example: schedule(wait=1, warmup=1, active=3, repeat=2) -> 2 traces of 3 steps each.
"$py" "$here/check_consumers.py" --logdir "$work/log" --run ptprof_example \
  --expect-workers 1 --expect-spans 2 --expect-steps 3 --ops-json "$work/ops.json" \
  --tensorboard --hta
