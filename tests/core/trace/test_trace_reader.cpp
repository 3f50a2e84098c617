// The `ptprof` command's trace reader: reads ptprof's own traces back exactly, and rejects
// malformed input with an error naming what is wrong.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <tuple>

#include "ptprof/error.h"
#include "ptprof/key_averages.h"
#include "ptprof/trace.h"
#include "test_support.h"
#include "trace/byte_source.h"
#include "trace/trace_reader.h"

namespace ptprof {
namespace {

using test::gzip;
using test::write_file;

TEST(TraceReader, MalformedInputIsRejectedWithAReason) {
  auto error_of = [](const std::string& text) {
    try {
      detail::parse_trace(text, "input");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(error_of("{").find("not valid JSON"), std::string::npos);
  EXPECT_NE(error_of("[]").find("top level is not a JSON object"), std::string::npos);
  EXPECT_NE(error_of("{}").find("traceEvents"), std::string::npos);
  EXPECT_NE(
      error_of(R"({"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 1}]})").find("\"cat\""),
      std::string::npos);
  EXPECT_NE(error_of(R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "ts": 1, "dur": 1}]})")
                .find("\"name\""),
            std::string::npos);
  EXPECT_NE(error_of(R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "ts": 1,
                         "dur": -5}]})")
                .find("negative"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a",
                         "ts": 1e300, "dur": 1}]})")
                .find("out of range"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"traceEvents": [1]})").find("traceEvents[0]"), std::string::npos);
  EXPECT_EQ(error_of(R"({"traceEvents": [{"ph": "M", "name": "process_name"}]})"), "");
}

TEST(TraceReader, TimesAreTheExactDecimalOfTheText) {
  // ns from the µs text itself, never through a double: more than three decimals round half
  // away from zero, exponents shift the digits.
  auto start_of = [](const std::string& ts, const std::string& base = "0") {
    const Trace t = detail::parse_trace(
        R"({"baseTimeNanoseconds": )" + base +
            R"(, "traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "ts": )" + ts +
            R"(, "dur": 0.0015}]})",
        "input");
    EXPECT_EQ(t.events.at(0).duration_ns, 2);
    return t.events.at(0).start_ns;
  };
  EXPECT_EQ(start_of("1"), 1000);
  EXPECT_EQ(start_of("1.5"), 1500);
  EXPECT_EQ(start_of("4458676416788.066"), 4458676416788066);
  EXPECT_EQ(start_of("4458676416788.0665"), 4458676416788067);
  EXPECT_EQ(start_of("0.0005"), 1);
  EXPECT_EQ(start_of("0.00049999"), 0);
  EXPECT_EQ(start_of("-0.0005"), -1);
  EXPECT_EQ(start_of("-1.2344999"), -1234);
  EXPECT_EQ(start_of("-0.0"), 0);
  EXPECT_EQ(start_of("1.5e3"), 1500000);
  EXPECT_EQ(start_of("15E-4"), 2);
  EXPECT_EQ(start_of("1e-7"), 0);
  EXPECT_EQ(start_of("0.000001e+6"), 1000);
  // An offset beyond INT64_MAX ns is fine where the time itself fits.
  EXPECT_EQ(start_of("12000000000000000.000", "-9000000000000000000"), 3000000000000000000);
  EXPECT_THROW(start_of("12000000000000000.000"), Error);
  EXPECT_THROW(start_of("1e400"), Error);
}

TEST(TraceReader, ATraceSpanningTheWholeInt64RangeRoundTrips) {
  // The writer's base is the trace's earliest time floored to Kineto's period; offsets from it
  // can exceed INT64_MAX and must still read back exactly.
  Trace t;
  for (int64_t start : {int64_t{-9000000000000000001}, int64_t{0}, int64_t{9000000000000000001}}) {
    Event e;
    e.name = t.intern("op");
    e.start_ns = start;
    e.duration_ns = 7;
    e.tid = 1;
    t.events.push_back(e);
    MemoryEvent m;
    m.time_ns = start + 3;
    m.bytes = 16;
    t.memory_events.push_back(m);
  }
  t.window_start_ns = t.events.front().start_ns;
  t.window_end_ns = t.events.back().start_ns + 7;
  const Trace back = detail::parse_trace(t.to_json(), "round trip");
  ASSERT_EQ(back.events.size(), t.events.size());
  ASSERT_EQ(back.memory_events.size(), t.memory_events.size());
  for (std::size_t i = 0; i < t.events.size(); ++i) {
    EXPECT_EQ(back.events[i].start_ns, t.events[i].start_ns);
    EXPECT_EQ(back.events[i].duration_ns, 7);
    EXPECT_EQ(back.memory_events[i].time_ns, t.memory_events[i].time_ns);
  }
  EXPECT_EQ(back.window_start_ns, t.window_start_ns);
  EXPECT_EQ(back.window_end_ns, t.window_end_ns);
}

