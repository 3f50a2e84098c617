"""`ptprof view` in a real browser (headless Chromium, Selenium): every view of the demo's two
runs, the real H200 traces and a two-rank job renders with no console error and no request to
any host but the server, and clicking through shows what `ptprof report --json` and the trace
files hold. Screenshots of every view are kept in OUT.

    check_view_browser.py --ptprof PTPROF --train-example BIN [--ddp-example BIN]
                          [--h200 DIR] [--shared-traces DIR] --out OUT
"""
import argparse
import contextlib
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from browser import Browser  # noqa: E402


class Server:
    """`ptprof view PATH --port 0` in the background; its URL from the line it prints."""

    def __init__(self, ptprof, path, env=None):
        self.proc = subprocess.Popen([ptprof, "view", path, "--port", "0"],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     env=env)
        line = self.proc.stdout.readline()
        m = re.search(r"(http://127\.0\.0\.1:\d+)/", line)
        if not m:
            self.proc.kill()
            raise AssertionError(f"ptprof view printed no URL: {line!r} {self.proc.stderr.read()}")
        self.url = m.group(1)

    def stop(self):
        self.proc.terminate()
        try:
            rc = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise AssertionError("ptprof view did not stop on SIGTERM")
        assert rc == 0, f"ptprof view exited {rc}: {self.proc.stderr.read()}"


# ptprof view lists a file once it has not changed for a second (a job may still be writing
# it); the pages are opened after that, or the first page would not see the newest windows.
SETTLE_S = 1.0


def wait_settled(path):
    """Waits until every file under `path` is older than the server's settle time."""
    newest = 0.0
    for root, _, files in os.walk(path) if os.path.isdir(path) else [("", [], [path])]:
        for f in files:
            try:
                newest = max(newest, os.stat(os.path.join(root, f)).st_mtime)
            except OSError:
                pass
    wait = newest + SETTLE_S + 0.2 - time.time()
    if wait > 0:
        time.sleep(wait)


@contextlib.contextmanager
def served(b, ptprof, path, env=None, page="/"):
    """`ptprof view PATH` with the browser on PAGE; the page left and the server stopped after,
    whatever happened in between."""
    wait_settled(path)
    server = Server(ptprof, path, env)
    try:
        b.open(page, server.url)
        yield server
    finally:
        b.leave()
        server.stop()


def report_json(ptprof, path):
    p = subprocess.run([ptprof, "report", path, "--json"], capture_output=True, text=True, check=True)
    return json.loads(p.stdout)


def number(text):
    m = re.search(r"-?[0-9][0-9.]*", text.replace(",", ""))
    assert m, f"no number in {text!r}"
    return float(m.group(0))


def us_from_text(text):
    """'8.244 ms' -> 8244.0 (us), as dom.js fmtUs prints times."""
    v = number(text)
    unit = text.strip().split()[-1]
    return v * {"s": 1e6, "ms": 1e3, "us": 1.0}[unit]


class Checks:
    def __init__(self, out):
        self.out = out
        self.failures = []
        self.shots = 0

    def expect(self, ok, what):
        print(("ok   " if ok else "FAIL ") + what, flush=True)
        if not ok:
            self.failures.append(what)

    def shot(self, b, name):
        path = os.path.join(self.out, f"{name}.png")
        b.screenshot(path)
        self.shots += 1

def load_trace(path):
    opener = gzip.open if open(path, "rb").read(2) == b"\x1f\x8b" else open
    with opener(path, "rt") as f:
        return json.load(f)


def first_event(trace, name, cat=None):
    """The earliest complete event named `name` in a trace file: (ts_us, dur_us, how many)."""
    evs = [e for e in trace["traceEvents"] if e.get("ph") == "X" and e.get("name") == name
           and (cat is None or e.get("cat") == cat)]
    e = min(evs, key=lambda e: float(e["ts"]))
    return float(e["ts"]), float(e["dur"]), len(evs)


