#!/usr/bin/env python3
"""HTA's communication analyses on an NCCL trace as ptprof writes it (issue 17): the real rank of
an NCCL job in ../shared/traces (PyTorch's profiler on a GPU machine) is read by ptprof and
written again ('ptprof merge' of its directory: the reader and the Chrome-trace writer), and HTA
must find the same collectives' arguments (Collective name, In/Out msg nelems, dtype, Group size,
split sizes), the same computation/communication overlap and the same kernel breakdown in both.

usage: check_nccl_hta.py PTPROF_CLI SHARED_TRACES WORKDIR
"""
import os
import shutil
import subprocess
import sys


def main():
    cli, shared, work = sys.argv[1:4]
    src = os.path.join(shared, "hta", "nccl_parser_config", "nccl_data.json.gz")
    if not os.path.exists(src):
        print(f"skip: no {src}")
        return 0
    shutil.rmtree(work, ignore_errors=True)
    orig, ours = os.path.join(work, "pytorch"), os.path.join(work, "ptprof")
    os.makedirs(orig)
    os.makedirs(ours)
    # A run directory of one rank (rank 0 of 2, from its distributedInfo).
    shutil.copy(src, os.path.join(orig, "gpu_1_rank0.1.pt.trace.json.gz"))
    p = subprocess.run([cli, "merge", orig, "-o", os.path.join(ours, "rank0.pt.trace.json")],
                       capture_output=True, text=True)
    print(p.stdout, end="")
    if p.returncode != 0:
        print(f"FAIL ptprof merge: exit {p.returncode}: {p.stderr}")
        return 1

    from hta.configs.parser_config import ParserConfig
    cfg = ParserConfig(ParserConfig.get_default_args() + ParserConfig.ARGS_COMMUNICATION)
    ParserConfig.set_default_cfg(cfg)
    from hta.trace_analysis import TraceAnalysis

    got = {}
    for name, d in (("pytorch", orig), ("ptprof", ours)):
        a = TraceAnalysis(trace_dir=d)
        df = a.t.get_trace(0)
        kernels = df[df["collective_name"].astype(str) != ""]
        cols = ["name", "collective_name", "in_msg_nelems", "out_msg_nelems", "msg_dtype",
                "group_size", "in_split_size", "out_split_size"]
        rows = sorted(tuple(str(r[c]) for c in cols) for _, r in kernels.iterrows())
        got[name] = {
            "collectives": rows,
            "overlap": a.get_comm_comp_overlap(visualize=False).to_dict(),
            "kernels": a.get_gpu_kernel_breakdown(visualize=False)[0].to_dict(),
        }
    failures = 0
    for key in ("collectives", "overlap", "kernels"):
        same = got["pytorch"][key] == got["ptprof"][key]
        failures += not same
        shown = len(got["ptprof"][key]) if key == "collectives" else got["ptprof"][key]
        print(("ok " if same else "FAIL ") + f"HTA's {key} are the same on ptprof's copy ({shown})")
        if not same:
            print("  pytorch:", str(got["pytorch"][key])[:1000])
            print("  ptprof: ", str(got["ptprof"][key])[:1000])
    if not got["ptprof"]["collectives"]:
        print("FAIL HTA found no collective arguments")
        failures += 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
