#!/usr/bin/env python3
"""ptprof's torch rules against torch.profiler's own pattern matchers (issue 26).

Small workloads run on the CPU under torch.profiler (record_shapes and with_stack, as the
matchers need), each once where it shows a pattern and once where it does not. For each, the
trace goes to a file (export_chrome_trace) and torch's matchers run on the profile:
every class of torch/profiler/_pattern_matcher.py (ForLoopIndexingPattern too, which
report_all_anti_patterns leaves out) and report_all_anti_patterns' own JSON report. Then
ptprof's report of the same file (report_json) must find exactly the CPU-visible patterns torch
matched, the same number of times where its title counts them.

Two of torch's eight need CUDA and are not compared here: FP32MatMulPattern matches every
aten::mm of a CPU-only build (its arch list is empty), where TF32 does not apply, and ptprof's
fp32_matmul asks a GPU's kernels; ExtraCUDACopyPattern matches CPU-to-CPU copies too, and
ptprof's extra_cuda_copy asks for a host-to-device memcpy. For those the check is that ptprof
stays silent on CPU traces; their firing is tested on synthetic traces and the H200 fixture
(tests/core/analysis/rules/).

  check_torch_patterns.py --report-json BUILD/tests/report_json --work DIR
"""
import argparse
import contextlib
import io
import json
import os
import re
import subprocess
import sys
import warnings

warnings.filterwarnings("ignore")
os.environ.setdefault("KINETO_LOG_LEVEL", "5")

import torch  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402
from torch.profiler import _pattern_matcher as pm  # noqa: E402

# torch's class -> ptprof's rule id, and whether the pattern shows on the CPU.
PATTERNS = [
    ("ExtraCUDACopyPattern", "extra_cuda_copy", False),
    ("ForLoopIndexingPattern", "for_loop_indexing", True),
    ("FP32MatMulPattern", "fp32_matmul", False),
    ("OptimizerSingleTensorPattern", "single_tensor_optimizer", True),
    ("SynchronizedDataLoaderPattern", "synchronized_data_loader", True),
    ("GradNotSetToNonePattern", "grad_not_set_to_none", True),
    ("Conv2dBiasFollowedByBatchNorm2dPattern", "conv_bias_before_batchnorm", True),
    ("MatMulDimInFP16Pattern", "fp16_matmul_dims", True),
]
# ptprof's titles that count the matches torch counts.
COUNTED = {
    "for_loop_indexing": r"^(\d+) loops? ",
    "conv_bias_before_batchnorm": r"^(\d+) convolutions ",
    "fp16_matmul_dims": r"^(\d+) half-precision matmuls ",
}


def robust(cls):
    """torch's matchers read PyCall names whose storage may be gone (its own TODO in
    SynchronizedDataLoaderPattern); one such event must not end the check."""

    class Robust(cls):
        def match(self, event):
            try:
                return super().match(event)
            except UnicodeDecodeError:
                return False

    return Robust


# ------------------------------------------------------------------ workloads (CPU, small)

def for_loop(show):
    t = torch.empty(24)
    if show:
        for i in range(24):
            t[i] = i
    else:
        t[:] = torch.arange(24)


def optimizer(show):
    model = torch.nn.Linear(16, 4)
    opt = torch.optim.Adam(model.parameters(), foreach=not show)
    model(torch.randn(8, 16)).sum().backward()
    opt.step()


def data_loader(show):
    ds = torch.utils.data.TensorDataset(torch.randn(32, 4), torch.randn(32))
    loader = torch.utils.data.DataLoader(ds, batch_size=8, num_workers=0 if show else 1)
    for x, _ in loader:
        x.sum()


def zero_grad(show):
    model = torch.nn.Linear(16, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model(torch.randn(8, 16)).sum().backward()
    opt.zero_grad(set_to_none=not show)


def conv_bias_bn(show):
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, bias=show), torch.nn.BatchNorm2d(8))
    model(torch.randn(2, 3, 10, 10))


def conv_bias_relu(show):
    # A bias followed by something else than batch norm: no match either way.
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, bias=True), torch.nn.ReLU())
    model(torch.randn(2, 3, 10, 10))


def fp16_matmul(show):
    if show:
        torch.mm(torch.randn(10, 12, dtype=torch.bfloat16), torch.randn(12, 6, dtype=torch.bfloat16))
    else:
        torch.mm(torch.randn(16, 16, dtype=torch.bfloat16), torch.randn(16, 8, dtype=torch.bfloat16))