def demo_runs(train_example, logdir):
    shutil.rmtree(logdir, ignore_errors=True)
    for run, extra in (("loader_bound", []), ("loader_workers", ["--workers", "8"])):
        # The example also writes its flame graph and memory timeline (a .json that is no
        # trace) into <run>_reports beside the run: the listing must leave them out.
        subprocess.run([train_example, os.path.join(logdir, run), "--sample-latency-us", "50", *extra],
                       check=True, capture_output=True, timeout=300)
    return logdir


def traces_of(d):
    return sorted(os.path.join(d, f) for f in os.listdir(d) if ".json" in f and not f.startswith("."))


def wait_view(b, view):
    return b.find(f"view-{view}", timeout=60)


def goto(b, view):
    b.click(f"tab-{view}")
    return wait_view(b, view)


def cells(row):
    return [td.text for td in row.find_elements("css selector", "td")]


def settled(b, testid):
    """Waits until the table has its page (remote tables fetch after each click)."""
    b.wait(lambda: b.find(testid).get_attribute("data-busy") == "0", what=f"{testid} to settle")


def rows_of(b, testid):
    """The table's rows' cell texts, read at once (the page may replace them at any time)."""
    settled(b, testid)
    return b.js("return [...document.querySelectorAll(`[data-testid=${arguments[0]}-row]`)]"
                ".map(r => [...r.children].map(td => td.textContent))", testid)


def column(b, testid, key):
    """The index of a table's column, by its header."""
    heads = [th.get_attribute("data-testid") for th in b.find(testid).find_elements("css selector", "th")]
    return heads.index(f"{testid}-col-{key}")


def sort_desc(b, testid, key):
    """Clicks a column's header until the table is sorted by it, largest first."""
    for _ in range(3):
        settled(b, testid)
        if "▼" in b.find(f"{testid}-col-{key}").text:
            return
        b.click(f"{testid}-col-{key}")
    raise AssertionError(f"{testid} not sorted by {key}")


def no_problems(b, c, what, allow=()):
    problems = b.problems(allow)
    c.expect(not problems, f"{what}: no console error, no request elsewhere" + "".join("\n  " + p for p in problems))


def search_and_pick(b, c, query, expect_total, expect_dur_us, what):
    """Searches the timeline and clicks the first (earliest) match: the view zooms to it and
    its details show its duration."""
    box = b.find("timeline-search")
    box.clear()
    box.send_keys(query + "\n")
    count = b.wait(lambda: b.find("search-count").text, what=f"search results for {query}")
    c.expect(count.startswith(f"{expect_total} slice"), f"{what}: search finds {count!r} (trace: {expect_total})")
    b.all("search-result")[0].click()
    dur = b.wait(lambda: b.find("detail-dur").text if b.find("detail-name").text == query else None,
                 what="details of the picked slice")
    c.expect(abs(number(dur) - expect_dur_us) < 0.0015, f"{what}: its duration {dur} = the trace's {expect_dur_us:.3f} us")
    span = b.find("timeline-window").text
    span_us = us_from_text(span.split("(")[-1].rstrip(")"))
    c.expect(span_us <= max(1.0, expect_dur_us) * 1.6, f"{what}: zoomed to it ({span})")