// ---- helpers for the tests below ---------------------------------------------------------------

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::string error_of_text(const std::string& text) {
  return error_of([&] { detail::parse_trace(text, "input"); });
}

// What ptprof's reader says about a bad part at `offset` of `what`.
std::string message(const std::string& what, std::size_t offset, const std::string& text) {
  return "ptprof: " + what + ": byte " + std::to_string(offset) +
         " of the uncompressed JSON: " + text;
}

std::string join(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

// Everything the trace file says about one input, as text for readable failures. An input

// ---- errors ------------------------------------------------------------------------------------

TEST(TraceReader, ErrorsNameTheFileTheByteAndWhatIsWrong) {
  auto at = [](const std::string& text, const std::string& mark) { return text.find(mark); };
  std::string t =
      R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "ts": 1, "dur": -5}]})";
  EXPECT_EQ(error_of_text(t),
            message("input", at(t, "-5"), R"(traceEvents[0]: "dur" is negative)"));
  t = R"({"traceEvents": [{"ph": "i", "name": "x"}, {"ph": "X", "cat": "cpu_op", "name": "a", "ts": "1", "dur": 1}]})";
  EXPECT_EQ(error_of_text(t),
            message("input", at(t, "\"1\""), R"(traceEvents[1]: "ts" is not a number)"));
  t = R"({"traceEvents": [], "x": tru})";
  EXPECT_EQ(error_of_text(t), message("input", at(t, "tru"),
                                      "not valid JSON: expected a value (did you mean true?)"));
  t = R"({"traceEvents": [], "x": "no end)";
  EXPECT_EQ(error_of_text(t),
            message("input", at(t, "\"no"), "not valid JSON: a string is not terminated"));
  t = R"({"traceEvents": []} x)";
  EXPECT_EQ(error_of_text(t), message("input", at(t, "x"),
                                      "not valid JSON: unexpected 'x' after the top-level value"));
  t = R"({"traceEvents": [1, 2]})";
  EXPECT_EQ(error_of_text(t), message("input", at(t, "1"), "traceEvents[0] is not an object"));
  t = R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "ts": 1 "dur": 1}]})";
  EXPECT_EQ(error_of_text(t),
            message("input", at(t, "\"dur"),
                    "not valid JSON: expected ',' or '}' in an object, found '\"'"));
  t = R"({"traceEvents": [], "traceEvents": []})";
  EXPECT_EQ(error_of_text(t), message("input", t.rfind("[]"), "\"traceEvents\" appears twice"));
  t = R"({"baseTimeNanoseconds": 1.5, "traceEvents": []})";
  EXPECT_EQ(error_of_text(t),
            message("input", at(t, "1.5"), "\"baseTimeNanoseconds\" is not an int64 integer"));
  t = R"({"traceEvents": [], "deep": )" + std::string(2000, '[');
  EXPECT_EQ(error_of_text(t), message("input", at(t, "[[") + 1024,
                                      "not valid JSON: arrays and objects are nested deeper than "
                                      "1024"));
  t = R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "ts": )" +
      std::string(1100, '1');
  EXPECT_NE(error_of_text(t).find("longer than 1024 characters"), std::string::npos);
  EXPECT_EQ(error_of_text(""), message("input", 0, "not valid JSON: the input is empty"));
  EXPECT_EQ(error_of_text("\xef\xbb\xbf{}"),
            message("input", 0, "the top level is not a JSON object"));
}

