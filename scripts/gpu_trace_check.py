#!/usr/bin/env python3
"""Verifies a ptprof trace's GPU side, optionally against libtorch's own profiler's trace of the
same steps, and writes the figures scripts/gpu-check reports.

  gpu_trace_check.py --trace PTPROF_TRACE [--kineto KINETO_TRACE] [--run RUN_JSON] --out FIGURES_JSON

Checks (each failure is printed as "FAIL <check>: ..." and listed in the figures):
  kernels_present        the trace has kernels
  kernel_launch          every kernel's correlation names a cuda_runtime/cuda_driver call, with
                         an ac2g flow from that call to the kernel
  kernel_op              every kernel's External id names a cpu_op (or user range) of the trace
  kernel_after_launch    no kernel starts before the call that launched it
  runtime_in_op          (on ptprof's own clock) every call lies inside the op it is attributed to
  device_properties      deviceProperties covers every device kernels ran on; CUDA versions given
  kineto_kernel_count    as many kernels as libtorch's profiler saw for the same steps
  kineto_per_op          the same kernel count for every op name
  kernel_in_step         every kernel, copy and memset lies inside the ProfilerStep#N whose
                         CPU range holds its launch (the check's steps end in a device sync)
  step_on_gpu            each step with GPU work has its ProfilerStep#N gpu_user_annotation, and
                         user ranges are projected onto the GPU too
  conflict_warning       (with --run) ptprof asked for CUDA while libtorch's profiler ran: it
                         warned naming the conflict and still recorded the CPU side
  second_subscriber      (with --run) CUPTI held by another subscriber: ptprof warned, recorded
                         the CPU side only, and had CUPTI again once it was released
  launch_cost            (with --run) the launch-cost rounds ran and ptprof's saw its kernels
  no_gpu_fallback        (with --fallback) CUDA asked for with no GPU visible: one warning, a
                         CPU trace, no GPU events, and the trace says why
  kineto_teardown        (with --teardown) after libtorch's profiler ran with TEARDOWN_CUPTI=1,
                         a ptprof session has CUPTI again; without it, ptprof's warning names
                         TEARDOWN_CUPTI (with --run)
  all_options            (with --all-options) the trace with every option on has input shapes,
                         CUDA allocator events, C++ stacks, FLOPs, and correlated kernels
Exit status: 0 all checks passed, 1 a check failed, 2 bad usage or unreadable input.
"""

import argparse
import collections
import gzip
import json
import os
import sys


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return json.load(f)


class TraceView:
    """Indexes a Chrome trace in Kineto's layout: ops by External id, calls by correlation."""

    def __init__(self, doc):
        self.doc = doc
        events = doc.get("traceEvents", [])
        xs = [e for e in events if e.get("ph") == "X"]
        self.kernels = [e for e in xs if e.get("cat") == "kernel"]
        self.copies = [e for e in xs if e.get("cat") in ("gpu_memcpy", "gpu_memset")]
        self.calls = {}
        self.calls_list = []
        for e in xs:
            if e.get("cat") in ("cuda_runtime", "cuda_driver"):
                self.calls_list.append(e)
                c = e.get("args", {}).get("correlation")
                if c is not None:
                    self.calls.setdefault(c, e)
        self.ops = {}
        for e in xs:
            if e.get("cat") in ("cpu_op", "user_annotation"):
                i = e.get("args", {}).get("External id")
                if i is not None:
                    self.ops.setdefault(i, e)
        self.flow_starts = collections.defaultdict(list)
        self.flow_ends = collections.defaultdict(list)
        for e in events:
            if e.get("cat") == "ac2g":
                (self.flow_starts if e.get("ph") == "s" else self.flow_ends)[e.get("id")].append(e)

    def op_of(self, event):
        return self.ops.get(event.get("args", {}).get("External id"))

    def kernels_per_op(self):
        counts = collections.Counter()
        for k in self.kernels:
            op = self.op_of(k)
            counts[op["name"] if op else "<no op>"] += 1
        return counts


def pct(part, whole):
    return round(100.0 * part / whole, 3) if whole else 0.0