def check_demo(args, c, b):
    logdir = demo_runs(args.train_example, os.path.join(args.out, "demo"))
    runs = ["loader_bound", "loader_workers"]
    latest = {r: traces_of(os.path.join(logdir, r))[-1] for r in runs}
    expected = {r: report_json(args.ptprof, latest[r]) for r in runs}
    want = expected[runs[0]]
    with served(b, args.ptprof, logdir):
        # ---- the first page: the Overview of the first run's latest window ----
        wait_view(b, "overview")
        c.expect(b.find("select-run").get_attribute("value") == runs[0], f"first page is run {runs[0]}")
        span_text = b.js("const s = document.querySelector('[data-testid=select-span]'); return s.options[s.selectedIndex].text")
        c.expect(span_text == str(len(traces_of(os.path.join(logdir, runs[0])))),
                 f"first page is the run's latest window ({span_text})")
        avg = us_from_text(b.find("tile-step-time").text)
        c.expect(abs(avg - want["steps"]["average_us"]["Total"]) <= 1.0,
                 f"overview: average step {avg} us = report's {want['steps']['average_us']['Total']} us")
        own = us_from_text(b.find("tile-own-cost").text.lstrip("≥ ").split("/")[0])
        c.expect(abs(own - want["profiler_cost"]["per_step_us"]) <= 0.0015 * max(1.0, own),
                 f"overview: ptprof's own cost {own} us = report's {want['profiler_cost']['per_step_us']} us")
        names = [cells(r)[0] for r in b.all("top-ops-cpu-row")]
        c.expect(bool(names) and names == [o["name"] for o in want["top_operators"]["by_self_cpu"]][:len(names)],
                 f"overview: top operators as the report lists them ({names[:2]}...)")
        c.expect([e.get_attribute("data-id") for e in b.all("finding")] == [f["id"] for f in want["findings"]],
                 "overview: the report's findings, in its order")
        c.expect(len(b.all("step-chart-bar")) == len(want["steps"]["per_step"]), "overview: one bar per step")
        c.shot(b, "demo_overview")

        # ---- operators: sort by a column, open an op ----
        goto(b, "operators")
        sort_desc(b, "operators", "calls")
        calls = [int(r[1]) for r in rows_of(b, "operators")]
        c.expect(calls == sorted(calls, reverse=True), f"operators: sorted by calls ({calls[:4]}...)")
        sort_desc(b, "operators", "self_cpu_us")
        first = rows_of(b, "operators")[0]
        row = b.all("operators-row")[0]
        self_us = float(first[column(b, "operators", "self_cpu_us")])
        top = want["top_operators"]["by_self_cpu"][0]
        c.expect(first[0] == top["name"] and abs(self_us - top["self_cpu_us"]) < 0.0015,
                 f"operators: by host self, {first[0]} {self_us} us = report's {top['name']} {top['self_cpu_us']}")
        row.click()
        b.find("op-stacks")
        c.expect(len(rows_of(b, "op-stacks")) > 0, f"operators: {first[0]} opens to its stacks ({len(b.all('op-stacks-row'))})")
        c.shot(b, "demo_operators")
        b.select("operators-group", "shape")
        b.find("operators-col-input_shapes")
        c.shot(b, "demo_operators_by_shape")

        # ---- kernels: none on the CPU ----
        goto(b, "kernels")
        c.expect(bool(b.find("no-kernels")), "kernels: says the trace has none")

        # ---- trace: search, zoom to one op, read its duration ----
        goto(b, "trace")
        trace = load_trace(latest[runs[0]])
        _, dur, n = first_event(trace, "aten::mm")
        search_and_pick(b, c, "aten::mm", n, dur, "trace")
        c.shot(b, "demo_trace")

        # ---- memory ----
        goto(b, "memory")
        mem = [e for e in trace["traceEvents"] if e.get("name") == "[memory]"]
        allocs = sum(1 for e in mem if e["args"]["Bytes"] > 0)
        count = b.wait(lambda: b.find("alloc-count").text, what="allocation table")
        c.expect(count.endswith(f"of {allocs} rows"), f"memory: {count} (trace: {allocs} allocations)")
        sort_desc(b, "alloc", "bytes")
        biggest = max(e["args"]["Bytes"] for e in mem)
        top_alloc = rows_of(b, "alloc")[0][1]
        c.expect(top_alloc == f"{biggest / 1024 ** 2:.2f} MiB" or biggest < 1024 ** 2,
                 f"memory: the largest allocation first ({top_alloc}, trace: {biggest} bytes)")
        peak = max(e["args"]["Total Allocated"] for e in mem)
        c.expect(f"{peak / 1024 ** 2:.2f} MiB" in b.find("memory-peaks").text, f"memory: peak {peak} bytes")
        c.shot(b, "demo_memory")

        # ---- flame graph ----
        goto(b, "flame")
        frames = b.all("flame-frame")
        c.expect(len(frames) > 10, f"flame graph: {len(frames)} frames")
        b.find("flame-search").send_keys("aten::mm")
        c.expect(bool(b.wait(lambda: b.find("flame-matched").text, what="search match")), "flame graph: search marks frames")
        b.js("document.querySelector('[data-testid=flame-frame][data-name=main]').dispatchEvent(new MouseEvent('click'))")
        c.expect(b.find("flame-path").text.split(":")[0].endswith("main"), "flame graph: zoomed into main")
        c.shot(b, "demo_flame")

        # ---- distributed: one worker ----
        goto(b, "distributed")
        c.expect(bool(b.find("not-distributed")), "distributed: one worker, nothing to compare")

        # ---- diff: the two runs ----
        goto(b, "diff")
        d = json.loads(subprocess.run([args.ptprof, "diff", latest[runs[0]], latest[runs[1]], "--json"],
                                      capture_output=True, text=True, check=True).stdout)
        b.wait(lambda: b.find("diff-step").text, what="diff")
        status = {e.get_attribute("data-id"): e.get_attribute("data-status") for e in b.all("diff-finding")}
        want_status = {f["id"]: f["status"] for f in d["findings"]}
        c.expect(status == want_status, f"diff: findings {status} = ptprof diff's {want_status}")
        # (Whether the fix removed the data-loading bottleneck on this machine is the
        # walkthrough's own test, consumers.report_agreement; here: the page says what ptprof
        # diff says.)
        delta = b.find("diff-step").text.split(":")[1].split("(")[0].strip()
        c.expect(abs(us_from_text(delta) - d["steps"]["step"]["delta_us"]) < 1.0,
                 f"diff: step change {delta} = ptprof diff's {d['steps']['step']['delta_us']} us")
        own = b.find("diff-own-cost").text.split("a change of ")[1].split(" within")[0].lstrip("+")
        c.expect(abs(us_from_text(own) - d["steps"]["profiler_cost"]["delta_us"]) < 1.0,
                 f"diff: ptprof's own cost changed {own} = ptprof diff's {d['steps']['profiler_cost']['delta_us']} us")
        c.shot(b, "demo_diff")

        # ---- choose the other run: the Overview of its latest window ----
        goto(b, "overview")
        b.select("select-run", runs[1])
        other = expected[runs[1]]["steps"]["average_us"]["Total"]
        b.wait(lambda: abs(us_from_text(b.find("tile-step-time").text) - other) <= 1.0, what="the other run's overview")
        c.expect(True, f"choosing run {runs[1]} shows its overview ({other} us per step)")
        no_problems(b, c, "demo")


