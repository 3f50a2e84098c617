// ptprof's reader and trace model on real GPU data: the traces scripts/gpu-check wrote on an
// H200 (tests/gpu/fixtures/h200/, README there), ptprof's and libtorch's own profiler's of the
// same five training steps.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "cli/trace_reader.h"
#include "test_util.h"

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

}  // namespace
}  // namespace ptprof