TEST(TraceReader, FileErrorsNameTheFileAndTheOffsetInTheUncompressedText) {
  test::TempDir dir;
  const std::string text =
      R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "ts": 1, "dur": 2}]})";
  const std::string gz = gzip(text);
  auto read_error = [&](const std::string& name, const std::string& bytes) {
    const std::string path = dir.path() + "/" + name;
    write_file(path, bytes);
    return error_of([&] { detail::read_trace(path); });
  };
  // Truncated: the message says how far the text got, and where the compressed data ended.
  std::string e = read_error("truncated.json.gz", gz.substr(0, gz.size() - 9));
  EXPECT_NE(e.find("truncated.json.gz: byte "), std::string::npos) << e;
  EXPECT_NE(e.find("of the uncompressed JSON: the gzip data is truncated (compressed byte "),
            std::string::npos)
      << e;
  std::string corrupt = gz;
  corrupt[gz.size() / 2] ^= 0x55;
  corrupt[gz.size() / 2 + 1] ^= 0x55;
  e = read_error("corrupt.json.gz", corrupt);
  EXPECT_NE(e.find("the gzip data is corrupt"), std::string::npos) << e;
  e = read_error("trailing.json.gz", gz + "garbage");
  EXPECT_EQ(e, message(dir.path() + "/trailing.json.gz", text.size(),
                       "the bytes after a complete gzip member are not another gzip member "
                       "(compressed byte " +
                           std::to_string(gz.size()) + ")"));
  // The JSON's own errors count uncompressed bytes, gzip'ed or not.
  const std::string bad = text.substr(0, text.size() - 4) + "-2}]}";
  const std::string expected = "traceEvents[0]: \"dur\" is negative";
  EXPECT_EQ(read_error("bad.json.gz", gzip(bad)),
            message(dir.path() + "/bad.json.gz", bad.find("-2"), expected));
  EXPECT_EQ(read_error("bad.json", bad),
            message(dir.path() + "/bad.json", bad.find("-2"), expected));
  e = error_of([&] { detail::read_trace(dir.path() + "/missing.json"); });
  EXPECT_EQ(e, "ptprof: cannot open " + dir.path() + "/missing.json: No such file or directory");
}

// More than 4 GiB of JSON (zlib counts in 32 bits): read to the end, and an error past 4 GiB
// names its exact offset. The file is ~4 MB: many gzip members of 64 MiB of whitespace.
TEST(TraceReader, MoreThanFourGiBIsReadToTheEndWithExactOffsets) {
  test::TempDir dir;
  const std::string path = dir.path() + "/huge.json.gz";
  const std::string head = R"({"baseTimeNanoseconds": 1000, "traceEvents": [)";
  const std::string spaces(std::size_t{64} << 20, ' ');
  const std::string member = gzip(spaces, 9);
  constexpr int kMembers = 65;  // 4160 MiB
  const std::string tail =
      R"({"ph": "X", "cat": "cpu_op", "name": "late", "pid": 1, "tid": 2, "ts": 1.5, "dur": 2},)"
      R"( {"ph": "X", "cat": "cpu_op", "name": "bad", "ts": 1, "dur": -1}]})";
  {
    std::ofstream f(path, std::ios::binary);
    const std::string h = gzip(head);
    f.write(h.data(), static_cast<std::streamsize>(h.size()));
    for (int i = 0; i < kMembers; ++i)
      f.write(member.data(), static_cast<std::streamsize>(member.size()));
    const std::string tl = gzip(tail);
    f.write(tl.data(), static_cast<std::streamsize>(tl.size()));
  }
  const uint64_t before_tail = head.size() + uint64_t{kMembers} * spaces.size();
  ASSERT_GT(before_tail, uint64_t{1} << 32);
  // traceEvents[1]: so traceEvents[0], past 4 GiB, was read.
  EXPECT_EQ(error_of([&] { detail::read_trace(path); }),
            message(path, before_tail + tail.find("-1"), "traceEvents[1]: \"dur\" is negative"));
}

// ---- layouts of other writers ------------------------------------------------------------------

