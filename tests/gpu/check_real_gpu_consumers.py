#!/usr/bin/env python3
"""Loads a ptprof GPU trace written on a real GPU (tests/gpu/fixtures/h200/tb/, from
scripts/gpu-check on an H200) into TensorBoard's PyTorch Profiler plugin, both the release on
PyPI (torch-tb-profiler 0.4.3) and its last source, and into Holistic Trace Analysis, and holds
what they show against the trace's own events.

  check_real_gpu_consumers.py --tb-dir DIR --plugin-src DIR [--chrome-trace TRACE]

Checks (each failure printed as "FAIL <check>: ..."):
  steps          each plugin shows the trace's ProfilerStep#N steps, each once
  kernel_view    each plugin's Kernel view lists every kernel: calls and total time per name
  op_gpu_time    the Operator view gives each op the GPU time of the kernels, copies and
                 memsets it launched through a runtime call (the plugin drops cuda_driver
                 events); the release knows runtime calls only as "Runtime" (what ptprof's
                 TensorBoard files write): on a file with cuda_runtime it shows 0 for all,
                 which is printed, not held
  step_kernel    the last source's overview: Kernel time per step as the trace has it
  hta            HTA's temporal breakdown adds up, its compute time is the trace's, and its idle
                 breakdown covers the streams that ran kernels
  step_spans     (with --chrome-trace) the chrome_trace_handler file of the same window has the
                 GPU spans of the steps, the TensorBoard file has not
Exit status: 0 all passed, 1 a check failed, 2 bad usage or a consumer is missing.
"""

import argparse
import collections
import glob
import gzip
import json
import logging
import os
import subprocess
import sys
import tempfile


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def plugin_view(trace_path, plugin_src):
    """Runs in a child: the plugin's run profile for one file, as plain JSON."""
    if plugin_src:
        sys.path.insert(0, plugin_src)
    import warnings
    warnings.simplefilter("ignore")
    logging.disable(logging.WARNING)
    from torch_tb_profiler.profiler.data import RunProfileData
    from torch_tb_profiler.profiler.run_generator import RunGenerator
    with tempfile.TemporaryDirectory() as tmp:
        parsed = RunProfileData.parse("w", 1, trace_path, tmp)
        data = parsed[0] if isinstance(parsed, tuple) else parsed
        p = RunGenerator("w", 1, data).generate_run_profile()
        kernel_rows = p.kernel_table["data"]["rows"] if p.kernel_table else []
        steps = p.overview["steps"]
        cols = [col.get("name") for col in steps["columns"]]  # tooltip columns have none
        per_step = [{k: v for k, v in zip(cols, row) if k} for row in steps["rows"]]
        return {
            "views": [v.display_name for v in p.views],
            "steps": list(data.steps_names),
            "kernels": [{"name": r[0], "calls": r[2], "total": r[3]} for r in kernel_rows],
            "ops": {r["name"]: r["device_self_duration"] for r in p.operation_table_by_name["data"]},
            "overview_steps": per_step,
        }