def check_h200(args, c, b):
    d = os.path.join(args.out, "h200")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    for f in os.listdir(args.h200):
        if f.endswith(".json") or f.endswith(".json.gz"):
            shutil.copy(os.path.join(args.h200, f), d)
    path = os.path.join(d, "ptprof.pt.trace.json.gz")
    want = report_json(args.ptprof, path)
    trace = load_trace(path)
    with served(b, args.ptprof, d):
        wait_view(b, "overview")
        listing = b.js("return fetch('/api/runs').then(r => r.json())")
        files = sorted(t["file"] for t in listing["traces"])
        c.expect(files == sorted(f for f in os.listdir(d) if ".pt.trace." in f and not f.startswith(".")),
                 f"h200: the traces listed, not the other JSON files ({files})")
        b.select("select-worker", "ptprof")
        b.wait(lambda: b.find("select-worker").get_attribute("value") == "ptprof" and b.all("tile-gpu-util"),
               what="ptprof's trace")
        util = b.find("tile-gpu-util").text
        c.expect(abs(number(util) - want["gpu"]["devices"][0]["utilization"] * 100) < 0.051,
                 f"h200 overview: GPU utilization {util} = report's {want['gpu']['devices'][0]['utilization']}")
        c.expect(len(b.all("gpu-summary-row")) == len(want["gpu"]["devices"]), "h200 overview: a GPU summary row per device")
        c.shot(b, "h200_overview")

        goto(b, "kernels")
        settled(b, "kernels")
        first = b.all("kernels-row")[0].find_elements("css selector", "td")[0].get_attribute("title")
        c.expect(first == want["top_kernels"][0]["name"], f"h200 kernels: by total time, {first[:40]}... first, as in the report")
        c.shot(b, "h200_kernels")
        b.select("kernels-group", "op")
        b.find("kernels-col-op")
        c.shot(b, "h200_kernels_by_op")

        goto(b, "operators")
        top = want["top_operators"]["by_self_device"][0]
        sort_desc(b, "operators", "self_device_us")
        name = rows_of(b, "operators")[0][0]
        row = b.all("operators-row")[0]
        c.expect(name == top["name"], f"h200 operators: by device self, {name} first = report's {top['name']}")
        row.click()
        b.find("op-kernels")
        kernels = rows_of(b, "op-kernels")
        total = sum(float(k[column(b, "op-kernels", "total_us")]) for k in kernels)
        c.expect(bool(kernels) and abs(total - top["self_device_us"]) <= 0.01 * max(1.0, top["self_device_us"]),
                 f"h200 operators: {name}'s kernels add up to its device self time ({total:.3f} vs {top['self_device_us']})")
        c.shot(b, "h200_operators")

        goto(b, "trace")
        kname = want["top_kernels"][0]["name"]
        _, dur, n = first_event(trace, kname, "kernel")
        search_and_pick(b, c, kname, n, dur, "h200 trace")
        flow = b.find("detail-flow").text
        c.expect(flow.startswith("cudaLaunchKernel") or flow.startswith("cuLaunchKernel"),
                 f"h200 trace: the kernel's launch ({flow[:40]})")
        c.shot(b, "h200_trace")
        b.click("zoom-reset")
        time.sleep(0.5)
        c.shot(b, "h200_trace_whole")

        # Autograd's links on libtorch's own trace: a forward op and the backward node it has.
        b.select("select-worker", "kineto")
        b.wait(lambda: b.find("select-worker").get_attribute("value") == "kineto", what="kineto's trace")
        goto(b, "trace")
        kineto = load_trace(os.path.join(d, "kineto.pt.trace.json.gz"))
        _, dur, n = first_event(kineto, "aten::addmm", "cpu_op")
        search_and_pick(b, c, "aten::addmm", n, dur, "h200 kineto trace")
        flow = b.find("detail-flow").text
        c.expect(flow.startswith("AddmmBackward0"), f"h200 kineto trace: aten::addmm's backward node ({flow[:40]})")
        b.click("zoom-reset")
        time.sleep(0.5)
        c.shot(b, "h200_trace_fwdbwd")
        no_problems(b, c, "h200")


