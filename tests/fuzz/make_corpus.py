#!/usr/bin/env python3
"""Writes the committed seed corpora of tests/fuzz/ (run from anywhere; deterministic).

Seeds are small on purpose: libFuzzer's default input length follows the largest seed, and
small inputs mutate into interesting ones fastest.
"""
import gzip
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURE = os.path.join(HERE, "..", "consumers", "fixtures", "run1",
                       "host_123.1712195495501688512.pt.trace.json")


def write(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def compact(obj):
    return json.dumps(obj, separators=(",", ":"))


def traces():
    """(name, JSON text) of the trace seeds: a real layout trimmed, and hand-made corners."""
    with open(FIXTURE) as f:
        real = json.load(f)
    evs = real["traceEvents"]
    keep = [e for e in evs if e.get("ph") != "X" or e.get("cat") == "Trace"]
    keep += [e for e in evs if e.get("ph") == "X" and e.get("cat") != "Trace"][:8]
    trimmed = dict(real, traceEvents=keep)
    out = [("kineto_layout.json", compact(trimmed))]
    base = {"schemaVersion": 1, "baseTimeNanoseconds": 1700000000000000000,
            "displayTimeUnit": "ms"}
    out.append(("nested_ops.json", compact(dict(base, traceEvents=[
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#0", "pid": 1, "tid": 1,
         "ts": 10.0, "dur": 100.5},
        {"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 1, "tid": 1, "ts": 11.25,
         "dur": 50.0, "args": {"External id": 2, "Sequence number": 7,
                               "Input Dims": [[8, 16], [32, 16], [32]]}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "pid": 1, "tid": 1, "ts": 12.0,
         "dur": 40.125, "args": {"External id": 3}},
        {"ph": "X", "cat": "operator", "name": "aten::relu", "pid": 1, "tid": 2, "ts": 70.0,
         "dur": 5.0},
        {"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Spans",
         "tid": "PyTorch Profiler", "ts": 0.0, "dur": 200.0},
    ]))))
    out.append(("gpu_and_flows.json", compact(dict(base, traceEvents=[
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
         "ts": 5.0, "dur": 3.0, "args": {"correlation": 9, "External id": 4, "cbid": 211}},
        {"ph": "s", "id": 9, "pid": 1, "tid": 1, "ts": 5.0, "cat": "ac2g", "name": "ac2g"},
        {"ph": "X", "cat": "kernel", "name": "void gemm<float>()", "pid": 0, "tid": 7,
         "ts": 9.0, "dur": 20.0, "args": {"device": 0, "stream": 7, "correlation": 9,
                                          "grid": [4, 1, 1], "block": [128, 1, 1]}},
        {"ph": "f", "id": 9, "pid": 0, "tid": 7, "ts": 9.0, "cat": "ac2g", "name": "ac2g",
         "bp": "e"},
        {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD", "pid": 0, "tid": 7,
         "ts": 30.0, "dur": 2.0, "args": {"device": 0, "stream": 7, "bytes": 4096}},
        {"ph": "X", "cat": "gpu_user_annotation", "name": "forward", "pid": 0, "tid": 7,
         "ts": 8.0, "dur": 30.0, "args": {"External id": 4}},
    ]))))
    out.append(("memory.json", compact(dict(base, traceEvents=[
        {"ph": "X", "cat": "cpu_op", "name": "aten::empty", "pid": 1, "tid": 1, "ts": 1.0,
         "dur": 2.0},
        {"ph": "i", "name": "[memory]", "pid": 1, "tid": 1, "ts": 1.5, "s": "t",
         "args": {"Addr": 140000000, "Bytes": 512, "Total Allocated": 512,
                  "Total Reserved": 2048, "Device Type": 0, "Device Id": -1}},
        {"ph": "i", "name": "[memory]", "pid": 1, "tid": 1, "ts": 9.0, "s": "t",
         "args": {"Addr": 140000000, "Bytes": -512, "Total Allocated": 0,
                  "Total Reserved": 2048, "Device Type": 1, "Device Id": 0}},
    ]))))
    # Names with escapes, UTF-8 and a NUL, as hostile range names are written.
    out.append(("hostile_names.json", compact(dict(base, traceEvents=[
        {"ph": "X", "cat": "user_annotation", "name": "q\"b\\s\n\t\u0001\u00e9\u4e2d\ud83d\ude00\u0000",
         "pid": 1, "tid": 1, "ts": 1.0, "dur": 2.0},
    ]))))
    out.append(("empty.json", compact({"traceEvents": []})))
    return out


