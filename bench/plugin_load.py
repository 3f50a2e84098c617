"""Times TensorBoard's PyTorch Profiler plugin loading one trace, as it does for a run.

    python bench/plugin_load.py TRACE [--last-source DIR] [--max-memory-gb N]

What the plugin's RunLoader does per worker file (torch_tb_profiler/profiler/loader.py,
_process_data): RunProfileData.parse (read, decompress, json.loads, process, analyze), then
RunGenerator.generate_run_profile (the views). Prints one JSON object: wall and CPU seconds and
the peak RSS of this process. With --last-source, the plugin's last source (its tb_plugin
directory) is imported instead of the installed release. With --max-memory-gb, the process's
address space is capped there (a machine shared with others is not run out of memory): a load
that needs more prints {"error": "..."} instead.
"""
import argparse
import contextlib
import io
import json
import logging
import resource
import sys
import tempfile
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--last-source")
    ap.add_argument("--max-memory-gb", type=float)
    args = ap.parse_args()
    if args.max_memory_gb:
        cap = int(args.max_memory_gb * 2 ** 30)
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    if args.last_source:
        sys.path.insert(0, args.last_source)
    logging.disable(logging.CRITICAL)
    from torch_tb_profiler.profiler.data import RunProfileData
    from torch_tb_profiler.profiler.run_generator import RunGenerator

    w0, c0 = time.perf_counter(), time.process_time()
    try:
        with tempfile.TemporaryDirectory() as cache, \
                contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            data = RunProfileData.parse("worker", 0, args.trace, cache)
            RunGenerator("worker", 0, data).generate_run_profile()
    except MemoryError:
        print(json.dumps({"error": f"out of memory within {args.max_memory_gb} GB after "
                                   f"{time.perf_counter() - w0:.1f} s"}))
        return
    w1, c1 = time.perf_counter(), time.process_time()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"wall_s": round(w1 - w0, 3), "cpu_s": round(c1 - c0, 3),
                      "peak_rss_bytes": peak}))


if __name__ == "__main__":
    main()