TEST(TraceReader, PyTorch18LayoutWithLegacyCategoriesAndAbsoluteMicroseconds) {
  // As Kineto wrote traces for PyTorch 1.8 (libkineto/src/output_json.cpp, March 2021): no
  // baseTimeNanoseconds, integer µs since the epoch, capitalized categories, tids as strings,
  // "external id", "Input dims", "async"/"launch" flows, a bare N/A, GPU spans as "User".
  const std::string text = R"JSON(
{
  "schemaVersion": 1,
  "traceEvents": [
  {
    "name": "process_name", "ph": "M", "ts": 1616000000000000, "pid": 4093, "tid": 0,
    "args": {
      "name": "python"
    }
  },
  {
    "name": "process_labels", "ph": "M", "ts": 1616000000000000, "pid": 4093, "tid": 0,
    "args": {
      "labels": "CPU"
    }
  },
  {
    "name": "thread_name", "ph": "M", "ts": 1616000000000000, "pid": 4093, "tid": "4094",
    "args": {
      "name": "thread 4094 (python)"
    }
  },
  {
    "ph": "X", "cat": "Operator", "name": "ProfilerStep#3", "pid": 4093, "tid": "4094",
    "ts": 1616000000000050, "dur": 500,
    "args": {
       "Input dims": [], "Input type": [], "Input names": [],
       "Output dims": [], "Output type": [], "Output names": [],
       "Device": 0, "External id": 2, "Extra arguments": {},
       "Call stack": "",
       "Trace name": "PyTorch Profiler", "Trace iteration": 0
    }
  },
  {
    "ph": "X", "cat": "Operator", "name": "aten::addmm", "pid": 4093, "tid": "4094",
    "ts": 1616000000000100, "dur": 50,
    "args": {
       "Input dims": [[32], [8, 16], [16, 32], [], []], "Input type": ["float", "float", "float", "Scalar", "Scalar"],
       "Input names": ["", "", "", "", ""],
       "Output dims": [], "Output type": [], "Output names": [],
       "Device": 0, "External id": 3, "Extra arguments": {},
       "Call stack": "train.py(12): step;module.py(889): _call_impl",
       "Trace name": "PyTorch Profiler", "Trace iteration": 0
    }
  },
  {
    "ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": 4093, "tid": "4094",
    "ts": 1616000000000120, "dur": 10,
    "args": {
      "cbid": 211, "correlation": 1025,
      "external id": 3, "external ts": 1616000000000100
    }
  },
  {
    "ph": "s", "id": 1025, "pid": 4093, "tid": 4094, "ts": 1616000000000120,
    "cat": "async", "name": "launch"
  },
  {
    "ph": "X", "cat": "Kernel", "name": "volta_sgemm_32x128_nn", "pid": 0, "tid": "stream 7",
    "ts": 1616000000000140, "dur": 4,
    "args": {
      "queued": 0, "device": 0, "context": 1,
      "stream": 7, "correlation": 1025, "external id": 3,
      "registers per thread": 57,
      "shared memory": 16384,
      "warps per SM": 0.5,
      "grid": [1, 4, 1],
      "block": [256, 1, 1]
    }
  },
  {
    "ph": "f", "id": 1025, "pid": 0, "tid": "stream 7", "ts": 1616000000000140,
    "cat": "async", "name": "launch", "bp": "e"
  },
  {
    "ph": "X", "cat": "Memcpy", "name": "Memcpy DtoH (Device -> Pinned)", "pid": 0, "tid": "stream 7",
    "ts": 1616000000000160, "dur": 0,
    "args": {
      "device": 0, "context": 1,
      "stream": 7, "correlation": 1030, "external id": 3,
      "bytes": 256, "memory bandwidth (GB/s)": N/A
    }
  },
  {
    "ph": "X", "cat": "Memset", "name": "Memset (Device)", "pid": 0, "tid": "stream 7",
    "ts": 1616000000000170, "dur": 1,
    "args": {
      "device": 0, "context": 1,
      "stream": 7, "correlation": 1031, "external id": 3,
      "bytes": 64, "memory bandwidth (GB/s)": 0.064
    }
  },
  {
    "ph": "X", "cat": "User", "name": "ProfilerStep#3",
    "pid": 0, "tid": "stream 7 user",
    "ts": 1616000000000139, "dur": 40,
    "args": {
      "External id": 2
    }
  },
  {
    "ph": "X", "cat": "Python", "name": "train.py(12): step", "pid": 4093, "tid": "4094",
    "ts": 1616000000000060, "dur": 400
  },
  {
    "ph": "X", "cat": "Trace", "ts": 1616000000000000, "dur": 1000,
    "pid": "Traces", "tid": "PyTorch Profiler",
    "name": "PyTorch Profiler (0)",
    "args": {
      "Op count": 1
    }
  },
  {
    "name": "Iteration Start: PyTorch Profiler", "ph": "i", "s": "g",
    "pid": "Traces", "tid": "Trace PyTorch Profiler", "ts": 1616000000000000
  },
  {
    "name": "Record Window End", "ph": "i", "s": "g",
    "pid": "", "tid": "", "ts": 1616000000001000
  }
]})JSON";
  const Trace t = detail::parse_trace(text, "pytorch-1.8");
  ASSERT_EQ(t.events.size(), 7u);  // the Python event has no place in the model
  const int64_t us = 1000;
  const int64_t t0 = int64_t{1616000000000000} * us;
  EXPECT_EQ(t.window_start_ns, t0);
  EXPECT_EQ(t.window_end_ns, t0 + 1000 * us);
  EXPECT_EQ(t.pid, 4093);
  EXPECT_EQ(t.process_name, "python");
  ASSERT_EQ(t.threads.size(), 1u);
  EXPECT_EQ(t.threads[0].tid, 4094);
  EXPECT_EQ(t.threads[0].name, "python");
  EXPECT_EQ(t.steps, (std::vector<int64_t>{3}));

  const Event& step = t.events[0];
  EXPECT_EQ(step.kind, EventKind::UserAnnotation);  // old traces' steps were "Operator"
  const Event& op = t.events[1];
  EXPECT_EQ(op.kind, EventKind::CpuOp);
  EXPECT_EQ(op.start_ns, t0 + 100 * us);
  EXPECT_EQ(op.duration_ns, 50 * us);
  EXPECT_EQ(op.tid, 4094);
  EXPECT_EQ(op.external_id, 3u);
  EXPECT_EQ(op.parent, 0);
  ASSERT_GE(op.inputs, 0);
  const auto& in = t.op_inputs[op.inputs];
  ASSERT_EQ(in.size(), 5u);
  EXPECT_EQ(in[1].kind, OpInput::Kind::Tensor);
  EXPECT_EQ(in[1].sizes, (std::vector<int64_t>{8, 16}));
  EXPECT_EQ(in[3].kind, OpInput::Kind::Scalar);
  ASSERT_GE(op.stack, 0);
  EXPECT_EQ(t.stacks[op.stack],
            (std::vector<std::string>{"train.py(12): step", "module.py(889): _call_impl"}));

  const Event& launch = t.events[2];
  EXPECT_EQ(launch.kind, EventKind::CudaRuntime);
  EXPECT_EQ(launch.external_id, 3u);
  EXPECT_EQ(launch.correlation, 1025u);
  EXPECT_EQ(launch.cbid, 211);
  EXPECT_TRUE(launch.flow_start);
  const Event& kernel = t.events[3];
  EXPECT_EQ(kernel.kind, EventKind::Kernel);
  EXPECT_EQ(kernel.tid, 7);
  EXPECT_EQ(kernel.stream, 7);
  EXPECT_EQ(kernel.external_id, 3u);
  EXPECT_TRUE(kernel.flow_end);
  EXPECT_EQ(kernel.kernel.grid[1], 4);
  EXPECT_EQ(kernel.kernel.block[0], 256);
  EXPECT_EQ(kernel.kernel.registers_per_thread, 57);
  EXPECT_EQ(kernel.kernel.warps_per_sm, 0.5f);
  const Event& copy = t.events[4];
  EXPECT_EQ(copy.kind, EventKind::Memcpy);
  EXPECT_EQ(copy.transfer.bytes, 256u);
  EXPECT_EQ(copy.transfer.copy_kind, 2);  // DtoH
  EXPECT_EQ(copy.transfer.src_kind, 3);   // Device
  EXPECT_EQ(copy.transfer.dst_kind, 2);   // Pinned
  EXPECT_EQ(t.events[5].kind, EventKind::Memset);
  EXPECT_EQ(t.events[5].transfer.dst_kind, 3);
  EXPECT_EQ(t.events[6].kind, EventKind::GpuUserAnnotation);
  EXPECT_EQ(t.events[6].tid, 7);

  // What the command prints of it: the op's GPU time through External id.
  const KeyAverages averages = t.key_averages();
  const KeyAverage* addmm = averages.find("aten::addmm");
  ASSERT_NE(addmm, nullptr);
  EXPECT_EQ(addmm->self_device_time_total_ns, 5 * us);
}