def details():
    """(name, bytes) of the details seeds: op index byte, then the details format."""
    def tensor(dtype, sizes, strides=None):
        # strides: None (a layout without them), "dense" (rebuilt from the sizes), or a list.
        how = 0 if strides is None else 2 if strides == "dense" else 1
        b = struct.pack("<BbBB", 1, dtype, how, len(sizes))
        b += struct.pack("<%dq" % len(sizes), *sizes)
        if how == 1:
            b += struct.pack("<%dq" % len(strides), *strides)
        return b

    def scalar(tag, v):
        return struct.pack("<BB", 3, tag) + (struct.pack("<d", v) if tag == 1
                                             else struct.pack("<q", v))

    def int_list(vals):
        return struct.pack("<BBH", 4, 0, len(vals)) + struct.pack("<%dq" % len(vals), *vals)

    def tensor_list(items):
        b = struct.pack("<BH", 2, len(items))
        for dtype, sizes in items:
            b += struct.pack("<bB", dtype, len(sizes)) + struct.pack("<%dq" % len(sizes), *sizes)
        return b

    def inputs(*ins):
        return struct.pack("<B", len(ins)) + b"".join(ins)

    no_stack = struct.pack("<BB", 0, 0)
    f32 = 6  # c10::ScalarType::Float
    out = []
    out.append(("mm", bytes([0]) + inputs(tensor(f32, [4, 8], [8, 1]),
                                          tensor(f32, [8, 16], "dense")) + no_stack))
    out.append(("addmm", bytes([1]) + inputs(tensor(f32, [16]), tensor(f32, [4, 8]),
                                             tensor(f32, [8, 16]), scalar(0, 1),
                                             scalar(1, 0.5)) + no_stack))
    out.append(("conv2d", bytes([9]) + inputs(tensor(f32, [1, 3, 8, 8]),
                                              tensor(f32, [4, 3, 3, 3]), tensor(f32, [4]),
                                              int_list([1, 1]), int_list([0, 0]),
                                              int_list([1, 1]), scalar(0, 1)) + no_stack))
    out.append(("sdpa", bytes([13]) + inputs(tensor(f32, [2, 4, 16, 8]),
                                             tensor(f32, [2, 4, 16, 8]),
                                             tensor(f32, [2, 4, 16, 8]),
                                             struct.pack("<B", 0), scalar(1, 0.0),
                                             scalar(2, 1)) + no_stack))
    out.append(("cat_list", bytes([19]) + inputs(tensor_list([(f32, [2, 3]), (f32, [4, 3])]),
                                                 scalar(0, 0), struct.pack("<B", 5))
                + no_stack))
    out.append(("stack_only", bytes([16]) + struct.pack("<B", 0xFF) +
                struct.pack("<BB", 3, 1) + struct.pack("<3Q", 0x401000, 0x402000, 0x7f0000001000)))
    return out


def flight_record(version, start, end, corr, aux, name, group, depth, scope, flags, tid):
    """One record of src/trace/flight_format.h: eight little-endian words."""
    bits = depth | (scope << 16) | (flags << 24) | (tid << 32)
    return struct.pack("<8Q", version, start, end, corr, aux & (2**64 - 1),
                       name | (group << 32), bits, version)