def trace_facts(doc):
    """What the consumers should show, from the trace's own events."""
    ev = doc["traceEvents"]
    xs = [e for e in ev if e.get("ph") == "X"]
    ops = {e["args"]["External id"]: e for e in xs
           if e.get("cat") in ("cpu_op", "user_annotation") and "External id" in e.get("args", {})}
    gpu = [e for e in xs if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    kernels = [e for e in gpu if e["cat"] == "kernel"]
    calls = {e["args"]["correlation"]: e for e in xs
             if e.get("cat") in ("cuda_runtime", "cuda_driver", "Runtime")
             and "correlation" in e.get("args", {})}
    # The plugin keeps no cuda_driver event, so work launched through the driver API (cuBLASLt
    # launches some of its kernels with cuLaunchKernel) is no op's GPU time there unless the
    # call is written as "Runtime" (ptprof's TensorBoard files write both kinds so).
    op_gpu = collections.defaultdict(float)
    for g in gpu:
        op = ops.get(g["args"].get("External id"))
        call = calls.get(g["args"].get("correlation"))
        if op is not None and op["cat"] == "cpu_op" and call is not None \
                and call["cat"] in ("cuda_runtime", "Runtime"):
            op_gpu[op["name"]] += g["dur"]
    steps = sorted((e for e in xs if e.get("cat") == "user_annotation"
                    and e["name"].startswith("ProfilerStep#")), key=lambda e: e["ts"])
    step_kernel = collections.defaultdict(float)
    step_kernels = collections.Counter()
    for k in kernels:
        c = calls.get(k["args"].get("correlation"))
        for s in steps:
            if c is not None and s["ts"] <= c["ts"] <= s["ts"] + s["dur"]:
                step_kernel[s["name"].split("#")[1]] += k["dur"]
                step_kernels[s["name"].split("#")[1]] += 1
    per_name = collections.defaultdict(lambda: [0, 0.0])
    for k in kernels:
        per_name[k["name"]][0] += 1
        per_name[k["name"]][1] += k["dur"]
    return {
        "steps": [s["name"].split("#")[1] for s in steps],
        "kernels": kernels,
        "kernels_per_name": per_name,
        "op_gpu": op_gpu,
        "step_kernel": step_kernel,
        "step_kernels": step_kernels,
        "streams": sorted({(k["pid"], k["tid"]) for k in kernels}),
        # The release knows runtime calls only by the legacy category "Runtime".
        "release_reads_runtime": any(e.get("cat") == "Runtime" for e in xs),
    }


class Checks:
    def __init__(self):
        self.failures = 0

    def expect(self, ok, check, message):
        if not ok:
            self.failures += 1
            print("FAIL %s: %s" % (check, message))
        return ok


def check_plugin(c, label, view, facts, gpu_time_expected):
    c.expect(view["steps"] == facts["steps"], "steps",
             "%s shows steps %s, the trace has %s" % (label, view["steps"], facts["steps"]))
    c.expect("Kernel" in view["views"], "kernel_view", "%s has no Kernel view" % label)
    shown = {r["name"]: r for r in view["kernels"]}
    for name, (calls, total) in facts["kernels_per_name"].items():
        r = shown.get(name)
        if not c.expect(r is not None, "kernel_view", "%s lists no kernel %s" % (label, name[:60])):
            continue
        c.expect(r["calls"] == calls, "kernel_view", "%s: %s has %d calls, the trace %d"
                 % (label, name[:60], r["calls"], calls))
        # The view rounds each total to whole microseconds.
        c.expect(abs(r["total"] - total) <= 1.0, "kernel_view", "%s: %s totals %s us, the trace %.3f"
                 % (label, name[:60], r["total"], total))
    nonzero = sum(1 for v in view["ops"].values() if v)
    if not gpu_time_expected:
        print("%s: %d of %d ops show GPU time (the file's runtime calls are cuda_runtime, which "
              "the release does not map)" % (label, nonzero, len(view["ops"])))
        return
    for name, us in facts["op_gpu"].items():
        got = view["ops"].get(name)
        c.expect(got is not None and abs(got - us) <= 1.0 + 0.01 * us, "op_gpu_time",
                 "%s: %s has %s us of GPU time, the trace %.3f" % (label, name, got, us))
    # The overview leaves out the last step (it may not have all its kernels).
    for row in view["overview_steps"]:
        want = facts["step_kernel"].get(str(row["Step"]))
        c.expect(want is not None and abs(row["Kernel"] - want) <= 1.0 + 0.01 * want, "step_kernel",
                 "%s: step %s Kernel %.3f us, the trace %s" % (label, row["Step"], row["Kernel"], want))
    print("%s: %d steps, %d kernel names, %d ops with GPU time, overview of %d steps"
          % (label, len(view["steps"]), len(view["kernels"]), nonzero, len(view["overview_steps"])))


def check_hta(c, tb_dir, facts):
    logging.disable(logging.WARNING)
    from hta.trace_analysis import TraceAnalysis
    ta = TraceAnalysis(trace_dir=tb_dir)
    tb = ta.get_temporal_breakdown(visualize=False)
    c.expect(len(tb) == 1, "hta", "temporal breakdown has %d rows, expected one rank" % len(tb))
    row = tb.iloc[0]
    parts = row["idle_time(us)"] + row["compute_time(us)"] + row["non_compute_time(us)"]
    c.expect(abs(parts - row["kernel_time(us)"]) <= 3, "hta",
             "idle + compute + non-compute = %s us, not the %s us span" % (parts, row["kernel_time(us)"]))
    # HTA leaves out the last step and rounds each kernel's times to whole microseconds (up to
    # 1 us lost per kernel: this trace's many 1-2 us kernels lose about a quarter).
    kept = set(facts["steps"][:-1])
    compute = sum(facts["step_kernel"][s] for s in kept)
    kept_kernels = sum(facts["step_kernels"][s] for s in kept)
    c.expect(abs(row["compute_time(us)"] - compute) <= 0.02 * compute + kept_kernels,
             "hta", "compute time %s us, the trace's kernels of steps %s: %.1f us"
             % (row["compute_time(us)"], sorted(kept), compute))
    idle = ta.get_idle_time_breakdown(visualize=False)
    idle = idle[0] if isinstance(idle, tuple) else idle
    streams = sorted(set(int(s) for s in idle["stream"]))
    c.expect(streams == sorted({tid for _, tid in facts["streams"]}), "hta",
             "idle breakdown covers streams %s, kernels ran on %s" % (streams, facts["streams"]))
    print("hta: kernel span %s us, compute %s us (trace %.1f), idle %s%%, idle classes %s"
          % (row["kernel_time(us)"], row["compute_time(us)"], compute, row["idle_time_pctg"],
             sorted(set(idle["idle_category"]))))


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tb-dir", help="the run directory holding one tensorboard_trace_handler file")
    p.add_argument("--plugin-src", help="the plugin's last source (holds torch_tb_profiler/)")
    p.add_argument("--chrome-trace", help="chrome_trace_handler's file of the same window")
    p.add_argument("--plugin-view", nargs=2, metavar=("TRACE", "SRC"), help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.plugin_view:
        json.dump(plugin_view(a.plugin_view[0], a.plugin_view[1] or None), sys.stdout)
        return 0
    if not a.tb_dir or not a.plugin_src:
        p.error("--tb-dir and --plugin-src are needed")
    files = glob.glob(os.path.join(a.tb_dir, "*.pt.trace.json*"))
    if len(files) != 1:
        print("check_real_gpu_consumers: expected one trace in %s, found %d" % (a.tb_dir, len(files)))
        return 2
    facts = trace_facts(load(files[0]))
    c = Checks()
    for label, src in (("torch-tb-profiler 0.4.3", ""), ("plugin last source", a.plugin_src)):
        r = subprocess.run([sys.executable, __file__, "--plugin-view", files[0], src],
                           capture_output=True, text=True)
        if r.returncode != 0:
            c.expect(False, "plugin", "%s failed to load the trace:\n%s" % (label, r.stderr[-2000:]))
            continue
        check_plugin(c, label, json.loads(r.stdout), facts,
                     gpu_time_expected=bool(src) or facts["release_reads_runtime"])
    check_hta(c, a.tb_dir, facts)
    if a.chrome_trace:
        def step_spans(doc):
            return sum(1 for e in doc["traceEvents"] if e.get("cat") == "gpu_user_annotation"
                       and e["name"].startswith("ProfilerStep#"))
        chrome, tb = step_spans(load(a.chrome_trace)), step_spans(load(files[0]))
        c.expect(chrome == len(facts["steps"]) and tb == 0, "step_spans",
                 "GPU spans of steps: %d in the chrome_trace_handler file (want %d), %d in "
                 "TensorBoard's (want 0)" % (chrome, len(facts["steps"]), tb))
    print("PASS" if not c.failures else "FAILED: %d check(s)" % c.failures)
    return 1 if c.failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
