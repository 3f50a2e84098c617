// ptprof's reader and trace model on real GPU data: the traces scripts/gpu-check wrote on an
// H200 (tests/gpu/fixtures/h200/, README there), ptprof's and libtorch's own profiler's of the
// same five training steps.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "test_support.h"
#include "trace/trace_reader.h"

namespace ptprof {
namespace {

const std::string kDir = std::string(PTPROF_SOURCE_DIR) + "/tests/gpu/fixtures/h200/";

Trace read(const std::string& name) {
  return detail::parse_trace(detail::read_trace_file(kDir + name), name);
}

std::map<std::string, int> count_kinds(const Trace& t) {
  std::map<std::string, int> n;
  for (const Event& e : t.events) ++n[category(e.kind)];
  return n;
}

// Kernels per name of the CPU op that launched them, through External id.
std::map<std::string, int> kernels_per_op(const Trace& t) {
  std::map<uint64_t, std::string> ops;
  for (const Event& e : t.events)
    if (e.kind == EventKind::CpuOp && e.external_id) ops.emplace(e.external_id, e.name);
  std::map<std::string, int> n;
  for (const Event& e : t.events) {
    if (e.kind != EventKind::Kernel) continue;
    auto op = ops.find(e.external_id);
    ++n[op == ops.end() ? "<no op>" : op->second];
  }
  return n;
}

TEST(RealGpuTraces, EveryKernelHasItsLaunchItsOpAndItsStep) {
  const Trace t = read("ptprof.pt.trace.json.gz");
  const auto kinds = count_kinds(t);
  EXPECT_EQ(kinds.at("kernel"), 385);
  EXPECT_EQ(kinds.at("gpu_memcpy"), 10);
  EXPECT_EQ(kinds.at("gpu_memset"), 15);
  // Five steps, each on the GPU too, and the four user ranges of each step.
  EXPECT_EQ(kinds.at("gpu_user_annotation"), 25);
  std::map<uint64_t, const Event*> launches;
  for (const Event& e : t.events)
    if (e.kind == EventKind::CudaRuntime || e.kind == EventKind::CudaDriver)
      launches.emplace(e.correlation, &e);
  int steps = 0;
  for (const Event& e : t.events)
    steps += e.kind == EventKind::UserAnnotation && is_step_name(e.name);
  EXPECT_EQ(steps, 5);
  for (const Event& e : t.events) {
    if (e.kind != EventKind::Kernel && e.kind != EventKind::Memcpy && e.kind != EventKind::Memset)
      continue;
    auto l = launches.find(e.correlation);
    ASSERT_NE(l, launches.end()) << e.name;
    EXPECT_TRUE(l->second->flow_start && e.flow_end) << e.name;
    EXPECT_GE(e.start_ns, l->second->start_ns) << e.name;  // no GPU work before its launch
    EXPECT_NE(e.external_id, 0u) << e.name;
    EXPECT_EQ(e.device, 0);
  }
  EXPECT_EQ(kernels_per_op(t).count("<no op>"), 0u);
}

TEST(RealGpuTraces, KernelsPerOpAreLibtorchProfilersOwn) {
  const std::map<std::string, int> ours = kernels_per_op(read("ptprof.pt.trace.json.gz"));
  const std::map<std::string, int> theirs = kernels_per_op(read("kineto.pt.trace.json.gz"));
  EXPECT_EQ(ours, theirs);
  EXPECT_EQ(ours.at("aten::addmm"), 20);
  EXPECT_EQ(ours.at("aten::cudnn_convolution"), 5);
}

TEST(RealGpuTraces, TablesOfTheRealTrace) {
  const Trace t = read("ptprof.pt.trace.json.gz");
  const KeyAverages avg = t.key_averages();
  const KeyAverage* addmm = avg.find("aten::addmm");
  ASSERT_NE(addmm, nullptr);
  EXPECT_EQ(addmm->count, 10);
  int64_t addmm_gpu_ns = 0;
  std::map<uint64_t, bool> is_addmm;
  for (const Event& e : t.events)
    if (e.kind == EventKind::CpuOp) is_addmm[e.external_id] = e.name == "aten::addmm";
  for (const Event& e : t.events)
    if (is_gpu(e.kind) && e.kind != EventKind::GpuUserAnnotation && is_addmm[e.external_id])
      addmm_gpu_ns += e.duration_ns;
  EXPECT_GT(addmm_gpu_ns, 0);
  EXPECT_EQ(addmm->self_device_time_total_ns, addmm_gpu_ns);
  const KernelTable kt = t.kernel_table();
  int calls = 0;
  for (const KernelStat& r : kt.rows) calls += static_cast<int>(r.count);
  EXPECT_EQ(calls, 385);
}

// What tensorboard_trace_handler leaves out (the GPU spans of the steps) is all it leaves out.
TEST(RealGpuTraces, TensorBoardCopyDropsOnlyTheGpuStepSpans) {
  const Trace t = read("ptprof.pt.trace.json.gz");
  test::TempDir dir;
  Trace::SaveOptions tb;
  tb.tensorboard = true;
  t.save(dir.path() + "/full.json");
  t.save(dir.path() + "/tb.json", tb);
  const Trace full =
      detail::parse_trace(detail::read_trace_file(dir.path() + "/full.json"), "full");
  const Trace back = detail::parse_trace(detail::read_trace_file(dir.path() + "/tb.json"), "tb");
  EXPECT_EQ(full.events.size(), t.events.size());
  EXPECT_EQ(back.events.size(), t.events.size() - 5);
  auto kinds = count_kinds(t);
  kinds["gpu_user_annotation"] -= 5;
  EXPECT_EQ(count_kinds(back), kinds);
  for (const Event& e : back.events)
    EXPECT_FALSE(e.kind == EventKind::GpuUserAnnotation && is_step_name(e.name)) << e.name;
}

// Every option on, on CUDA: inputs, C++ stacks and FLOPs of the ops, and CUDA allocator events
// read back from the real trace.
TEST(RealGpuTraces, AllOptionsTraceReadsBack) {
  const Trace t = read("ptprof_all.pt.trace.json.gz");
  int ops = 0, with_inputs = 0, with_stack = 0, with_flops = 0;
  for (const Event& e : t.events) {
    if (e.kind != EventKind::CpuOp) continue;
    ++ops;
    with_inputs += e.inputs >= 0;
    with_stack += e.stack >= 0;
    with_flops += e.flops > 0;
  }
  EXPECT_EQ(ops, with_inputs);
  EXPECT_EQ(ops, with_stack);
  EXPECT_GT(with_flops, 0);
  int cuda_memory = 0;
  for (const MemoryEvent& m : t.memory_events)
    cuda_memory += m.device_type == 1 && m.device_index == 0;
  EXPECT_GT(cuda_memory, 0);
}

// ptprof's own traces of the H200 (exact schema) come back as the very bytes ptprof wrote:
// read, then written again, they are the file (but for traceName, the path it was written to).
TEST(RealGpuTraces, PtprofsTracesReadAndWrittenAgainAreTheFile) {
  for (const char* name :
       {"ptprof.pt.trace.json.gz", "ptprof_all.pt.trace.json.gz", "fallback.pt.trace.json.gz"}) {
    const std::string text = detail::read_trace_file(kDir + name);
    const std::size_t tail = text.rfind("\"traceName\": ");
    ASSERT_NE(tail, std::string::npos) << name;
    const std::string expected = text.substr(0, tail) + "\"traceName\": \"\"\n}\n";
    const std::string again = detail::read_trace(kDir + name).to_json();
    EXPECT_EQ(again.size(), expected.size()) << name;
    EXPECT_TRUE(again == expected)
        << name << ": first difference at byte "
        << std::mismatch(again.begin(), again.end(), expected.begin(), expected.end()).first -
               again.begin();
  }
}

// Every trace of ../shared/traces (PyTorch's profiler on GPU machines, see its README): each
// one reads, with the events of each kind, the launch flows and the earliest time an
// independent JSON parser (Python's) finds in it.
TEST(RealGpuTraces, EveryTraceOfPyTorchsProfilerInSharedReads) {
  struct Expected {
    std::map<std::string, int> kinds;
    int flow_starts, flow_ends;
    int64_t earliest_ns;  // exact: baseTimeNanoseconds + ts, or absolute µs * 1000
  };
  const std::map<std::string, Expected> expected = {
      {"amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz",
       {{{"cpu_op", 70},
         {"user_annotation", 3},
         {"cuda_runtime", 21},
         {"gpu_memcpy", 2},
         {"kernel", 14},
         {"gpu_user_annotation", 2}},
        16,
        21,
        1739836029603187439}},
      {"cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz",
       {{{"user_annotation", 11}, {"cpu_op", 4}}, 0, 0, 1721065959529876817}},
      {"critical_path/cuda_event_sync/event_sync_trace.json.gz",
       {{{"user_annotation", 1},
         {"cpu_op", 10},
         {"kernel", 4},
         {"cuda_runtime", 12},
         {"gpu_memcpy", 1},
         {"cuda_sync", 4}},
        7,
        14,
        1707417525509335000}},
      {"critical_path/cuda_event_sync_multi_stream/event_sync_trace.json.gz",
       {{{"cpu_op", 6}, {"cuda_runtime", 39}, {"cuda_sync", 5}, {"gpu_memset", 3}, {"kernel", 3}},
        8,
        42,
        1712867402348256000}},
      {"critical_path/simple_add/benchmark_result_493459_1694039959_trace.json.gz",
       {{{"user_annotation", 8},
         {"cpu_op", 359},
         {"cuda_runtime", 331},
         {"gpu_memcpy", 16},
         {"cuda_sync", 41},
         {"kernel", 79},
         {"gpu_memset", 3}},
        155,
        315,
        1694039968955744000}},
      {"nccl_parser_config/nccl_data.json.gz",
       {{{"cpu_op", 14346},
         {"user_annotation", 42},
         {"cuda_runtime", 8740},
         {"kernel", 2700},
         {"gpu_memset", 114},
         {"gpu_memcpy", 960},
         {"gpu_user_annotation", 30}},
        3862,
        8652,
        1716423322416788066}},
      {"negative_queue_length_values_check/rank0.json.gz",
       {{{"user_annotation", 360},
         {"cpu_op", 25185},
         {"kernel", 6080},
         {"cuda_runtime", 33924},
         {"gpu_memcpy", 1390},
         {"gpu_memset", 277}},
        6600,
        35071,
        1683564901548726000}},
      {"ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
       {{{"cpu_op", 23910},
         {"user_annotation", 70},
         {"kernel", 4350},
         {"cuda_runtime", 15329},
         {"gpu_memcpy", 1600},
         {"gpu_memset", 145},
         {"gpu_user_annotation", 15}},
        6401,
        15023,
        1712195495502094565}},
      {"rank_unavailable/rank_not_found.json.gz",
       {{{"cpu_op", 2424}, {"user_annotation", 43}}, 0, 0, 1661203462598738000}},
      {"trace_filter/sampled_rank-0.json.gz",
       {{{"cpu_op", 2329},
         {"user_annotation", 73},
         {"kernel", 1154},
         {"cuda_runtime", 1204},
         {"gpu_memcpy", 40},
         {"gpu_memset", 10}},
        0,
        0,
        1682725898079292000}},
      {"trace_filter/sampled_rank-1.json.gz",
       {{{"user_annotation", 65},
         {"cpu_op", 2302},
         {"kernel", 1104},
         {"cuda_runtime", 1154},
         {"gpu_memcpy", 40},
         {"gpu_memset", 10}},
        0,
        0,
        1682725898079484000}},
      {"triton_example/triton_example.json.gz",
       {{{"user_annotation", 1},
         {"cpu_op", 3},
         {"kernel", 1},
         {"cuda_driver", 1},
         {"cuda_runtime", 1}},
        2,
        1,
        1730156791096090100}},
  };
  const std::string dir = std::string(PTPROF_SOURCE_DIR) + "/../shared/traces/hta/";
  if (!std::filesystem::is_directory(dir)) GTEST_SKIP() << "no " << dir << " beside the clone";
  int read = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    const std::string path = entry.path().string();
    if (!entry.is_regular_file() ||
        (path.size() < 3 ||
         (path.compare(path.size() - 3, 3, ".gz") && path.compare(path.size() - 5, 5, ".json"))))
      continue;
    const std::string name = path.substr(dir.size());
    ++read;
    Trace t;
    ASSERT_NO_THROW(t = detail::read_trace(path)) << name;
    auto it = expected.find(name);
    if (it == expected.end()) {
      ADD_FAILURE() << "a trace this test does not know yet: " << name;
      continue;
    }
    EXPECT_EQ(count_kinds(t), it->second.kinds) << name;
    int starts = 0, ends = 0;
    int64_t earliest = std::numeric_limits<int64_t>::max();
    for (const Event& e : t.events) {
      starts += e.flow_start;
      ends += e.flow_end;
      earliest = std::min(earliest, e.start_ns);
    }
    EXPECT_EQ(starts, it->second.flow_starts) << name;
    EXPECT_EQ(ends, it->second.flow_ends) << name;
    EXPECT_EQ(earliest, it->second.earliest_ns) << name;
    // Written by ptprof and read again: the same events.
    const Trace again = detail::parse_trace(t.to_json(), name + " written back");
    EXPECT_EQ(count_kinds(again), it->second.kinds) << name;
  }
  EXPECT_EQ(read, static_cast<int>(expected.size()));
}

}  // namespace
// The real NCCL job's trace: record_param_comms and the NCCL kernels carry their collective's
// arguments under PyTorch's names, and they read back into CollectiveInfo and are written again.
TEST(RealGpuTraces, NcclCollectivesKeepTheirArguments) {
  const std::string path =
      std::string(PTPROF_SOURCE_DIR) + "/../shared/traces/hta/nccl_parser_config/nccl_data.json.gz";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "no " << path << " beside the clone";
  const Trace t = detail::read_trace(path);
  int ops = 0, kernels = 0;
  const CollectiveInfo* first = nullptr;
  for (const Event& e : t.events) {
    if (e.collective < 0) continue;
    const CollectiveInfo& c = t.collectives.at(e.collective);
    EXPECT_FALSE(c.name.empty());
    // The job's groups: the two ranks, and one-rank groups ("[]", size 1).
    EXPECT_TRUE((c.pg_ranks == "[0, 1]" && c.group_size == 2) ||
                (c.pg_ranks == "[]" && c.group_size == 1))
        << c.pg_ranks << " " << c.group_size;
    if (e.kind == EventKind::CpuOp) {
      EXPECT_EQ(e.name, "record_param_comms");
      if (!first) first = &c;
      ++ops;
    } else {
      EXPECT_EQ(e.kind, EventKind::Kernel);
      EXPECT_NE(e.name.find("nccl"), std::string_view::npos) << e.name;
      ++kernels;
    }
  }
  EXPECT_GT(ops, 0);
  EXPECT_GT(kernels, 0);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->name, "allreduce");
  EXPECT_EQ(first->pg_ranks, "[0, 1]");
  EXPECT_EQ(first->group_size, 2);
  EXPECT_EQ(first->dtype, "Float");
  EXPECT_EQ(first->in_nelems, 2049000);
  EXPECT_EQ(first->out_nelems, 2049000);
  EXPECT_EQ(first->in_split, "[]");
  EXPECT_EQ(first->pg_name, "0");
  EXPECT_EQ(first->pg_desc, "default_pg");
  EXPECT_EQ(first->global_rank_stride, 1);
  // Written again, the arguments are there as PyTorch wrote them.
  const std::string json = t.to_json();
  EXPECT_NE(json.find("\"Collective name\": \"allreduce\", \"In msg nelems\": 2049000"),
            std::string::npos);
}

}  // namespace ptprof