def flight_dumps():
    """(name, bytes) of raw flight recorder dumps (src/trace/flight_format.h): a hang's digest
    with rings, the same without them, and a crash's with a torn record."""
    names = [b"ProfilerStep#", b"forward", b"aten::nonzero", b"c10d::allreduce_", b"0",
             b"aten::mm"]
    ends, total = [], 0
    for n in names:
        total += len(n)
        ends.append(total)
    names_section = struct.pack("<%dI" % len(ends), *ends) + b"".join(names)
    no_name = 0xFFFFFFFF
    t0 = 1790000000 * 10**9

    def dump(reason, rings, torn=False):
        thread = struct.pack("<qQQQQIIII32s", 100, 1, 0, 2, 0, 3, 3, 0, 0, b"trainer")
        stack = (flight_record(2, t0 - 5000, 0, 1, 12, 0xFFFFFFFE, no_name, 0, 7, 0, 100) +
                 flight_record(4, t0 - 4000, 0, 2, -1, 1, no_name, 1, 7, 0, 100) +
                 flight_record(6, t0 - 3000, 0, 3, -1, 2, no_name, 2, 0, 0, 100))
        log = flight_record(2, t0 - 6000, t0 - 5900, 1, 41, 3, 4, 0, 0, 2, 100)
        ring = (flight_record(2, t0 - 8000, t0 - 7000, 4, -1, 5, no_name, 2, 0, 0, 100) +
                flight_record(4 if not torn else 5, t0 - 6900, t0 - 6800, 5, -1, 5, no_name,
                              2, 0, 0, 100))
        header = struct.pack("<8sIIIIiiQqqqqqqqqqqqIIqqqqIIIIQ128s32s1024s",
                             b"PTFLIGHT", 1, 1376, reason, 1 if rings else 0,
                             11 if reason == 5 else 0, 1, 0, 1234, 100, 3, 8, t0, t0,
                             0, 0, 0, 0, 0, 0, 2, 10**10, 11, t0 - 5000, 5 * 10**9,
                             len(names), total, 1, 1, 0, b"host_1234_rank3", b"gloo",
                             b"no step() for 5.0 s")
        return header + names_section + thread + stack + log + (ring if rings else b"")

    return [("hang_rings.ptflight", dump(4, True)), ("hang_digest.ptflight", dump(4, False)),
            ("crash_torn.ptflight", dump(5, True, torn=True))]


SORT_BY = ["self_cpu_time_total", "cpu_time_total", "cpu_time", "self_cuda_time_total",
           "device_time_total", "count", "self_cpu_memory_usage", "flops", "", "cpu_time_totals"]


def eh_frame_section(fdes):
    """An .eh_frame: one CIE as GCC writes it ("zR", pc-relative sdata4 pointers, CFA = rsp + 8,
    return address at CFA - 8), then an FDE per (pc_range, instructions), then the terminator."""
    def record(body):
        body += b"\0" * (-(len(body) + 4) % 8)  # DW_CFA_nop padding, as assemblers do
        return struct.pack("<I", len(body)) + body
    cie = record(struct.pack("<IB", 0, 1) + b"zR\0" + bytes([1, 0x78, 16, 1, 0x1b])
                 + bytes([0x0c, 7, 8, 0x90, 1]))
    out = cie
    for pc_range, insns in fdes:
        here = len(out)
        # CIE pointer: back from this field to the CIE; pc_begin: 64 KiB below this field.
        body = struct.pack("<IiIB", here + 4, -0x10000, pc_range, 0) + bytes(insns)
        out += record(body)
    return out + struct.pack("<I", 0)


