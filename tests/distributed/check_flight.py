#!/usr/bin/env python3
"""The flight recorder on the data-parallel example over Gloo (issue 27), each case a few seconds:

  - 4 ranks, rank 2 made to stop inside forward for 3 s before its all-reduce (hang threshold
    1 s): every rank's watchdog dumps, training goes on and the job ends normally; the stuck
    rank's dump and the others' name it and the all-reduce, with the same sequence number;
    'ptprof report DIR' gives the verdict; the dumps' traces read back, and 'ptprof merge' takes
    the directory;
  - 2 ranks, rank 1's worker thread writes through a null pointer inside an op: rank 1 still dies
    of SIGSEGV, its raw dump is there, reads back (ptprof flight DUMP -o) and ends in the faulting
    op; the report names the crash;
  - 2 ranks, a failed TORCH_CHECK nobody catches on rank 1: it dies of SIGABRT, and its dump says
    why, with the check's message;
  - 2 ranks with PTPROF_FLIGHT_RECORDER=1 (and _HANG_S) instead of the example's Options: rank 1
    stalls, both ranks' dumps name it.

usage: check_flight.py DDP_EXAMPLE PTPROF_CLI WORKDIR
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

failures = []


def check(ok, what):
    print(("ok " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def run_job(example, logdir, world_size, *extra, expect_ok=True, env=None):
    shutil.rmtree(logdir, ignore_errors=True)
    flight = [] if env else ["--flight"]  # the environment's recorder, or the example's Options
    cmd = [example, logdir, "--world-size", str(world_size), *flight, *extra]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, **env) if env else None)
    print(p.stdout, end="")
    print(p.stderr[-3000:], end="")
    if expect_ok:
        check(p.returncode == 0, f"{' '.join(cmd[1:])}: exit {p.returncode}")
    return p


def cli_json(cli, *args):
    p = subprocess.run([cli, *args, "--json"], capture_output=True, text=True)
    check(p.returncode == 0, f"ptprof {' '.join(args)} --json: exit {p.returncode} {p.stderr[-300:]}")
    return json.loads(p.stdout) if p.returncode == 0 else {}


def stalled_rank(example, cli, work):
    log = os.path.join(work, "stall")
    run_job(example, log, 4, "--steps", "8", "--hang-s", "1", "--stall-rank", "2",
            "--stall-step", "5", "--stall-ms", "3000")
    flight = os.path.join(log, "flight")
    dumps = sorted(glob.glob(os.path.join(flight, "*.ptflight")))
    ranks = sorted({int(re.search(r"_rank(\d+)\.", os.path.basename(d)).group(1)) for d in dumps})
    check(ranks == [0, 1, 2, 3], f"every rank's watchdog dumped ({ranks}, {len(dumps)} dumps)")
    # Training went on after the stall: every rank saved its scheduled window and finished.
    check(len(glob.glob(os.path.join(log, "*.pt.trace.json*"))) == 4,
          "the job finished after the stall, each rank's window written")

    r = cli_json(cli, "report", flight)
    if not r:
        return
    print(r["verdict"])
    wait = r["waiting_in"] or {}
    check(r["not_entered"] == [2], f"rank 2 never entered the collective ({r['not_entered']})")
    check(r["waiting_ranks"] == [0, 1, 3], f"ranks 0, 1, 3 wait in it ({r['waiting_ranks']})")
    check(wait.get("name") == "allreduce" and wait.get("group") == "0" and wait.get("seq", -1) >= 0,
          f"the collective is the default group's allreduce with its number ({wait})")
    check(r["verdict"] == f"rank 2 is stuck in stuck_on_purpose inside forward; ranks 0-1 and 3 "
                          f"wait in allreduce #{wait.get('seq')} for it", f"verdict: {r['verdict']}")
    by_rank = {x["rank"]: x for x in r["ranks"]}
    # Its own dump: inside forward, stuck, its last collective the one before the others'.
    mine = by_rank.get(2, {})
    check(mine.get("reason") == "hang" and mine.get("position") == "stuck_on_purpose inside forward",
          f"rank 2's own dump: {mine.get('reason')}, {mine.get('position')!r}")
    last = [c for c in mine.get("collectives", []) if c["seq"] >= 0]
    check(bool(last) and last[-1]["seq"] == wait.get("seq", 0) - 1,
          f"rank 2's last collective is #{last[-1]['seq'] if last else None}, one before the others'")
    for k in (0, 1, 3):
        other = by_rank.get(k, {})
        gloo = [o["name"] for t in other.get("threads", []) for o in t["open"]]
        check("gloo:all_reduce" in gloo, f"rank {k} is in gloo:all_reduce at its dump ({gloo})")
    # The dumps' traces are traces: read back, unfinished ops marked, and merged.
    traces = sorted(glob.glob(os.path.join(flight, "*.pt.trace.json.gz")))
    check(len(traces) == len(dumps), f"a trace beside each dump ({len(traces)} of {len(dumps)})")
    if traces:
        with gzip.open(mine.get("trace") or traces[0], "rt") as f:
            t = json.load(f)
        stuck = [e for e in t["traceEvents"] if e.get("name") == "stuck_on_purpose"]
        check(bool(stuck) and stuck[-1].get("args", {}).get("finished") is False,
              "rank 2's trace has stuck_on_purpose, unfinished at the dump")
        check(json.loads(json.dumps(t.get("ptprof_flight", {}))).get("reason") == "hang",
              "the trace says why it was written (ptprof_flight)")
    merged = os.path.join(work, "stall.merged.pt.trace.json")
    p = subprocess.run([cli, "merge", flight, "-o", merged], capture_output=True, text=True)
    check(p.returncode == 0, f"ptprof merge of the dumps: exit {p.returncode} {p.stderr[-300:]}")


def crashed_rank(example, cli, work, how, sig):
    log = os.path.join(work, "crash_" + how)
    p = run_job(example, log, 2, "--steps", "6", "--timeout-s", "5", "--crash-rank", "1",
                "--crash-step", "4", "--crash", how, expect_ok=False)
    check(f"rank 1 killed by signal {int(sig)}" in p.stderr,
          f"rank 1 still dies of {sig.name} ({p.stderr.strip().splitlines()[-2:]})")
    flight = os.path.join(log, "flight")
    dumps = sorted(glob.glob(os.path.join(flight, "*_rank1.*.ptflight")))
    check(len(dumps) == 1, f"rank 1 wrote one dump ({dumps})")
    if not dumps:
        return
    d = cli_json(cli, "flight", dumps[0])
    if how == "segv":
        check(d.get("reason") == "crash" and d.get("signal") == int(sig), f"a crash's dump: {d.get('reason')}")
        check(d.get("position") == "ddp_example::faulting_op inside worker_task",
              f"it ends in the faulting op ({d.get('position')!r})")
        crashed = [t for t in d.get("threads", []) if t["crashed"]]
        check(len(crashed) == 1 and crashed[0]["open"][0]["name"] == "ddp_example::faulting_op",
              "the crashed thread's innermost op is the faulting one")
    else:
        check(d.get("reason") == "terminate" and "the bucket's shapes differ" in d.get("message", ""),
              f"the abort's dump says why: {d.get('reason')}, {d.get('message', '')[:120]!r}")
    out = os.path.join(work, f"crash_{how}.pt.trace.json")
    p = subprocess.run([cli, "flight", dumps[0], "-o", out], capture_output=True, text=True)
    check(p.returncode == 0 and os.path.exists(out), f"ptprof flight DUMP -o: exit {p.returncode}")
    if os.path.exists(out):
        with open(out) as f:
            t = json.load(f)
        names = [e.get("name") for e in t["traceEvents"] if e.get("ph") == "X"]
        check("aten::mm" in names or "aten::addmm" in names,
              f"the raw rings hold the rank's last ops ({len(names)} events)")
    r = cli_json(cli, "report", flight)
    if r:
        print(r["verdict"])
        want = "crashed with SIGSEGV" if how == "segv" else "ended in std::terminate"
        check(f"rank 1 {want}" in r["verdict"], f"the verdict names rank 1's end: {r['verdict']}")


def from_environment(example, cli, work):
    """PTPROF_FLIGHT_RECORDER=1 and no --flight: the launcher's process has the recorder from
    its start (it never steps, so it never dumps), each forked rank's session takes it over
    with its rank, and the hang threshold comes from PTPROF_FLIGHT_RECORDER_HANG_S."""
    log = os.path.join(work, "env")
    run_job(example, log, 2, "--steps", "6", "--stall-rank", "1", "--stall-step", "3",
            "--stall-ms", "2500", env={"PTPROF_FLIGHT_RECORDER": "1",
                                       "PTPROF_FLIGHT_RECORDER_HANG_S": "1",
                                       "PTPROF_LOGDIR": log})
    flight = os.path.join(log, "flight")
    names = sorted(os.listdir(flight)) if os.path.isdir(flight) else []
    dumps = [n for n in names if n.endswith(".ptflight")]
    check(len(dumps) == 2 and all(re.search(r"_rank[01]\.", n) for n in dumps),
          f"each rank dumped once, under its rank's name ({dumps})")
    check(all(n.endswith((".ptflight", ".pt.trace.json.gz")) for n in names),
          f"nothing else is left there, no temporary file ({names})")
    r = cli_json(cli, "report", flight)
    if r:
        print(r["verdict"])
        check(r["not_entered"] == [1] and r["verdict"].startswith(
            "rank 1 is stuck in stuck_on_purpose inside forward; rank 0 waits in allreduce #"),
            f"the verdict names rank 1: {r['verdict']}")


def main():
    example, cli, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    stalled_rank(example, cli, work)
    from_environment(example, cli, work)
    crashed_rank(example, cli, work, "segv", signal.SIGSEGV)
    crashed_rank(example, cli, work, "check", signal.SIGABRT)
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