def check_shared(args, c, b):
    """The real traces of ../shared/traces (read-only: indexes go to the cache), HTA's names."""
    root = os.path.join(args.shared_traces, "hta")
    env = dict(os.environ, XDG_CACHE_HOME=os.path.join(args.out, "cache"))
    with served(b, args.ptprof, root, env=env):
        wait_view(b, "overview")
        listing = b.js("return fetch('/api/runs').then(r => r.json())")
        runs = sorted({t["run"] for t in listing["traces"]})
        c.expect("trace_filter" in runs and "nccl_parser_config" in runs, f"shared: HTA-named traces listed ({runs})")
        for run in runs:
            b.select("select-run", run)
            b.wait(lambda: b.find("select-run").get_attribute("value") == run and
                   (b.all("view-overview") or b.all("error-panel")), timeout=60, what=f"overview of {run}")
            c.expect(not b.all("error-panel"), f"shared: {run} opens")
        b.select("select-run", "trace_filter")
        goto(b, "distributed")
        rows = b.wait(lambda: b.all("ranks-row"), timeout=60, what="ranks")
        want = report_json(args.ptprof, os.path.join(root, "trace_filter"))["cross_rank"]
        c.expect(len(rows) == len(want["ranks"]) == 2, f"shared distributed: {len(rows)} ranks = ptprof report's")
        c.shot(b, "shared_distributed")
        goto(b, "trace")
        c.shot(b, "shared_trace")
        c.expect(not [f for _, _, fs in os.walk(root) for f in fs if f.endswith(".ptprof-index")],
                 "shared: no index written into the read-only directory")
        no_problems(b, c, "shared")


