#!/usr/bin/env python3
"""The report's HTML page in a real headless browser (issue 16 section 3).

For each trace (the H200 fixture, the same without its steps, CPU traces, the demo's when the
example is built, an empty trace) report_page writes the page; then it must
  - parse as XML (the page is written as XHTML syntax),
  - load in Chromium with every section in the rendered DOM,
  - log nothing to the browser console (the page has no scripts: any message is a fault),
  - make no network request (Chromium's net log: no request from the page but to file:),
and screenshots are kept in --out (NAME.png: the first 1400x2000 px, NAME_full.png: 1400x6000)
for people to look at. A probe page with a console error and an external stylesheet is run
through the same checks first, so a Chromium whose logging changed cannot pass them silently.
With --demo, the example runs data-loading bound and then with loader workers (the walkthrough)
and ReportDiff of the two must say the data-loading finding disappeared.
"""
import argparse
import glob
import json
import os
import shutil
import struct
import subprocess
import sys
import xml.dom.minidom
import zlib

SECTIONS = ["quality", "breakdown", "utilization", "idle", "findings", "tables"]
WIDTH, HEIGHT, FULL_HEIGHT = 1400, 2000, 6000


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def chromium(binary, work, name, url, extra):
    """Runs headless Chromium on url; returns (stdout, console lines, page requests)."""
    net = os.path.join(work, name + ".netlog.json")
    cmd = [binary, "--headless", "--disable-gpu", "--no-sandbox", "--hide-scrollbars",
           "--enable-logging=stderr", "--v=0", "--log-net-log=" + net,
           "--user-data-dir=" + os.path.join(work, "profile-" + name)] + extra + [url]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        fail("%s: chromium exited %d\n%s" % (name, p.returncode, p.stderr[-3000:]))
    console = [line for line in p.stderr.splitlines() if ":CONSOLE" in line]
    requests = []
    try:
        with open(net, encoding="utf-8") as f:
            log = json.load(f)
    except (OSError, ValueError) as e:
        fail("%s: no readable net log from chromium (%s)" % (name, e))
    start_job = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    for e in log["events"]:
        params = e.get("params", {})
        # Chromium's own background requests have no page behind them; the page's carry the
        # file:// origin in their isolation key.
        if e["type"] == start_job and "file://" in params.get("network_isolation_key", ""):
            if not params.get("url", "").startswith(("file:", "data:")):
                requests.append(params.get("url"))
    if not requests:
        os.unlink(net)  # kept only as evidence of a failure
    return p.stdout, console, requests