WORKLOADS = [for_loop, optimizer, data_loader, zero_grad, conv_bias_bn, conv_bias_relu, fp16_matmul]


def run(workload, show, work):
    name = "%s_%s" % (workload.__name__, "shows" if show else "clean")
    workload(show)  # once outside the profile: lazy initialisation is not the workload
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        with profile(activities=[ProfilerActivity.CPU], record_shapes=True,
                     with_stack=True) as prof:
            workload(show)
    path = os.path.join(work, name + ".pt.trace.json")
    prof.export_chrome_trace(path)
    matchers = {cls: robust(getattr(pm, cls))(prof) for cls, _, _ in PATTERNS}
    counts = {cls: len(m.matched_events()) for cls, m in matchers.items()}
    names = {cls: m.name for cls, m in matchers.items()}
    tidy_dir = os.path.join(work, name)
    os.makedirs(tidy_dir, exist_ok=True)
    tidy = os.path.join(tidy_dir, "torchtidy_report.json")
    if os.path.exists(tidy):
        os.remove(tidy)
    try:
        pm.report_all_anti_patterns(prof, print_enable=False, json_report_dir=tidy_dir)
        reported = {e["name"] for entries in json.load(open(tidy)).values() for e in entries}
    except (UnicodeDecodeError, ValueError):
        # torch's own report trips on its PyCall-name bug or an event without a source
        # location; the classes above were run robustly.
        reported = None
    return name, path, counts, names, reported


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--report-json", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    torch.manual_seed(0)
    failures = []
    agreed = {rule: [] for _, rule, _ in PATTERNS}
    for workload in WORKLOADS:
        for show in (True, False):
            name, path, counts, names, reported = run(workload, show, args.work)
            out = subprocess.run([args.report_json, path], capture_output=True, text=True)
            if out.returncode != 0:
                failures.append("%s: report_json failed: %s" % (name, out.stderr.strip()))
                continue
            report = json.loads(out.stdout)
            ours = {}
            for f in report["findings"]:
                if f["source"] == "torch":
                    ours[f["id"]] = f
            line = []
            for cls, rule, cpu_visible in PATTERNS:
                theirs = counts[cls]
                mine = ours.get(rule)
                if not cpu_visible:
                    # Not comparable on the CPU (see the docstring): ptprof must stay silent.
                    ok = mine is None
                    if theirs or mine:
                        line.append("%s torch %d ptprof %s (not compared: CUDA)" % (
                            rule, theirs, "fired" if mine else "-"))
                    if not ok:
                        failures.append("%s: ptprof's %s fired on a CPU trace" % (name, rule))
                    continue
                ok = (theirs > 0) == (mine is not None)
                detail = ""
                if ok and mine is not None and rule in COUNTED:
                    m = re.match(COUNTED[rule], mine["title"])
                    n = int(m.group(1)) if m else -1
                    ok = n == theirs
                    detail = " (%d vs %d)" % (n, theirs)
                if not ok:
                    failures.append("%s: %s: torch matched %d, ptprof %s%s" % (
                        name, rule, theirs, "fired" if mine else "did not fire", detail))
                else:
                    agreed[rule].append(name)
                if theirs or mine:
                    line.append("%s torch %d ptprof %s%s" % (rule, theirs,
                                                            "fired" if mine else "-", detail))
            if reported is not None:
                # report_all_anti_patterns' own JSON report names the patterns it found (it runs
                # all but ForLoopIndexingPattern).
                for cls, rule, cpu_visible in PATTERNS:
                    if cls == "ForLoopIndexingPattern" or not cpu_visible:
                        continue
                    if (names[cls] in reported) != (rule in ours):
                        failures.append("%s: report_all_anti_patterns %s %s, ptprof %s" % (
                            name, "reports" if names[cls] in reported else "does not report",
                            names[cls], "fired" if rule in ours else "did not fire"))
            print("%-22s %s" % (name, "; ".join(line) if line else "nothing matched by either"))
    print()
    for _, rule, cpu_visible in PATTERNS:
        if cpu_visible:
            print("%-28s agrees with torch on %d workloads" % (rule, len(agreed[rule])))
    if failures:
        print("\nFAIL:\n  " + "\n  ".join(failures))
        sys.exit(1)
    print("ptprof's torch rules agree with torch.profiler's pattern matchers")


if __name__ == "__main__":
    main()