def check_ranks(args, c, b):
    d = os.path.join(args.out, "ddp")
    shutil.rmtree(d, ignore_errors=True)
    subprocess.run([args.ddp_example, os.path.join(d, "job"), "--world-size", "2", "--slow-rank", "1",
                    "--slow-ms", "5"], check=True, capture_output=True, timeout=300)
    want = report_json(args.ptprof, os.path.join(d, "job"))["cross_rank"]
    with served(b, args.ptprof, d, page="/#view=distributed"):
        wait_view(b, "distributed")
        rows = b.wait(lambda: b.all("ranks-row"), timeout=60, what="ranks")
        c.expect(len(rows) == 2, "ranks: two ranks side by side")
        stragglers = rows_of(b, "stragglers")
        c.expect(bool(stragglers) and stragglers[0][0] == str(want["stragglers"][0]["rank"]),
                 f"ranks: the straggler is rank {want['stragglers'][0]['rank']}, as ptprof report says")
        count = b.find("collectives-count").text
        c.expect(count.endswith(f"of {len(want['collectives'])} rows"),
                 f"ranks: {count} (report: {len(want['collectives'])} collectives)")
        c.expect(len(b.all("overlap-chart-bar")) == 2, "ranks: computation/communication per rank")
        c.shot(b, "ranks_distributed")
        no_problems(b, c, "ranks")


def check_hostile(args, c, b):
    d = os.path.join(args.out, "hostile")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(os.path.join(d, "run"))
    with open(os.path.join(d, "run", "cut.1.pt.trace.json"), "w") as f:
        f.write('{"schemaVersion": 1, "traceEvents": [{"ph": "X", "name": "a')
    with served(b, args.ptprof, d):
        panel = b.find("error-panel", timeout=60)
        c.expect("cut.1.pt.trace.json" in panel.text, f"hostile: an error panel naming the file ({panel.text[:80]!r})")
        c.shot(b, "hostile_error")
        # The console's only message: the failed request itself (HTTP 422).
        no_problems(b, c, "hostile", allow=("status of 422",))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ptprof", required=True)
    ap.add_argument("--train-example", required=True)
    ap.add_argument("--ddp-example")
    ap.add_argument("--h200")
    ap.add_argument("--shared-traces")
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", help="one scenario: demo, h200, shared, ranks, hostile")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    c = Checks(args.out)
    t0 = time.time()
    scenarios = [("demo", check_demo, True), ("h200", check_h200, args.h200),
                 ("shared", check_shared, args.shared_traces), ("ranks", check_ranks, args.ddp_example),
                 ("hostile", check_hostile, True)]
    b = Browser("http://127.0.0.1")
    try:
        for name, fn, wanted in scenarios:
            if wanted and (not args.only or args.only == name):
                t = time.time()
                try:
                    fn(args, c, b)
                except Exception as e:  # a step that never came: the rest still runs
                    c.expect(False, f"{name}: {type(e).__name__}: {e}")
                print(f"-- {name}: {time.time() - t:.1f} s", flush=True)
    finally:
        b.close()
    print(f"{c.shots} screenshots in {args.out}; {time.time() - t0:.1f} s")
    if c.failures:
        print(f"{len(c.failures)} check(s) failed")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