TEST(TraceReader, KinetoLayoutsOfLaterYears) {
  // 2021-2022: "gpu_user_Annotation", flows "async_cpu_to_gpu"; 2024-05 to 2025-03:
  // baseTimeNanoseconds after traceEvents; late 2025: a "cuda_sync" and "ac2g" flows.
  const std::string text = R"JSON({
  "schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA A100", "numSms": 108,
    "maxSharedMemoryPerMultiProcessor": 1}],
  "distributedInfo": {"backend": "nccl", "rank": 1, "world_size": 2},
  "traceEvents": [
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#7", "pid": 10, "tid": 11, "ts": 5.000, "dur": 100.000},
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 10, "tid": 11, "ts": 10.250, "dur": 20.001,
   "args": {"External id": 5, "Record function id": 0, "Ev Idx": 1, "Sequence number": 77, "Fwd thread id": 1,
            "Input Dims": [[2, 3], [3, 4]], "Input type": ["float", "float"]}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 11, "ts": 12.000, "dur": 3.000,
   "args": {"cbid": 211, "correlation": 99}},
  {"ph": "s", "id": 99, "pid": 10, "tid": 11, "ts": 12.000, "cat": "async_cpu_to_gpu", "name": "async_gpu"},
  {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 16.000, "dur": 1.999,
   "args": {"External id": 5, "device": 0, "stream": 7, "correlation": 99, "blocks per SM": "inf"}},
  {"ph": "f", "id": 99, "pid": 0, "tid": 7, "ts": 16.000, "cat": "async_cpu_to_gpu", "name": "async_gpu", "bp": "e"},
  {"ph": "X", "cat": "gpu_user_Annotation", "name": "ProfilerStep#7", "pid": 0, "tid": 7, "ts": 15.999, "dur": 2.001},
  {"ph": "X", "cat": "cuda_sync", "name": "Event Sync", "pid": 0, "tid": 1, "ts": 30.000, "dur": 1.000,
   "args": {"cuda_sync_kind": "event", "stream": -1, "correlation": 120, "device": 0, "context": 1}},
  {"ph": "s", "id": 3, "pid": 10, "tid": 11, "ts": 10.250, "cat": "fwdbwd", "name": "fwdbwd"},
  {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 10, "tid": 11, "ts": 11.000,
   "args": {"Total Reserved": 2097152, "Total Allocated": 512, "Bytes": 512, "Addr": 18446744073709551615,
            "Device Id": 0, "Device Type": 1, "Ev Idx": 2}},
  {"ph": "X", "cat": "Trace", "ts": 0.000, "dur": 200.000, "pid": "Spans", "tid": "PyTorch Profiler",
   "name": "PyTorch Profiler (4)", "args": {"Op count": 0}},
  {"name": "Record Window End", "ph": "i", "s": "g", "pid": "", "tid": "", "ts": 250.000}
  ],
  "traceName": "x.json",
  "displayTimeUnit": "ms",
  "baseTimeNanoseconds": 1711964646000000000
})JSON";
  const Trace t = detail::parse_trace(text, "kineto-2024");
  const int64_t base = 1711964646000000000;
  ASSERT_EQ(t.events.size(), 6u);
  EXPECT_EQ(t.window_start_ns, base);
  EXPECT_EQ(t.window_end_ns, base + 200000);
  EXPECT_EQ(t.window_index, 4);
  EXPECT_EQ(t.events[1].start_ns, base + 10250);
  EXPECT_EQ(t.events[1].duration_ns, 20001);
  EXPECT_EQ(t.events[1].sequence_nr, 77);
  EXPECT_EQ(t.events[1].fwd_thread_id, 1u);
  EXPECT_TRUE(t.events[2].flow_start);
  EXPECT_TRUE(t.events[3].flow_end);
  EXPECT_TRUE(std::isinf(t.events[3].kernel.blocks_per_sm));
  EXPECT_EQ(t.events[4].kind, EventKind::GpuUserAnnotation);
  EXPECT_EQ(t.events[5].kind, EventKind::CudaSync);
  EXPECT_EQ(t.events[5].stream, -1);
  EXPECT_EQ(t.events[5].correlation, 120u);
  ASSERT_EQ(t.memory_events.size(), 1u);
  EXPECT_EQ(t.memory_events[0].time_ns, base + 11000);
  EXPECT_EQ(t.memory_events[0].address, 18446744073709551615u);
  EXPECT_EQ(t.memory_events[0].device_type, 1);
  EXPECT_EQ(t.memory_events[0].op, 1);
  ASSERT_EQ(t.devices.size(), 1u);
  EXPECT_EQ(t.devices[0].num_sms, 108);
  ASSERT_TRUE(t.distributed.has_value());
  EXPECT_EQ(t.distributed->backend, "nccl");
  EXPECT_EQ(t.distributed->rank, 1);
  EXPECT_EQ(t.distributed->world_size, 2);
  EXPECT_EQ(t.metadata.count("distributedInfo"), 0u);  // the writer gives it back as it was
  EXPECT_EQ(t.steps, (std::vector<int64_t>{7}));

  // A base after the events that puts one outside int64 ns is an error at that time (here the
  // end of the event, at its "dur").
  const std::string late =
      R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "ts": 1.5, "dur": 1}],
                                 "baseTimeNanoseconds": 9223372036854775000})";
  EXPECT_EQ(error_of_text(late),
            message("input", late.find("1}"),
                    "baseTimeNanoseconds (at byte " + std::to_string(late.find("9223")) +
                        ") + this time is not an int64 ns time"));
}