def png_size_and_ink(path):
    """(width, height, share of non-white bytes in the decoded rows) of an 8-bit RGB(A) PNG."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        fail(path + ": not a PNG")
    w, h = struct.unpack(">II", data[16:24])
    pos, idat = 8, b""
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        if kind == b"IDAT":
            idat += data[pos + 8:pos + 8 + length]
        pos += 12 + length
    raw = zlib.decompress(idat)
    # Filter bytes and predictor residues make this approximate; it tells a page from a blank one.
    ink = sum(1 for b in raw[::97] if b not in (0, 255)) / max(1, len(raw[::97]))
    return w, h, ink


def check_page(args, name, html, expect):
    with open(html, "rb") as f:
        text = f.read()
    try:
        xml.dom.minidom.parseString(text)
    except Exception as e:  # noqa: BLE001 -- any parser error is the finding
        fail("%s: not well-formed XML: %s" % (name, e))
    s = text.decode("utf-8")
    for bad in ("<script", "src=", "url(", "@import", "http:", "https:"):
        if bad in s:
            fail("%s: the page has %r: it must be self-contained" % (name, bad))
    url = "file://" + os.path.abspath(html)
    dom, console, requests = chromium(args.chromium, args.out, name, url, ["--dump-dom"])
    for sec in SECTIONS:
        if '<section id="%s">' % sec not in dom:
            fail("%s: section %s missing from the rendered DOM" % (name, sec))
    for e in expect:
        if e not in dom:
            fail("%s: %r not in the rendered DOM" % (name, e))
    shot = os.path.join(args.out, name + ".png")
    full = os.path.join(args.out, name + "_full.png")
    for path, height in ((shot, HEIGHT), (full, FULL_HEIGHT)):
        if os.path.exists(path):
            os.unlink(path)
        _, c2, r2 = chromium(args.chromium, args.out, name + "-shot", url,
                             ["--screenshot=" + path, "--window-size=%d,%d" % (WIDTH, height)])
        console += c2
        requests += r2
        if not os.path.exists(path):
            fail("%s: chromium wrote no screenshot %s" % (name, path))
        w, h, ink = png_size_and_ink(path)
        if (w, h) != (WIDTH, height):
            fail("%s: screenshot is %dx%d, expected %dx%d" % (name, w, h, WIDTH, height))
        if height == HEIGHT and ink < 0.01:  # the top always has the header and boxes
            fail("%s: the screenshot %s is blank" % (name, path))
    if console:
        fail("%s: browser console messages:\n  %s" % (name, "\n  ".join(console)))
    if requests:
        fail("%s: the page made network requests: %s" % (name, requests))
    print("ok %-14s %s (%d bytes), screenshots %s, %s" % (name, html, len(text), shot, full))


def probe(args):
    """The detectors must see what they look for, or their silence means nothing."""
    page = os.path.join(args.out, "probe.html")
    with open(page, "w", encoding="utf-8") as f:
        f.write('<!DOCTYPE html><html><head><title>probe</title>'
                '<link rel="stylesheet" href="https://ptprof-probe.invalid/x.css"/></head>'
                '<body><p>probe</p><script>console.error("ptprof-probe-error")</script>'
                "</body></html>")
    _, console, requests = chromium(args.chromium, args.out, "probe", "file://" + page,
                                    ["--dump-dom"])
    if not any("ptprof-probe-error" in c for c in console):
        fail("the console check did not see the probe's console.error: chromium's logging "
             "changed, so a clean console proves nothing")
    if not any("ptprof-probe.invalid" in (r or "") for r in requests):
        fail("the net-log check did not see the probe's external stylesheet request")
    os.unlink(os.path.join(args.out, "probe.netlog.json"))  # its request was the point
    print("ok probe: console errors and external requests are detected")


def demo(args, tool):
    """The walkthrough: data-loading bound, then the fix; returns the first run's trace."""
    base = os.path.join(args.out, "demo")
    shutil.rmtree(base, ignore_errors=True)
    runs = {}
    for run, extra in (("loader_bound", []), ("loader_workers", ["--workers", "8"])):
        p = subprocess.run([args.demo, os.path.join(base, run), "--sample-latency-us", "50"] + extra,
                           capture_output=True, text=True, timeout=300)
        if p.returncode != 0:
            fail("the example failed:\n" + p.stdout[-2000:] + p.stderr[-2000:])
        traces = sorted(glob.glob(os.path.join(base, run, "*.pt.trace.json*")))
        if not traces:
            fail("the example wrote no trace in " + os.path.join(base, run))
        runs[run] = traces[0]
    p = subprocess.run([tool, "--diff", runs["loader_bound"], runs["loader_workers"], "--json"],
                       capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        fail("report_page --diff failed: " + p.stderr)
    diff = json.loads(p.stdout)
    with open(os.path.join(args.out, "demo_diff.json"), "w", encoding="utf-8") as f:
        f.write(p.stdout)
    status = {f["id"]: f["status"] for f in diff["findings"]}
    if status.get("data_loading") != "disappeared":
        fail("demo diff: data_loading is %r, expected 'disappeared'" % status.get("data_loading"))
    loader = [c for c in diff["steps"]["categories"] if c["category"] == "DataLoader"][0]
    if not loader["time"]["delta_us"] < 0:
        fail("demo diff: DataLoader time per step did not drop: %s" % loader)
    print("ok demo diff: data_loading disappeared, DataLoader %+.3f us per step"
          % loader["time"]["delta_us"])
    return runs["loader_bound"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", required=True, help="report_page")
    ap.add_argument("--chromium", default="chromium")
    ap.add_argument("--out", required=True)
    ap.add_argument("--h200", required=True)
    ap.add_argument("--cpu", required=True)
    ap.add_argument("--no-gpu", required=True)
    ap.add_argument("--demo", help="train_example, to make a demo trace")
    args = ap.parse_args()
    if not shutil.which(args.chromium):
        fail("no %s: scripts/setup installs Debian's chromium package" % args.chromium)
    os.makedirs(args.out, exist_ok=True)
    for old in glob.glob(os.path.join(args.out, "profile-*")):
        shutil.rmtree(old, ignore_errors=True)
    probe(args)

    cases = [
        ("h200", [args.h200], ["GPU 0: NVIDIA H200", 'class="average"', "data-buckets="]),
        ("h200_no_steps", [args.h200, "--drop-steps"],
         ["whole trace", 'data-id="no_steps"', "data-buckets="]),
        ("cpu", [args.cpu], ["No GPU data.", 'class="average"']),
        ("cpu_no_gpu", [args.no_gpu], ["No GPU data.", "whole trace"]),
        ("empty", ["--empty"], ["The step-time breakdown cannot be determined",
                                "No findings: there is no step to analyse."]),
    ]
    if args.demo:
        cases.insert(2, ("demo", [demo(args, args.tool)],
                         ["DataLoader", 'data-id="data_loading"']))
    for name, tool_args, expect in cases:
        html = os.path.join(args.out, name + ".html")
        if tool_args == ["--empty"]:
            cmd = [args.tool, "--empty", html]
        else:
            cmd = [args.tool, tool_args[0], html] + tool_args[1:]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if p.returncode != 0:
            fail("%s: report_page failed: %s" % (name, p.stderr))
        check_page(args, name, html, expect)
    for old in glob.glob(os.path.join(args.out, "profile-*")):
        shutil.rmtree(old, ignore_errors=True)
    print("all pages render; screenshots in " + args.out)


if __name__ == "__main__":
    main()