def check_run(run, figures, fail):
    """The figures and checks of gpu_train_check's run.json."""
    for key in ("steps", "baseline_step_ms", "ptprof_step_ms", "kineto_step_ms",
                "after_kineto_kernels", "after_kineto_warnings", "ptprof_warnings",
                "all_options_warnings", "launch_us_median", "launches_per_round",
                "launch_ptprof_kernels", "subscriber_warnings"):
        if key in run:
            figures[key] = run[key]
    base = run.get("baseline_step_ms") or 0
    if base:
        figures["ptprof_overhead_pct"] = round(100.0 * (run["ptprof_step_ms"] - base) / base, 2)
        figures["kineto_overhead_pct"] = round(100.0 * (run["kineto_step_ms"] - base) / base, 2)
    warnings = run.get("conflict_warnings", [])
    figures["conflict_warnings"] = warnings
    if not any("libtorch's own profiler" in w for w in warnings):
        fail("conflict_warning", "no warning named libtorch's profiler: %s" % warnings)
    if run.get("conflict_cpu_events", 0) == 0 or run.get("conflict_gpu_events", 0) != 0:
        fail("conflict_warning", "expected CPU events only, got %d CPU, %d GPU"
             % (run.get("conflict_cpu_events", 0), run.get("conflict_gpu_events", 0)))
    for key in ("ptprof_errors", "all_options_errors"):
        if run.get(key):
            fail(key, "a ptprof session reported errors: %s" % run[key])

    # Launch cost: each profiled round against the no-profiler round just before it.
    pairs = {}
    for name, base_key, key in (("ptprof", "launch_us_baseline_ptprof_rounds", "launch_us_ptprof"),
                                ("ptprof_cpu_only", "launch_us_baseline_ptprof_cpu_rounds",
                                 "launch_us_ptprof_cpu"),
                                ("kineto", "launch_us_baseline_kineto_rounds", "launch_us_kineto")):
        b, p = run.get(base_key) or [], run.get(key) or []
        if b and len(b) == len(p):
            deltas = sorted(x - y for x, y in zip(p, b))
            pairs[name] = deltas[len(deltas) // 2]
    if "launch_us_ptprof" in run:
        if "ptprof" not in pairs or "kineto" not in pairs:
            fail("launch_cost", "the launch-cost rounds are missing or unpaired")
        else:
            figures["launch_overhead_us"] = {k: round(v, 3) for k, v in pairs.items()}
            if pairs["kineto"] > 0:
                figures["launch_overhead_ratio_ptprof_over_kineto"] = round(
                    pairs["ptprof"] / pairs["kineto"], 3)
        if run.get("launch_ptprof_kernels", 0) < run.get("launches_per_round", 1):
            fail("launch_cost", "ptprof's launch round saw %d kernels for %d launches"
                 % (run.get("launch_ptprof_kernels", 0), run.get("launches_per_round", 0)))

    if run.get("subscriber_tested"):
        w = run.get("subscriber_warnings", [])
        if not any("already in use" in x for x in w):
            fail("second_subscriber", "no warning named the other subscriber: %s" % w)
        if run.get("subscriber_cpu_events", 0) == 0 or run.get("subscriber_gpu_events", 0) != 0:
            fail("second_subscriber", "expected CPU events only, got %d CPU, %d GPU"
                 % (run.get("subscriber_cpu_events", 0), run.get("subscriber_gpu_events", 0)))
        if run.get("released_kernels", 0) == 0:
            fail("second_subscriber", "no kernels once the other subscriber was released")
    figures["second_subscriber_tested"] = bool(run.get("subscriber_tested"))


def check_fallback(fb, figures, fail, base_dir="."):
    """CUDA asked for with no GPU visible (gpu_train_check --fallback's fallback.json); a relative
    trace path is taken from beside that file."""
    figures["fallback_warnings"] = fb.get("warnings", [])
    if fb.get("errors"):
        fail("no_gpu_fallback", "the session reported errors: %s" % fb["errors"])
    if len(fb.get("warnings", [])) != 1:
        fail("no_gpu_fallback", "expected one warning, got %s" % fb.get("warnings"))
    if fb.get("cpu_events", 0) == 0 or fb.get("gpu_events", 0) != 0:
        fail("no_gpu_fallback", "expected CPU events only, got %d CPU, %d GPU"
             % (fb.get("cpu_events", 0), fb.get("gpu_events", 0)))
    try:
        doc = load(os.path.join(base_dir, fb.get("trace", "")))
    except (OSError, ValueError) as e:
        fail("no_gpu_fallback", "no readable CPU trace: %s" % e)
        return
    why = doc.get("ptprof_gpu_unavailable") or ""
    figures["fallback_trace_says"] = why
    if not why:
        fail("no_gpu_fallback", "the CPU trace does not say why GPU data is absent")


def check_all_options(doc, figures, fail):
    """The trace with record_shapes, profile_memory, with_stack and with_flops on, on CUDA."""
    events = doc.get("traceEvents", [])
    ops = [e for e in events if e.get("ph") == "X" and e.get("cat") == "cpu_op"]
    memory = [e for e in events if e.get("ph") == "i" and e.get("name") == "[memory]"]
    cuda_memory = [e for e in memory if e.get("args", {}).get("Device Type") == 1]
    got = {
        "ops": len(ops),
        "ops_with_input_dims": sum("Input Dims" in e.get("args", {}) for e in ops),
        "ops_with_call_stack": sum("Call stack" in e.get("args", {}) for e in ops),
        "ops_with_flops": sum("flops" in e.get("args", {}) for e in ops),
        "memory_events": len(memory),
        "cuda_memory_events": len(cuda_memory),
        "kernels": sum(1 for e in events if e.get("cat") == "kernel"),
    }
    figures["all_options"] = got
    for key in ("ops_with_input_dims", "ops_with_call_stack", "ops_with_flops",
                "cuda_memory_events", "kernels"):
        if got[key] == 0:
            fail("all_options", "the all-options trace has no %s" % key.replace("_", " "))
    sub_figures, sub_failures = verify(doc)
    for x in sub_failures:
        fail("all_options", "%s: %s" % (x["check"], x["message"]))
    figures["all_options"]["kernels_correlated_pct"] = sub_figures["kernels_correlated_pct"]


def check_teardown(run, teardown, figures, fail):
    """libtorch's profiler keeps CUPTI unless TEARDOWN_CUPTI=1; ptprof says so, and works with it."""
    if teardown is not None:
        figures["teardown_after_kineto_kernels"] = teardown.get("after_kineto_kernels", 0)
        if teardown.get("after_kineto_kernels", 0) == 0:
            fail("kineto_teardown", "no kernels after libtorch's profiler ran with "
                 "TEARDOWN_CUPTI=1: %s" % teardown.get("after_kineto_warnings"))
    if run is not None and run.get("after_kineto_kernels", 0) == 0:
        w = run.get("after_kineto_warnings", [])
        if not any("TEARDOWN_CUPTI" in x for x in w):
            fail("kineto_teardown", "ptprof lost CUPTI to libtorch's profiler without naming "
                 "TEARDOWN_CUPTI: %s" % w)


def verify(trace, kineto=None, run=None, fallback=None, all_options=None, teardown=None,
           fallback_dir="."):
    """Returns (figures, failures)."""
    failures = []

    def fail(check, message):
        failures.append({"check": check, "message": message})

    t = TraceView(trace)
    n = len(t.kernels)
    with_launch = with_op = before_launch = with_flow = 0
    examples = collections.defaultdict(list)
    for k in t.kernels:
        args = k.get("args", {})
        corr = args.get("correlation")
        call = t.calls.get(corr)
        if call is not None:
            with_launch += 1
            starts = [s for s in t.flow_starts.get(corr, [])
                      if s.get("pid") == call.get("pid") and s.get("tid") == call.get("tid")]
            ends = [f for f in t.flow_ends.get(corr, [])
                    if f.get("pid") == k.get("pid") and f.get("tid") == k.get("tid")]
            if starts and ends:
                with_flow += 1
            else:
                examples["kernel_launch"].append(k["name"])
            if k["ts"] < call["ts"]:
                before_launch += 1
                examples["kernel_after_launch"].append(k["name"])
        else:
            examples["kernel_launch"].append(k["name"])
        if t.op_of(k) is not None:
            with_op += 1
        else:
            examples["kernel_op"].append(k["name"])

    if n == 0:
        fail("kernels_present", "the trace has no kernels")
    if with_launch < n or with_flow < with_launch:
        fail("kernel_launch", "%d of %d kernels have no launching call or no ac2g flow (e.g. %s)"
             % (n - min(with_launch, with_flow), n, examples["kernel_launch"][:3]))
    if with_op < n:
        fail("kernel_op", "%d of %d kernels name no op (e.g. %s)"
             % (n - with_op, n, examples["kernel_op"][:3]))
    if before_launch:
        fail("kernel_after_launch", "%d kernels start before their launch (e.g. %s)"
             % (before_launch, examples["kernel_after_launch"][:3]))

    # Calls are CPU-timestamped by CUPTI; on ptprof's clock each lies inside its op. The ops'
    # times come from calibrated TSC ticks, the calls' from clock_gettime: 2 us of slack.
    slack_us = 2.0
    outside = 0
    for c in t.calls_list:
        op = t.op_of(c)
        if op is None:
            continue
        if (c["ts"] + slack_us < op["ts"]
                or c["ts"] + c.get("dur", 0) > op["ts"] + op.get("dur", 0) + slack_us):
            outside += 1
    own_clock = trace.get("ptprof_gpu_clock") == "cupti_timestamp_callback"
    if own_clock and outside:
        fail("runtime_in_op", "%d runtime/driver calls lie outside the op they are attributed to"
             % outside)

    devices = {d.get("id") for d in trace.get("deviceProperties", [])}
    used = {k.get("pid") for k in t.kernels}
    if not used <= devices:
        fail("device_properties", "deviceProperties lacks devices %s" % sorted(used - devices))
    missing = [m for m in ("cupti_version", "cuda_runtime_version", "cuda_driver_version")
               if m not in trace]
    if missing:
        fail("device_properties", "trace metadata lacks %s" % missing)

    # Steps: each GPU event lies inside the step whose CPU range holds its launch.
    steps = sorted((e for e in trace.get("traceEvents", [])
                    if e.get("ph") == "X" and e.get("cat") in ("user_annotation", "cpu_op")
                    and str(e.get("name", "")).startswith("ProfilerStep#")),
                   key=lambda e: e["ts"])
    step_slack_us = 50.0

    def step_of(ts):
        for s in steps:
            if s["ts"] <= ts <= s["ts"] + s.get("dur", 0):
                return s
        return None

    outside_step = 0
    steps_with_gpu = set()
    for g in t.kernels + t.copies:
        call = t.calls.get(g.get("args", {}).get("correlation"))
        s = step_of(call["ts"]) if call is not None else None
        if s is None:
            continue  # no launch (reported above) or launched outside every step
        steps_with_gpu.add(s["name"])
        if (g["ts"] + step_slack_us < s["ts"]
                or g["ts"] + g.get("dur", 0) > s["ts"] + s.get("dur", 0) + step_slack_us):
            outside_step += 1
            examples["kernel_in_step"].append(g["name"])
    if steps and outside_step:
        fail("kernel_in_step", "%d GPU events end after (or start before) the step that launched "
             "them (e.g. %s)" % (outside_step, examples["kernel_in_step"][:3]))
    annotations = [e for e in trace.get("traceEvents", []) if e.get("cat") == "gpu_user_annotation"]
    annotated = {e.get("name") for e in annotations}
    missing_steps = sorted(steps_with_gpu - annotated)
    if missing_steps:
        fail("step_on_gpu", "steps with GPU work but no gpu_user_annotation: %s" % missing_steps[:5])
    user_ranges = {e.get("name") for e in t.ops.values() if e.get("cat") == "user_annotation"
                   and not str(e.get("name", "")).startswith("ProfilerStep#")}
    projected_ranges = sorted(n for n in annotated if n in user_ranges)
    if steps and user_ranges and not projected_ranges:
        fail("step_on_gpu", "no user range is projected onto the GPU (ranges: %s)"
             % sorted(user_ranges)[:5])

    figures = {
        "kernels_seen": n,
        "steps": len(steps),
        "gpu_events_outside_their_step": outside_step,
        "steps_annotated_on_gpu": sorted(n for n in annotated if n.startswith("ProfilerStep#")),
        "user_ranges_on_gpu": projected_ranges,
        "copies_seen": len(t.copies),
        "runtime_calls": len(t.calls_list),
        "kernels_with_launch_pct": pct(with_launch, n),
        "kernels_with_flow_pct": pct(with_flow, n),
        "kernels_with_op_pct": pct(with_op, n),
        "kernels_correlated_pct": pct(min(with_flow, with_op), n),
        "kernels_before_launch": before_launch,
        "calls_outside_their_op": outside,
        "gpu_clock": trace.get("ptprof_gpu_clock"),
        "gpu_user_annotations": sum(1 for e in trace.get("traceEvents", [])
                                    if e.get("cat") == "gpu_user_annotation"),
        "devices": [d.get("name") for d in trace.get("deviceProperties", [])],
        "cupti_version": trace.get("cupti_version"),
        "cuda_runtime_version": trace.get("cuda_runtime_version"),
        "cuda_driver_version": trace.get("cuda_driver_version"),
        "dropped_records": trace.get("ptprof_gpu_dropped_records", 0),
        # ptprof's own cost as the recording process calibrated it (issue 28 section 4):
        # launch_ns beside launch_layers' measured "ptprof as shipped" figure. Traces recorded
        # before 2026-12-07 have none.
        "ptprof_cost": trace.get("ptprof_cost"),
    }

    if kineto is not None:
        kt = TraceView(kineto)
        ours, theirs = t.kernels_per_op(), kt.kernels_per_op()
        figures["kineto_kernels_seen"] = len(kt.kernels)
        diff = {op: {"ptprof": ours.get(op, 0), "kineto": theirs.get(op, 0)}
                for op in sorted(set(ours) | set(theirs)) if ours.get(op, 0) != theirs.get(op, 0)}
        figures["per_op_kernel_counts"] = dict(sorted(ours.items()))
        figures["per_op_mismatches"] = diff
        if len(kt.kernels) != n:
            fail("kineto_kernel_count", "ptprof saw %d kernels, libtorch's profiler %d"
                 % (n, len(kt.kernels)))
        if diff:
            fail("kineto_per_op", "kernel counts differ for %d ops: %s"
                 % (len(diff), json.dumps(dict(list(diff.items())[:5]))))

    if run is not None:
        check_run(run, figures, fail)
    if fallback is not None:
        check_fallback(fallback, figures, fail, fallback_dir)
    if all_options is not None:
        check_all_options(all_options, figures, fail)
    if run is not None or teardown is not None:
        check_teardown(run, teardown, figures, fail)

    figures["passed"] = not failures
    figures["failures"] = failures
    return figures, failures


def check_layers(layers, figures, fail):
    """gpu_launch_layers' per-launch cost, layer by layer (issue 28's goal: lean <= 0.5 us)."""
    added = layers.get("added_us_per_launch") or {}
    figures["launch_layers_us"] = {k: round(v, 3) for k, v in added.items()}
    figures["launch_layers_baseline_us"] = layers.get("baseline_us_per_launch")
    n = layers.get("launches_per_round", 0)
    for mode in ("lean", "classic"):
        seen = layers.get("ptprof_%s_kernels_min" % mode, 0)
        if seen < n:
            fail("launch_layers", "ptprof %s saw %d kernels of %d launches in a round"
                 % (mode, seen, n))
    if layers.get("callbacks_seen", 0) == 0:
        fail("launch_layers", "the callbacks layer saw no launch call")


def check_graph(graph, figures, fail):
    """gpu_graph_check: every replayed kernel carries its node and the op that captured it."""
    lean = graph.get("lean") or {}
    launches = graph.get("graph_launches_only") or {}
    figures["graph"] = {"replays": graph.get("replays"), "lean": lean,
                        "graph_launches_only": launches}
    n = lean.get("graph_kernels", 0)
    if n == 0:
        fail("graph", "no replayed kernel carries a graph node")
    elif lean.get("captured", 0) < n or lean.get("attributed", 0) < n:
        fail("graph", "of %d replayed kernels, %d name their capturing op and %d are attributed "
             "to it" % (n, lean.get("captured", 0), lean.get("attributed", 0)))
    if launches.get("graph_launches", 0) != graph.get("replays", -1):
        fail("graph", "graph_launches_only: %d graph-launch events for %s replays"
             % (launches.get("graph_launches", 0), graph.get("replays")))


def check_memory(memory, figures, fail):
    """gpu_memory_snapshot_check: a window's CUDA memory snapshot beside its trace and an OOM's,
    both read back by ptprof's reader, with the history's trace and C++ stacks in them."""
    windows = memory.get("window_snapshots") or []
    ooms = memory.get("oom_snapshots") or []
    figures["memory"] = {
        "baseline_step_ms": memory.get("baseline_step_ms"),
        "history_step_ms": memory.get("history_step_ms"),
        "window_snapshots": windows, "oom_snapshots": ooms, "oom_thrown": memory.get("oom_thrown"),
        "messages": memory.get("messages")}
    if memory.get("traces", 0) < 1:
        fail("memory", "the session wrote no trace")
    if not windows:
        fail("memory", "no memory snapshot beside the window's trace")
    for s in windows + ooms:
        if "read_error" in s:
            fail("memory", "ptprof cannot read %s: %s" % (s.get("path"), s["read_error"]))
    for s in windows:
        if s.get("trace_entries", 0) == 0 or s.get("segments", 0) == 0:
            fail("memory", "%s has %d segments and %d trace entries" % (
                s.get("path"), s.get("segments", 0), s.get("trace_entries", 0)))
        if s.get("frames", 0) == 0:
            fail("memory", "%s has no stack frames (cpp_stacks)" % s.get("path"))
    if not memory.get("oom_thrown"):
        fail("memory", "the oversized allocation did not throw OutOfMemoryError")
    if not ooms:
        fail("memory", "no OOM snapshot (the allocator's OOM observer)")
    elif not any(s.get("ooms", 0) >= 1 and s.get("oom_requested", 0) >= memory.get("oom_bytes", 1)
                 for s in ooms):
        fail("memory", "the OOM snapshot has no oom entry asking for %s bytes"
             % memory.get("oom_bytes"))


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--trace", required=True, help="ptprof's trace (.json or .json.gz)")
    p.add_argument("--kineto", help="libtorch's profiler's trace of the same steps")
    p.add_argument("--run", help="gpu_train_check's run.json")
    p.add_argument("--fallback", help="gpu_train_check --fallback's fallback.json")
    p.add_argument("--all-options", help="ptprof's trace with every option on")
    p.add_argument("--teardown", help="run.json of gpu_train_check run with TEARDOWN_CUPTI=1")
    p.add_argument("--layers", help="gpu_launch_layers' launch_layers.json")
    p.add_argument("--graph", help="gpu_graph_check's graph.json")
    p.add_argument("--memory", help="gpu_memory_snapshot_check's memory.json")
    p.add_argument("--out", required=True, help="where to write the figures (JSON)")
    a = p.parse_args(argv)
    try:
        trace = load(a.trace)
        kineto = load(a.kineto) if a.kineto else None
        run = load(a.run) if a.run else None
        fallback = load(a.fallback) if a.fallback else None
        all_options = load(a.all_options) if a.all_options else None
        teardown = load(a.teardown) if a.teardown else None
        layers = load(a.layers) if a.layers else None
        graph = load(a.graph) if a.graph else None
        memory = load(a.memory) if a.memory else None
    except (OSError, ValueError) as e:
        print("gpu_trace_check: cannot read input: %s" % e, file=sys.stderr)
        return 2
    if not isinstance(trace, dict) or "traceEvents" not in trace:
        print("gpu_trace_check: %s is not a Chrome trace object" % a.trace, file=sys.stderr)
        return 2
    figures, failures = verify(trace, kineto, run, fallback, all_options, teardown,
                               os.path.dirname(a.fallback or "") or ".")
    if layers is not None:
        check_layers(layers, figures, lambda check, message: failures.append(
            {"check": check, "message": message}))
    if graph is not None:
        check_graph(graph, figures, lambda check, message: failures.append(
            {"check": check, "message": message}))
    if memory is not None:
        check_memory(memory, figures, lambda check, message: failures.append(
            {"check": check, "message": message}))
    figures["trace"] = a.trace
    with open(a.out, "w", encoding="utf-8") as f:
        json.dump(figures, f, indent=2, sort_keys=True)
        f.write("\n")
    for x in failures:
        print("FAIL %s: %s" % (x["check"], x["message"]), file=sys.stderr)
    print("%s: %d kernels, %.1f%% correlated%s -> %s" % (
        "PASS" if not failures else "FAILED", figures["kernels_seen"],
        figures["kernels_correlated_pct"],
        "" if kineto is None else ", libtorch's profiler saw %d" % figures["kineto_kernels_seen"],
        a.out))
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