TEST(TraceReader, TensorBoardLayoutReadsBackAsTheTraceItWasWrittenFrom) {
  // Trace::SaveOptions::tensorboard writes runtime and driver calls as "Runtime" and
  // data-loader ranges as "cpu_op": the reader gives back the kinds they had.
  Trace t;
  auto add = [&](EventKind kind, const char* name, int64_t start) {
    Event e;
    e.kind = kind;
    e.name = t.intern(name);
    e.start_ns = start;
    e.duration_ns = 10;
    e.pid = 1;
    e.tid = 1;
    t.events.push_back(e);
  };
  add(EventKind::UserAnnotation, "ProfilerStep#1", 1000);
  add(EventKind::UserAnnotation, "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
      1001);
  add(EventKind::CudaRuntime, "cudaLaunchKernel", 1011);
  add(EventKind::CudaDriver, "cuLaunchKernel", 1021);
  add(EventKind::CpuOp, "aten::add", 1031);
  t.window_start_ns = 1000;
  t.window_end_ns = 2000;
  test::TempDir dir;
  Trace::SaveOptions tb;
  tb.tensorboard = true;
  t.save(dir.path() + "/tb.json", tb);
  const std::string text = detail::read_trace_file(dir.path() + "/tb.json");
  ASSERT_NE(text.find("\"Runtime\""), std::string::npos);
  const Trace back = detail::read_trace(dir.path() + "/tb.json");
  ASSERT_EQ(back.events.size(), t.events.size());
  for (std::size_t i = 0; i < t.events.size(); ++i)
    EXPECT_EQ(back.events[i].kind, t.events[i].kind) << t.events[i].name;
}