def eh_frames():
    """(name, bytes) of the hand-made .eh_frame seeds (real sections extracted from system
    libraries with objcopy -O binary --only-section=.eh_frame sit beside them)."""
    frame_pointer = [0x41, 0x0e, 0x10, 0x86, 0x02, 0x43, 0x0d, 0x06, 0x50, 0x0c, 0x07, 0x08]
    # GCC's stack realignment: CFA = r10, then *(rbp - 8); rbp saved by an expression;
    # remember/restore_state around an early return, args_size, advance_loc1/2/4.
    realign = [0x44, 0x0c, 0x0a, 0x00, 0x49, 0x10, 0x06, 0x02, 0x76, 0x00,
               0x4b, 0x0f, 0x03, 0x76, 0x78, 0x06, 0x0a, 0x2e, 0x10, 0x02, 0x20,
               0x0c, 0x07, 0x08, 0x0b, 0x03, 0x10, 0x00, 0x04, 0x08, 0x00, 0x00, 0x00]
    outermost = [0x07, 0x10]  # DW_CFA_undefined rip: _start
    return [("frame_pointer", eh_frame_section([(0x40, frame_pointer)])),
            ("realign_outermost", eh_frame_section([(0x200, realign), (0x10, outermost)]))]


def memory_snapshots():
    """(name, bytes) of small CUDA memory snapshots, as Python's pickle writes them (protocols 2
    and 4: MEMOIZE, FRAME), and one libtorch's pickler wrote (restore_type_tag, memoized keys)."""
    import pickle
    frames = [{"name": "forward", "filename": "train.cpp", "line": 12}]
    snap = {"segments": [{"device": 0, "address": 1 << 40, "total_size": 4096,
                          "allocated_size": 512, "active_size": 512, "requested_size": 500,
                          "stream": 0, "segment_type": "small", "segment_pool_id": (0, 0),
                          "is_expandable": False, "frames": frames,
                          "blocks": [{"address": 1 << 40, "size": 512, "requested_size": 500,
                                      "state": "active_allocated", "frames": frames},
                                     {"address": (1 << 40) + 512, "size": 3584,
                                      "requested_size": 0, "state": "inactive", "frames": []}]}],
            "device_traces": [[
                {"action": "alloc", "addr": 1 << 40, "size": 512, "stream": 0, "time_us": 10,
                 "frames": frames},
                {"action": "free_requested", "addr": 5, "size": 64, "stream": 3, "time_us": 11,
                 "frames": []},
                {"action": "free_completed", "addr": 5, "size": 64, "stream": 3, "time_us": 12,
                 "frames": []},
                {"action": "oom", "device_free": 0, "size": 1 << 33, "stream": 0,
                 "time_us": 13, "frames": frames}]]}
    # libtorch's own pickler (the fixture make_snapshots.py takes from torch._C._pickle_save).
    with open(os.path.join(HERE, "..", "core", "trace", "fixtures", "memory_snapshot",
                           "torch_typed.pickle"), "rb") as f:
        typed = f.read()
    return [("python_p2.pickle", pickle.dumps(snap, protocol=2)),
            ("python_p4.pickle", pickle.dumps(snap, protocol=4)),
            ("torch_typed.pickle", typed)]


def main():
    for name, text in traces():
        write("trace_reader", name, text)
        write("trace_file", name, text)
        write("trace_file", name + ".gz", gzip.compress(text.encode(), mtime=0))
    # A gzip stream cut short, and two members back to back.
    z = gzip.compress(traces()[1][1].encode(), mtime=0)
    write("trace_file", "truncated.json.gz", z[: len(z) // 2])
    write("trace_file", "two_members.json.gz", z + gzip.compress(b" ", mtime=0))
    for name, data in details():
        write("details", name, data)
    for name, data in flight_dumps():
        write("flight_dump", name, data)
    for i, name in enumerate(SORT_BY):
        write("sort_by", "name%02d" % i, name)
    for name, data in eh_frames():
        write("eh_frame_cfi", name, data)
    for name, data in memory_snapshots():
        write("memory_snapshot", name, data)


if __name__ == "__main__":
    main()
