"""Two processes of the example (two "ranks", one slower than the other) get one on-demand
request from the environment and a trigger file: each writes exactly one window, of the asked
steps, at the same step numbers, and nothing else; each file carries its rank (distributedInfo
from RANK/WORLD_SIZE, as HTA reads it, and the worker name).

    check_ranks.py TRAIN_EXAMPLE WORKDIR [PTPROF_CLI]

The job has three ranks; the third is killed (SIGKILL) before its window: the other two's
traces are whole, and `ptprof merge` of the directory (with PTPROF_CLI) makes one timeline of
ranks 0 and 1 and says rank 2 is missing.

The file is there before the ranks start (each sees it at its first step); that ranks seeing it
at different steps still agree is tested in test_on_demand (first_active_step), and a file
written mid-run in OnDemand.AFileWrittenWhileTheJobRunsGivesExactlyTheAskedWindow.
"""
import glob
import gzip
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time


def steps_of(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        trace = json.load(f)
    steps = set()
    for e in trace["traceEvents"]:
        m = re.fullmatch(r"ProfilerStep#(\d+)", e.get("name", ""))
        if m and e.get("ph") == "X" and e.get("cat") in ("user_annotation", "cpu_op"):
            steps.add(int(m.group(1)))
    return sorted(steps)


def main():
    example, work = sys.argv[1], sys.argv[2]
    cli = sys.argv[3] if len(sys.argv) > 3 else None
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    out = os.path.join(work, "on_demand")
    trigger = os.path.join(work, "trigger")
    with open(trigger, "w") as f:
        f.write(f"# two ranks, one window\nSTEPS=3\nWARMUP=1\nROUNDUP=40\nOUTPUT={out}\n")
    procs = []
    # Rank 2 is slow (about 130 ms a step: step 40 is 5 s away) and is killed after a second.
    for rank, latency in ((0, "0"), (1, "20"), (2, "2000")):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE="3", PTPROF_TRIGGER_FILE=trigger,
                   PTPROF_ON_DEMAND_ONLY="1")
        procs.append(subprocess.Popen(
            [example, os.path.join(work, f"own_{rank}"), "--steps", "120",
             "--sample-latency-us", latency],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    failures = []
    time.sleep(1.0)
    procs[2].send_signal(signal.SIGKILL)
    procs[2].communicate(timeout=60)
    for rank, p in enumerate(procs[:2]):
        text, _ = p.communicate(timeout=300)
        if p.returncode != 0:
            failures.append(f"rank {rank} exited {p.returncode}:\n{text[-2000:]}")
        if "on-demand window (trigger file, seen at step 0): steps 40..42" not in text:
            failures.append(f"rank {rank} did not announce the window 40..42:\n{text[-2000:]}")
    files = sorted(glob.glob(os.path.join(out, "*.pt.trace.json*")))
    if len(files) != 2:
        failures.append(f"expected one trace per rank in {out}, found {files}")
    ranks = []
    for f in files:
        s = steps_of(f)
        if s != [40, 41, 42]:
            failures.append(f"{f}: steps {s}, expected [40, 41, 42]")
        else:
            print(f"ok {os.path.basename(f)}: ProfilerStep#40..#42")
        # Each rank's file says which rank it is, as HTA finds it: the first match of its regex
        # in the file (it needs the space after the colon), and the worker name carries it too.
        opener = gzip.open if f.endswith(".gz") else open
        with opener(f, "rt") as fh:
            text = fh.read()
        m = re.search(r'"rank":\s+(\d+)', text)
        info = json.loads(text).get("distributedInfo")
        rank = int(m.group(1)) if m else None
        if info != {"rank": rank, "world_size": 3} or f"_rank{rank}." not in f:
            failures.append(f"{f}: distributedInfo {info}, HTA's rank {rank}")
        else:
            print(f"ok {os.path.basename(f)}: distributedInfo rank {rank} of 3")
            ranks.append(rank)
    if sorted(ranks) != [0, 1] and len(files) == 2:
        failures.append(f"the two files are ranks {ranks}, expected 0 and 1")
    try:
        from hta.trace_analysis import TraceAnalysis
    except ImportError:
        print("skip HTA: not installed in this Python")
    else:
        found = sorted(TraceAnalysis(trace_dir=out).t.traces.keys())
        if found != [0, 1]:
            failures.append(f"HTA finds ranks {found} in {out}, expected [0, 1]")
        else:
            print("ok HTA finds ranks [0, 1]")
    if cli and len(files) == 2:
        merged = os.path.join(work, "merged.pt.trace.json")
        p = subprocess.run([cli, "merge", out, "-o", merged], capture_output=True, text=True)
        print(p.stdout, end="")
        if p.returncode != 0:
            failures.append(f"ptprof merge failed ({p.returncode}): {p.stderr}")
        else:
            with open(merged) as fh:
                m = json.load(fh)
            names = sorted(e["args"]["name"].split(":")[0] for e in m["traceEvents"]
                           if e.get("ph") == "M" and e.get("name") == "process_name")
            info = m.get("ptprof_merge", {})
            if names != ["rank 0", "rank 1"] or info.get("missing_ranks") != [2] or \
                    "no trace from rank(s) 2 of 3" not in p.stdout:
                failures.append(f"merged: processes {names}, ptprof_merge {info}")
            else:
                print("ok merged: one process per rank (0, 1); rank 2 of 3 named missing")
        # The report of the run directory says the same in its cross-rank part.
        p = subprocess.run([cli, "report", out, "--json"], capture_output=True, text=True)
        cross = json.loads(p.stdout).get("cross_rank", {}) if p.returncode == 0 else {}
        if cross.get("missing_ranks") != [2]:
            failures.append(f"ptprof report {out}: exit {p.returncode}, cross_rank {cross} "
                            f"{p.stderr[-300:]}")
        else:
            print("ok ptprof report names rank 2 of 3 missing")
    own = glob.glob(os.path.join(work, "own_*", "*.pt.trace.json*"))
    if own:
        failures.append(f"on-demand-only ranks wrote their own schedule's windows: {own}")
    for f in failures:
        print("FAIL", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