TEST(TraceReader, LenientWhereConsumersAreStrictWhereItMatters) {
  // Raw control characters in strings (Python's json with strict=False, TensorBoard's
  // fallback), escapes of every kind, lone surrogates as U+FFFD, keys in any order, unknown
  // keys and values of unexpected types ignored.
  const std::string text =
      "{\"traceEvents\": [{\"args\": {\"External id\": \"x\", \"stream\": 1.5, \"grid\": 3},"
      " \"dur\": 1, \"ts\": 2, \"name\": \"tab\there \\u00e9\\ud83d\\ude00\\ud800\\/\\\"\","
      " \"tid\": null, \"cat\": \"CPU_OP\", \"ph\": \"X\", \"extra\": [{\"a\": [true, false, "
      "null]}]}]}";
  const Trace t = detail::parse_trace(text, "input");
  ASSERT_EQ(t.events.size(), 1u);
  EXPECT_EQ(t.events[0].name, "tab\there \xc3\xa9\xf0\x9f\x98\x80\xef\xbf\xbd/\"");
  EXPECT_EQ(t.events[0].external_id, 0u);
  EXPECT_EQ(t.events[0].stream, -1);
  EXPECT_EQ(t.events[0].start_ns, 2000);
  // Strict: JSON's grammar.
  for (const char* bad :
       {R"({"traceEvents": [], "x": 01})", R"({"traceEvents": [], "x": 1.})",
        R"({"traceEvents": [], "x": -})", R"({"traceEvents": [], "x": 1e})",
        R"({"traceEvents": [], "x": "\q"})", R"({"traceEvents": [], "x": "\u12g4"})",
        R"({"traceEvents": [],})", R"({"traceEvents": [], "x": [1,]})",
        R"({"traceEvents": [], "x": [,]})", R"({'traceEvents': []})",
        R"({"traceEvents": [] "x": 1})", R"({"traceEvents": [], "x": NaN})",
        R"({"traceEvents": [], "x": {"a" 1}})", R"({"traceEvents": [], "x": {1: 1}})"})
    EXPECT_NE(error_of_text(bad).find("not valid JSON"), std::string::npos) << bad;
}

