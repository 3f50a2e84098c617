"""`ptprof memory SNAPSHOT.pickle OUT.html` in a real browser (headless Chromium, Selenium):
each page renders with no console error or warning and no request at all (it is a file with
no script), shows every device, its timeline and tables, and says what `ptprof memory --json`
says. A probe page with a console error and an outside image goes through the same checks
first, so a browser whose logging changed cannot pass them silently. Screenshots are kept in
OUT for people to look at.

    check_memory_snapshot_page.py --ptprof PTPROF --fixtures DIR [--gpu-fixture FILE] --out OUT
"""
import argparse
import json
import os
import pickle
import random
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from browser import Browser  # noqa: E402

MiB = 1 << 20


def fmt_bytes(n):
    """ptprof's format of a size (trace/memory_snapshot_output.cpp's format_bytes)."""
    if abs(n) < 1024:
        return f"{n} B"
    v, units = n / 1024, ["KiB", "MiB", "GiB", "TiB", "PiB"]
    u = 0
    while abs(v) >= 1024 and u < 4:
        v /= 1024
        u += 1
    return "%.2f %s" % (v, units[u])


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def big_snapshot(path):
    """20,000 allocator actions on three streams with deep stacks: a page that must be drawn
    from a downsampled curve and still finish in time."""
    rnd = random.Random(7)
    stacks = [[{"name": f"fn{k}_{d}", "filename": f"src/m{k}.cpp", "line": d} for d in range(40)]
              for k in range(50)]
    live, trace, t = {}, [], 1_700_000_000_000_000
    addr = 0x7F0000000000
    for i in range(20000):
        t += rnd.randint(1, 50)
        stream = rnd.choice([0, 7, 11])
        if live and (rnd.random() < 0.45 or len(live) > 400):
            a = rnd.choice(list(live))
            size, s = live.pop(a)
            trace.append({"action": "free_requested", "addr": a, "size": size, "stream": s,
                          "time_us": t, "frames": []})
            trace.append({"action": "free_completed", "addr": a, "size": size, "stream": s,
                          "time_us": t, "frames": []})
        else:
            size = rnd.choice([512, 4096, MiB, 4 * MiB, 32 * MiB])
            addr += 64 * MiB
            live[addr] = (size, stream)
            trace.append({"action": "alloc", "addr": addr, "size": size, "stream": stream,
                          "time_us": t, "frames": rnd.choice(stacks)})
    segments = [{"device": 0, "address": a, "total_size": max(2 * MiB, s), "allocated_size": s,
                 "active_size": s, "requested_size": s, "stream": st, "segment_type": "large",
                 "blocks": [{"address": a, "size": s, "requested_size": s,
                             "state": "active_allocated", "frames": []}]}
                for a, (s, st) in live.items()]
    with open(path, "wb") as f:
        pickle.dump({"segments": segments, "device_traces": [trace]}, f, protocol=4)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ptprof", required=True)
    ap.add_argument("--fixtures", required=True)
    ap.add_argument("--gpu-fixture", help="a snapshot recorded on a GPU (scripts/gpu-check)")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    shutil.rmtree(a.out, ignore_errors=True)
    os.makedirs(a.out)

    pages = {"scenario": os.path.join(a.fixtures, "snapshot_p4.pickle"),
             "libtorch_pickler": os.path.join(a.fixtures, "torch_typed.pickle"),
             "big": os.path.join(a.out, "big.pickle")}
    big_snapshot(pages["big"])
    if a.gpu_fixture and os.path.exists(a.gpu_fixture):
        pages["gpu"] = a.gpu_fixture

    b = Browser("file://" + a.out)
    try:
        # The probe: the checks must see a console error and an outside request.
        probe = os.path.join(a.out, "probe.html")
        with open(probe, "w") as f:
            f.write('<!DOCTYPE html><html><body><script>console.error("probe")</script>'
                    '<img src="http://example.invalid/x.png"></body></html>')
        b.open("/probe.html")
        found = b.problems()
        if not any("probe" in p for p in found) or not any("example.invalid" in p for p in found):
            fail(f"the probe page's console error and request were not both seen: {found}")

        for name, snap in pages.items():
            html = os.path.join(a.out, name + ".html")
            subprocess.run([a.ptprof, "memory", snap, html], check=True, timeout=120)
            summary = json.loads(subprocess.run([a.ptprof, "memory", "--json", snap], check=True,
                                                capture_output=True, text=True,
                                                timeout=120).stdout)
            b.open("/" + name + ".html")
            devices = b.wait(lambda: b.all("device"), what=name + ": device sections")
            if len(devices) != len(summary["devices"]):
                fail(f"{name}: {len(devices)} device sections, the summary has "
                     f"{len(summary['devices'])}")
            for sec, dev in zip(devices, summary["devices"]):
                tiles = dict(zip(b.texts(f"#cuda{dev['device']} .tile .label"),
                                 b.texts(f"#cuda{dev['device']} .tile .value")))
                shown = tiles.get("PEAK ALLOCATED") or tiles.get("Peak allocated")
                want = fmt_bytes(dev["peak_bytes"])
                if shown != want:
                    fail(f"{name} CUDA:{dev['device']}: page's peak {shown!r}, summary's {want}")
                if dev["trace_entries"]:
                    d = b.js("const p = document.querySelector(arguments[0]);"
                             "return p ? p.getAttribute('d') : null;",
                             f"#cuda{dev['device']} path.allocated")
                    if not d or d.count("V") < 2:
                        fail(f"{name} CUDA:{dev['device']}: no timeline drawn")
                    box = b.js("return document.querySelector(arguments[0]).getBBox().width;",
                               f"#cuda{dev['device']} path.allocated")
                    if box < 100:
                        fail(f"{name} CUDA:{dev['device']}: the timeline is {box}px wide")
                rows = b.driver.find_elements(
                    "css selector", f"#cuda{dev['device']} [data-testid=peak-stacks] tr")
                if len(rows) - 1 != len(dev["peak_by_stack"]):
                    fail(f"{name}: {len(rows) - 1} peak rows, summary {len(dev['peak_by_stack'])}")
                if dev["ooms"] and not b.all("ooms"):
                    fail(f"{name}: the OOM table is missing")
            if name == "scenario":
                first = b.texts("#cuda0 [data-testid=peak-stacks] summary")[0]
                if first != "build_model (train.cpp:10)":
                    fail(f"scenario: the peak's first stack reads {first!r}")
            problems = b.problems()
            if problems:
                fail(f"{name}: " + "; ".join(problems))
            b.screenshot(os.path.join(a.out, name + ".png"))
            print(f"ok {name}: {len(devices)} devices, screenshot {name}.png")
    finally:
        b.close()
    print("ok: every snapshot page renders, with no console message and no request")


if __name__ == "__main__":
    main()
