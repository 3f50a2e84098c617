"""Reads `scripts/bench instructions`' callgrind dumps: instructions per step of each
bench_step configuration against the no-profiler run just before it, and each option's
instructions above its floor, ptprof's against libtorch's.

    python3 bench/instructions_table.py DIR   (DIR: plan.txt and cg.out.* from bench_step)
"""
import glob
import json
import os
import re
import sys


def dumps(d):
    """{dump name: (total Ir, file)} from callgrind's dump files."""
    out = {}
    for f in glob.glob(os.path.join(d, "cg.out*")):
        name, total = None, None
        with open(f) as fh:
            for line in fh:
                if line.startswith("desc: Trigger: Client Request: "):
                    name = line.split(": ", 3)[3].strip()
                elif line.startswith("summary:"):
                    total = int(line.split()[1])
        if name is not None and total is not None:
            out[name] = (total, f)
    return out


def ptprof_share(f):
    """Instructions inside ptprof's RecordFunction callbacks and memory reporter, callees
    included (their own work, not the dispatcher's around them): the inclusive cost callgrind
    writes after each call to them."""
    names, callee, caller, pending, total = {}, None, None, False, 0
    ours = re.compile(r"ptprof::detail::\(anonymous namespace\)::(on_enter|on_exit)\(|"
                      r"MemoryReporter::reportMemoryUsage\(")
    with open(f) as fh:
        for line in fh:
            m = re.match(r"(c?fn)=\((\d+)\)(?: (.*))?", line)
            if m:
                if m.group(3):
                    names[m.group(2)] = m.group(3)
                if m.group(1) == "cfn":
                    callee = names.get(m.group(2), "")
                else:
                    caller, callee = names.get(m.group(2), ""), None
                continue
            if line.startswith("calls="):
                pending = True
                continue
            if pending:
                pending = False
                if callee and ours.search(callee) and not ours.search(caller or ""):
                    total += int(line.split()[1])
    return total


def main():
    d = sys.argv[1]
    plan = [l.split() for l in open(os.path.join(d, "plan.txt")) if l.startswith("option ")]
    steps = int(next((l.split()[1] for l in open(os.path.join(d, "plan.txt"))
                      if l.startswith("steps ")), "1"))
    dm = dumps(d)
    configs = [n for n in dm if not n.startswith("baseline ")]
    # In the order they ran: callgrind numbers its dumps.
    configs.sort(key=lambda n: int(dm[n][1].rsplit(".", 1)[1]))
    added = {}
    base = []
    for c in configs:
        b = dm.get("baseline " + c)
        if not b:
            continue
        base.append(b[0])
        added[c] = (dm[c][0] - b[0]) / steps
    step = sorted(base)[len(base) // 2] / steps
    print(f"training step with no profiler: {step / 1e6:.2f} M instructions "
          f"(callgrind, {steps} steps per run, median of {len(base)} runs)")
    print(f"\n{'configuration':22} {'added per step':>16} {'% of step':>10} {'in callbacks':>13}")
    for c in configs:
        share = ptprof_share(dm[c][1]) if c.startswith("ptprof_") else None
        cb = f"{share / steps / 1e3:10.0f} k" if share else ""
        print(f"{c:22} {added[c] / 1e3:14.0f} k {100 * added[c] / step:9.2f}% {cb:>13}")
    print(f"\n{'option':15} {'floor':20} {'ptprof-floor':>13} {'libtorch-floor':>15} {'ratio':>7}")
    rows = {}
    for _, option, floor in plan:
        p, l = "ptprof_" + option, "libtorch_" + option
        if p not in added or l not in added or floor not in added:
            continue
        pa, la = added[p] - added[floor], added[l] - added[floor]
        ratio = pa / la if la > 0 else 0
        rows[option] = {"floor": floor, "ptprof_above_floor_pct": 100 * pa / step,
                        "libtorch_above_floor_pct": 100 * la / step, "ratio": ratio}
        print(f"{option:15} {floor:20} {100 * pa / step:12.2f}% {100 * la / step:14.2f}% "
              f"{ratio:7.2f}")
    print("\ngoal: ptprof above the floor <= 0.25 x libtorch's above the floor, per option")
    if os.environ.get("PTPROF_BENCH_JSON"):
        json.dump({"step_instructions": step, "options": rows,
                   "added_pct": {c: 100 * added[c] / step for c in added}},
                  open(os.environ["PTPROF_BENCH_JSON"], "w"), indent=1)


main()