TEST(TraceReader, MetadataIsKeptAsWrittenAndMadeStrictWhereTheReaderWasLenient) {
  // Top-level values ptprof does not know are kept verbatim, whitespace included, so the
  // writer puts them back as they were; what only the reader's leniency let through (raw
  // control characters, invalid UTF-8, a bare N/A) is made strict JSON so that it can.
  const std::string text =
      "{\"traceEvents\": [], \"distributedInfo\": {\"rank\":  1,\n"
      "  \"ranks\": [0, 1]}, \"odd\": [\"a\tb\xff\", N/A, \"\\ud800\"]}";
  const Trace t = detail::parse_trace(text, "input");
  EXPECT_EQ(t.metadata.at("distributedInfo"), "{\"rank\":  1,\n  \"ranks\": [0, 1]}");
  EXPECT_EQ(t.metadata.at("odd"), "[\"a\\u0009b\\ufffd\", \"N/A\", \"\\ud800\"]");
  const std::string json = t.to_json();  // the writer takes them
  EXPECT_NE(json.find("\"distributedInfo\": {\"rank\":  1,\n  \"ranks\": [0, 1]}"),
            std::string::npos);
  EXPECT_EQ(detail::parse_trace(json, "again").metadata, t.metadata);
  // Deeper than the writer's bound: an error where the value starts.
  const std::string deep =
      R"({"traceEvents": [], "deep": )" + std::string(70, '[') + std::string(70, ']') + "}";
  EXPECT_EQ(error_of_text(deep),
            message("input", deep.find("[["),
                    "a top-level value nests arrays and objects deeper than 63 (the most ptprof "
                    "writes)"));
}

TEST(TraceReader, FuzzCorpusStillPasses) {
  // The committed seeds of tests/fuzz (regressions included) through what the fuzz targets do:
  // read, or reject with ptprof::Error; what was read writes JSON that reads back the same.
  const std::string corpus = std::string(PTPROF_SOURCE_DIR) + "/tests/fuzz/corpus/";
  int files = 0;
  for (const char* sub : {"trace_reader", "trace_file"}) {
    for (const auto& entry : std::filesystem::directory_iterator(corpus + sub)) {
      ++files;
      const std::string path = entry.path().string();
      Trace t;
      try {
        t = detail::read_trace(path);
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
        continue;
      }
      Trace again;
      ASSERT_NO_THROW(again = detail::parse_trace(t.to_json(), "round trip")) << path;
      EXPECT_EQ(again.events.size(), t.events.size()) << path;
      // What ptprof wrote of a trace it read reads back to the same bytes (from the second
      // writing on: invalid UTF-8 is first written as an escaped U+FFFD, then as itself).
      const std::string second = again.to_json();
      EXPECT_EQ(detail::parse_trace(second, "again").to_json(), second) << path;
    }
  }
  EXPECT_GE(files, 20);
}

// `ptprof` (the command) exits 2 on a trace it cannot read, printing the reader's message.
TEST(TraceReader, CommandExitsTwoOnAReadError) {
  const std::string cli = PTPROF_CLI;  // the ptprof command of this build
  if (::access(cli.c_str(), X_OK) != 0) GTEST_SKIP() << "ptprof_cli not built: " << cli;
  test::TempDir dir;
  const std::string bad = dir.path() + "/bad.json";
  const std::string text =
      R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "ts": 1, "dur": -5}]})";
  write_file(bad, text);
  const std::string out = dir.path() + "/stderr.txt";
  const int status = std::system((cli + " table " + bad + " 2>" + out).c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 2);
  std::ifstream f(out);
  std::string line;
  std::getline(f, line);
  EXPECT_EQ(line, message(bad, text.find("-5"), R"(traceEvents[0]: "dur" is negative)"));
  const int missing =
      std::system((cli + " table " + dir.path() + "/none.json 2>/dev/null").c_str());
  ASSERT_TRUE(WIFEXITED(missing));
  EXPECT_EQ(WEXITSTATUS(missing), 2);
}

}  // namespace
}  // namespace ptprof