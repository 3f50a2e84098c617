#!/usr/bin/env python3
"""The data-parallel example as 2 and 4 Gloo ranks on this machine, every rank profiled into one
log directory, and what the consumers make of it (issue 17):

  - each rank's trace has torch.profiler's distributedInfo (backend gloo, its rank, world size,
    pg_count and pg_config of the default group), HTA finds every rank, and TensorBoard's plugin
    (the release on PyPI) builds its Distributed view from the gloo:all_reduce of each worker;
  - with rank 2 of 4 made slow on purpose, 'ptprof report DIR' names rank 2 as the straggler at
    every all-reduce and straggler_extra_work as what it was doing, and 'ptprof merge' writes one
    timeline of the four ranks.

usage: check_ddp.py DDP_EXAMPLE PTPROF_CLI WORKDIR
"""
import glob
import gzip
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "consumers"))

failures = []


def check(ok, what):
    print(("ok " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def run_job(example, logdir, world_size, *extra):
    shutil.rmtree(logdir, ignore_errors=True)
    cmd = [example, logdir, "--world-size", str(world_size), *extra]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    print(p.stdout, end="")
    if p.returncode != 0:
        print(p.stderr, end="")
    check(p.returncode == 0, f"{' '.join(cmd[1:])}: exit {p.returncode}")
    return sorted(glob.glob(os.path.join(logdir, "*.pt.trace.json*")))


def check_ranks(logdir, files, world_size):
    check(len(files) == world_size, f"{world_size} traces in {logdir} (found {len(files)})")
    ranks = []
    for f in files:
        t = load(f)
        info = t.get("distributedInfo", {})
        rank = info.get("rank")
        ranks.append(rank)
        want = {"backend": "gloo", "rank": rank, "world_size": world_size, "pg_count": 1,
                "pg_config": [{"pg_name": "0", "pg_desc": "default_pg", "backend_config": "cpu:gloo",
                               "pg_size": world_size, "ranks": list(range(world_size))}]}
        check(info == want, f"{os.path.basename(f)}: distributedInfo {info}")
        check(f"_rank{rank}." in os.path.basename(f), f"{os.path.basename(f)}: the worker name has the rank")
        with open(f, "rt") if not f.endswith(".gz") else gzip.open(f, "rt") as fh:
            m = re.search(r'"rank":\s+(\d+)', fh.read())  # HTA's rank detection
        check(m is not None and int(m.group(1)) == rank, f"{os.path.basename(f)}: HTA's regex reads rank {rank}")
        events = t["traceEvents"]
        gloo = [e for e in events if e.get("name") == "gloo:all_reduce"]
        c10d = [e for e in events if e.get("name") == "c10d::allreduce_"]
        steps = [e for e in events if str(e.get("name", "")).startswith("ProfilerStep#")]
        check(len(steps) == 3 and len(gloo) == 3 and len(c10d) == 3,
              f"rank {rank}: 3 steps, 3 gloo:all_reduce, 3 c10d::allreduce_ (found {len(steps)}, "
              f"{len(gloo)}, {len(c10d)})")
        check(all(e.get("cat") == "user_annotation" for e in gloo) and
              all(e.get("cat") == "cpu_op" for e in c10d),
              f"rank {rank}: gloo:* are user_annotation and c10d::* cpu_op, as torch.profiler writes them")
    check(sorted(ranks) == list(range(world_size)), f"ranks {sorted(ranks)}")

    try:
        from hta.trace_analysis import TraceAnalysis
    except ImportError:
        print("skip HTA: not installed in this Python")
    else:
        found = sorted(TraceAnalysis(trace_dir=logdir).t.traces.keys())
        check(found == list(range(world_size)), f"HTA finds ranks {found}")

    try:
        from check_consumers import load_run_with_plugin
    except ImportError as e:
        print(f"skip TensorBoard's plugin: {e}")
    else:
        run = load_run_with_plugin("ddp", logdir, 300)
        workers = sorted(k[0] for k in run.profiles.keys() if k[0] != "All")
        dist = [p for k, p in run.profiles.items() if k[0] == "All"]
        check(len(workers) == world_size, f"TensorBoard's plugin loads {len(workers)} workers")
        check(len(dist) == 1, "TensorBoard's plugin has its Distributed view (comm ops on every worker)")


def check_collective_args(files):
    """With record_shapes, each c10d::allreduce_ carries its collective's arguments under
    PyTorch's names; the n-th all-reduce has the same Seq on every rank."""
    seqs = {}
    for f in files:
        t = load(f)
        rank = t["distributedInfo"]["rank"]
        ops = sorted((e for e in t["traceEvents"] if e.get("name") == "c10d::allreduce_"),
                     key=lambda e: e["ts"])
        a = ops[0]["args"] if ops else {}
        want = {"Collective name": "allreduce", "Group size": 2, "dtype": "Float",
                "In split size": "[]", "Out split size": "[]", "Process Group Name": "0",
                "Process Group Description": "default_pg", "Process Group Ranks": "[0, 1]",
                "Rank": rank}
        got = {k: a.get(k) for k in want}
        check(got == want, f"rank {rank}: c10d::allreduce_ args {got}")
        # One flat bucket of the MLP's gradients: 128*512+512 + 512*512+512 + 512*10+10.
        n = 128 * 512 + 512 + 512 * 512 + 512 + 512 * 10 + 10
        check(a.get("In msg nelems") == n and a.get("Out msg nelems") == n,
              f"rank {rank}: In/Out msg nelems {a.get('In msg nelems')}/{a.get('Out msg nelems')} == {n}")
        seqs[rank] = [e["args"].get("Seq") for e in ops]
    s = list(seqs.values())
    check(len(s) == 2 and s[0] == s[1] and len(s[0]) == 3 and
          all(isinstance(x, int) for x in s[0]) and s[0] == list(range(s[0][0], s[0][0] + 3)),
          f"Seq is consecutive and the same on both ranks ({seqs})")


def main():
    example, cli, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)

    log2 = os.path.join(work, "ddp2")
    files = run_job(example, log2, 2, "--record-shapes")
    check_ranks(log2, files, 2)
    check_collective_args(files)

    log4 = os.path.join(work, "ddp4")
    files = run_job(example, log4, 4, "--slow-rank", "2", "--slow-ms", "40")
    check_ranks(log4, files, 4)

    p = subprocess.run([cli, "report", log4, "--json"], capture_output=True, text=True)
    check(p.returncode == 0, f"ptprof report {log4} --json: exit {p.returncode} {p.stderr[-500:]}")
    if p.returncode == 0:
        cross = json.loads(p.stdout)["cross_rank"]
        s = cross["stragglers"]
        check(len(s) >= 1 and s[0]["rank"] == 2,
              f"the straggler is rank 2 (stragglers {[(x['rank'], x['collectives']) for x in s]})")
        check(len(s) >= 1 and s[0]["cause"] == "straggler_extra_work",
              f"rank 2 was running straggler_extra_work meanwhile (cause {s[0]['cause'] if s else None!r})")
        late = [c for c in cross["collectives"] if c["straggler"] == 2]
        check(len(cross["collectives"]) == 3 and len(late) == 3,
              f"rank 2 is last at the 3 all-reduces ({len(late)} of {len(cross['collectives'])})")
        # The others each lost about the 40 ms rank 2 spent, at every all-reduce.
        check(all(c["lost_ns"] >= 3 * 25e6 for c in late),
              f"the others lost >= 3 x 25 ms per all-reduce ({[c['lost_ns'] // 1000000 for c in late]} ms)")
    text = subprocess.run([cli, "report", log4], capture_output=True, text=True).stdout
    section = text[text.find("across ranks"):]
    print(section)
    check("rank 2: last at 3 of 3 collective(s)" in section, "the text report names rank 2")

    merged = os.path.join(work, "ddp4.merged.pt.trace.json")
    p = subprocess.run([cli, "merge", log4, "-o", merged], capture_output=True, text=True)
    print(p.stdout, end="")
    check(p.returncode == 0, f"ptprof merge: exit {p.returncode} {p.stderr[-500:]}")
    if p.returncode == 0:
        m = load(merged)
        names = sorted(e["args"]["name"].split(":")[0] for e in m["traceEvents"]
                       if e.get("ph") == "M" and e.get("name") == "process_name")
        check(names == ["rank 0", "rank 1", "rank 2", "rank 3"], f"merged processes {names}")
        check(m["ptprof_merge"]["missing_ranks"] == [], "no rank missing")

    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
