// ptprof::Report: each rule at its threshold (synthetic traces at threshold ± epsilon), the
// step overlay summing exactly, the idle causes, HTA's idle classes, and bad input (no steps,
// no GPU data, one step, an empty trace): a report that says what it could not determine.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "trace/trace_reader.h"
#include "ptprof/report.h"
#include "ptprof/trace.h"
#include "test_support.h"
#include "trace_builder.h"

namespace ptprof {
namespace {

int64_t at(double us) {
  return test::TraceBuilder::at(us);
}
int64_t us(double v) {
  return test::TraceBuilder::ns(v);
}

using Builder = test::TraceBuilder;

int64_t cat(const Report::Step& s, StepCategory c) {
  return s.category_ns[static_cast<int>(c)];
}
const Report::Finding* finding(const Report& r, const std::string& id) {
  for (const auto& f : r.findings)
    if (f.id == id) return &f;
  return nullptr;
}
bool has_quality(const Report& r, const std::string& id) {
  for (const auto& q : r.quality)
    if (q.id == id) return true;
  return false;
}
bool undetermined(const Report& r, const std::string& what) {
  for (const auto& [w, why] : r.undetermined)
    if (w == what) return true;
  return false;
}
int64_t cause(const Report& r, IdleCause c) {
  return r.idle_causes[static_cast<int>(c)].total_ns;
}

// Every report can be printed and its JSON parses, whatever the input.
void expect_outputs(const Report& r) {
  const std::string text = r.summary();
  EXPECT_NE(text.find("Trace quality"), std::string::npos);
  const auto j = nlohmann::json::parse(r.to_json());
  EXPECT_EQ(j["schema"], "ptprof.report/1");
  for (const char* key : {"quality", "undetermined", "steps", "gpu", "idle_causes", "top_operators",
                          "top_kernels", "findings", "thresholds"})
    EXPECT_TRUE(j.contains(key)) << key;
}

// ---------------------------------------------------------------- the overlay

TEST(Report, OverlayFollowsTbPriorityAndSumsToTheStep) {
  Builder b;
  b.step(1, 0, 100);
  b.range("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 0, 20);
  b.op_with_kernel("aten::mm", 20, 60, "gemm", 40, 90);  // launch at [21, 22]
  const uint64_t copy_op = b.op("aten::copy_", 60, 80);
  const uint64_t c = b.call("cudaMemcpyAsync", copy_op, 62, 66);
  b.copy(1, 2, 3, 85, 95, c, copy_op);
  const uint64_t zero = b.op("aten::zero_", 80, 90);
  const uint64_t m = b.call("cudaMemsetAsync", zero, 81, 82);
  b.gpu(EventKind::Memset, "Memset (Device)", 95, 97, m, zero);
  const Report r(b.done());
  ASSERT_TRUE(r.breakdown_determined);
  ASSERT_EQ(r.steps.size(), 1u);
  const auto& s = r.steps[0];
  EXPECT_EQ(s.total_ns(), us(100));
  // Kernel [40,90]; the copy under it is Kernel time, its rest [90,95] Memcpy; runtime calls
  // under the kernel are Kernel time, [21,22] Runtime; DataLoader [0,20]; the ops' rest CPU
  // Exec [20,21] [22,40]; [97,100] Other.
  EXPECT_EQ(cat(s, StepCategory::Kernel), us(50));
  EXPECT_EQ(cat(s, StepCategory::Memcpy), us(5));
  EXPECT_EQ(cat(s, StepCategory::Memset), us(2));
  EXPECT_EQ(cat(s, StepCategory::Communication), 0);
  EXPECT_EQ(cat(s, StepCategory::Runtime), us(1));
  EXPECT_EQ(cat(s, StepCategory::DataLoader), us(20));
  EXPECT_EQ(cat(s, StepCategory::CpuExec), us(19));
  EXPECT_EQ(cat(s, StepCategory::Other), us(3));
  expect_outputs(r);
}

TEST(Report, OverlaySumsExactlyOnRandomTraces) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 30; ++round) {
    Builder b;
    auto u = [&](int64_t lo, int64_t hi) {
      return lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo + 1));
    };
    double cursor = 0;
    const int steps = 1 + static_cast<int>(u(0, 4));
    for (int s = 0; s < steps; ++s) {
      const double len = static_cast<double>(u(50000, 400000)) / 1000.0;  // odd ns values
      b.step(s + 1, cursor, cursor + len);
      for (int k = 0; k < 6; ++k) {
        const double os =
            cursor + static_cast<double>(u(0, static_cast<int64_t>(len * 900))) / 1000;
        const double oe = std::min(cursor + len, os + static_cast<double>(u(1, 40000)) / 1000);
        const double ks = os + static_cast<double>(u(2000, 90000)) / 1000;
        b.op_with_kernel(k % 2 ? "aten::add" : "aten::mm", os, std::max(oe, os + 3), "k", ks,
                         ks + static_cast<double>(u(1, 50000)) / 1000, 7 + k % 2);
      }
      if (u(0, 1)) b.range("enumerate(DataLoader)#It.__next__", cursor, cursor + len / 7);
      cursor += len + static_cast<double>(u(0, 20000)) / 1000;
    }
    const Report r(b.done());
    ASSERT_TRUE(r.breakdown_determined);
    for (const auto& s : r.steps) {
      int64_t sum = 0;
      for (int64_t v : s.category_ns) {
        EXPECT_GE(v, 0);
        sum += v;
      }
      EXPECT_EQ(sum, s.total_ns()) << "round " << round << " step " << s.name;
    }
    for (std::size_t i = 1; i < r.steps.size(); ++i)
      EXPECT_GE(r.steps[i].start_ns, r.steps[i - 1].end_ns);
  }
}

// ---------------------------------------------------------------- steps (TB's StepParser)

TEST(Report, StepsExtendToTheirGpuWorkAndTheTailIsTrimmedAsTbDoes) {
  Builder b;
  // GPU work launched before the first step, ending before its first kernel: step 1 starts
  // after it (TB pushes the first step's start past such work).
  b.op_with_kernel("aten::fill_", -20, -10, "warmup", -5, 5);
  b.step(1, 0, 100);
  b.op_with_kernel("aten::mm", 10, 20, "k1", 50, 150);  // ends after the host step
  b.op_with_kernel("aten::mm", 30, 40, "k1b", 150, 152);
  b.step(2, 100, 200);
  b.op_with_kernel("aten::mm", 110, 120, "k2", 160, 170);
  b.op_with_kernel("aten::mm", 130, 140, "k2b", 171, 172);
  b.step(3, 200, 300);
  b.op_with_kernel("aten::mm", 210, 220, "k3", 230, 240);  // 1 < 0.8 * 2: trimmed
  const Report r(b.done());
  ASSERT_EQ(r.steps.size(), 2u);
  EXPECT_EQ(r.steps[0].start_ns, at(5));
  EXPECT_EQ(r.steps[0].end_ns, at(152));
  EXPECT_EQ(r.steps[1].start_ns, at(152));  // max(previous end, host start)
  EXPECT_EQ(r.steps[1].end_ns, at(200));
  EXPECT_EQ(r.steps[0].gpu_activities, 2);
  ASSERT_EQ(r.trimmed_steps, std::vector<std::string>{"3"});
  EXPECT_TRUE(has_quality(r, "truncated_last_step"));

  // With as many GPU activities as the step before, the last step stays.
  Builder keep;
  keep.step(1, 0, 100);
  keep.op_with_kernel("aten::mm", 10, 20, "k1", 30, 40);
  keep.step(2, 100, 200);
  keep.op_with_kernel("aten::mm", 110, 120, "k2", 130, 140);
  const Report kept(keep.done());
  EXPECT_EQ(kept.steps.size(), 2u);
  EXPECT_TRUE(kept.trimmed_steps.empty());
}

TEST(Report, OutlierStepsAtTheRatio) {
  auto outliers = [](double last_len) {
    Builder b;
    double s = 0;
    for (int i = 0; i < 4; ++i) {
      const double len = i == 3 ? last_len : 100;
      b.step(i + 1, s, s + len);
      b.op("aten::add", s + 1, s + 2);
      s += len;
    }
    const Report r(b.done());
    EXPECT_TRUE(r.spread_determined);
    return r.steps.back().outlier;
  };
  EXPECT_TRUE(outliers(125.001));  // > 1.25 x the median (100)
  EXPECT_FALSE(outliers(125));
  EXPECT_TRUE(outliers(79.999));  // < median / 1.25
  EXPECT_FALSE(outliers(80.001));
}

// ---------------------------------------------------------------- bad input

TEST(Report, EmptyTraceSaysWhatItCannotDetermine) {
  Trace t;
  const Report r(t);
  EXPECT_FALSE(r.breakdown_determined);
  EXPECT_FALSE(r.has_gpu_data);
  EXPECT_TRUE(undetermined(r, "breakdown"));
  EXPECT_TRUE(undetermined(r, "gpu"));
  EXPECT_TRUE(r.findings.empty());
  EXPECT_NE(r.summary().find("cannot be determined"), std::string::npos);
  expect_outputs(r);
}

TEST(Report, NoStepsIsOneStepOverTheCpuOpsAsTbDoes) {
  Builder b;
  b.op("aten::add", 10, 30);
  b.op("aten::mul", 50, 70);
  const Report r(b.done());
  ASSERT_TRUE(r.breakdown_determined);
  EXPECT_FALSE(r.has_steps);
  ASSERT_EQ(r.steps.size(), 1u);
  EXPECT_EQ(r.steps[0].name, "0");
  EXPECT_EQ(r.steps[0].total_ns(), us(60));
  EXPECT_EQ(cat(r.steps[0], StepCategory::CpuExec), us(40));
  EXPECT_TRUE(has_quality(r, "no_steps"));
  EXPECT_TRUE(has_quality(r, "no_gpu_data"));
  EXPECT_TRUE(undetermined(r, "step_spread"));
  EXPECT_TRUE(undetermined(r, "idle_causes"));
  EXPECT_FALSE(r.spread_determined);
  expect_outputs(r);
}

TEST(Report, OneStepAndGpuOnlyTracesAreReportedNotGuessed) {
  Builder one;
  one.step(1, 0, 100);
  one.op_with_kernel("aten::mm", 10, 20, "k", 30, 40);
  const Report r(one.done());
  EXPECT_EQ(r.steps.size(), 1u);
  EXPECT_TRUE(has_quality(r, "one_step"));
  EXPECT_FALSE(r.spread_determined);
  // HTA keeps everything with a single ProfilerStep.
  EXPECT_NE(r.hta_window.find("all GPU events"), std::string::npos);
  expect_outputs(r);

  // GPU activity and nothing on the host: no step can be formed.
  Builder gpu_only;
  gpu_only.kernel("k", 0, 10, 0, 0);
  const Report g(gpu_only.done());
  EXPECT_FALSE(g.breakdown_determined);
  EXPECT_TRUE(g.has_gpu_data);
  EXPECT_TRUE(has_quality(g, "activities_without_launch"));
  EXPECT_TRUE(has_quality(g, "activities_without_op"));
  expect_outputs(g);
}

TEST(Report, QualityNamesDropsAndMissingKernelDetails) {
  Builder b;
  b.step(1, 0, 100);
  b.op_with_kernel("aten::mm", 10, 20, "k", 30, 40).kernel = KernelInfo{};  // no args kept
  b.t.dropped_events = 7;
  b.t.dropped_by_kind = {{"cpu_op", 5}, {"memory", 2}};
  b.t.metadata["ptprof_gpu_dropped_records"] = "12";
  const Report r(b.done());
  EXPECT_TRUE(has_quality(r, "dropped_events"));
  EXPECT_TRUE(has_quality(r, "gpu_dropped_records"));
  EXPECT_TRUE(has_quality(r, "no_kernel_args"));
  ASSERT_EQ(r.devices.size(), 1u);
  EXPECT_FALSE(r.devices[0].sm_efficiency.has_value());
  EXPECT_FALSE(r.devices[0].achieved_occupancy.has_value());
  EXPECT_TRUE(undetermined(r, "gpu.achieved_occupancy"));
  EXPECT_TRUE(undetermined(r, "memory_peak"));
  EXPECT_TRUE(undetermined(r, "findings.tensor_cores"));  // no device properties
  expect_outputs(r);
}

TEST(Report, NeverCrashesOnOddEvents) {
  Builder b;
  b.step(1, 0, 100);
  b.add(EventKind::CpuOp, "ProfilerStep#x", 100, 100);           // no step number, no time
  b.add(EventKind::CudaRuntime, "cudaStreamSynchronize", 5, 5);  // no correlation
  b.add(EventKind::CudaSync, "Context Sync", 1, 2).stream = -1;
  b.add(EventKind::GpuUserAnnotation, "ProfilerStep#1", 0, 100);
  b.add(EventKind::Overhead, "Instrumentation", 3, 4);
  b.kernel("orphan", 50, 50, 999, 0, -1);  // zero length, unknown stream
  Event& e = b.add(EventKind::UserAnnotation, "unfinished", 90, 100);
  e.finished = false;
  const Report r(b.done());
  EXPECT_TRUE(has_quality(r, "step_names"));
  EXPECT_TRUE(has_quality(r, "unfinished_events"));
  for (const auto& s : r.steps) {
    int64_t sum = 0;
    for (int64_t v : s.category_ns) sum += v;
    EXPECT_EQ(sum, s.total_ns());
  }
  expect_outputs(r);
}

// ---------------------------------------------------------------- TB's rules at threshold

// A CPU step of 1000 us whose DataLoader range takes `loader_us`.
Report dataloader_trace(double loader_us) {
  Builder b;
  b.step(1, 0, 1000);
  b.range("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 0, loader_us);
  b.op("aten::add", 900, 910);
  return Report(b.done());
}

TEST(Report, DataLoaderRuleAtTbsFivePercent) {
  const Report above = dataloader_trace(50.001);
  const Report::Finding* f = finding(above, "data_loading");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->source, "tensorboard");
  EXPECT_EQ(*f->saving_ns_per_step, us(50.001));
  ASSERT_FALSE(f->evidence.empty());
  EXPECT_EQ(f->evidence[0].what, "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__");
  EXPECT_DOUBLE_EQ(f->evidence[0].per_step, 1.0);
  EXPECT_EQ(finding(dataloader_trace(50.0), "data_loading"), nullptr);  // TB: strictly above
  EXPECT_EQ(finding(dataloader_trace(49.999), "data_loading"), nullptr);
}

Report utilization_trace(double kernel_us) {
  Builder b;
  b.step(1, 0, 1000);
  b.op_with_kernel("aten::mm", 0, 5, "gemm", 500 - kernel_us, 500);
  return Report(b.done());
}

TEST(Report, GpuUtilizationRuleAtTbsHalf) {
  const Report low = utilization_trace(499.999);
  ASSERT_EQ(low.devices.size(), 1u);
  EXPECT_NEAR(low.devices[0].utilization, 0.499999, 1e-12);
  const Report::Finding* f = finding(low, "low_gpu_utilization");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(*f->saving_ns_per_step, us(1000 - 499.999));
  EXPECT_EQ(finding(utilization_trace(500), "low_gpu_utilization"), nullptr);
  EXPECT_EQ(finding(utilization_trace(500.001), "low_gpu_utilization"), nullptr);
}

Report memory_trace(int64_t peak) {
  Builder b;
  b.h100();
  b.t.devices[0].total_global_mem = 1000000;
  b.step(1, 0, 100);
  b.op_with_kernel("aten::mm", 10, 20, "gemm", 30, 90);
  MemoryEvent m;
  m.time_ns = at(15);
  m.pid = b.pid;
  m.tid = b.tid;
  m.bytes = peak;
  m.total_allocated = peak;
  m.device_type = 1;
  m.device_index = 0;
  b.t.memory_events.push_back(m);
  return Report(b.done());
}

TEST(Report, MemoryPeakRuleAtTbsNinetyPercent) {
  const Report high = memory_trace(900001);
  ASSERT_NE(finding(high, "memory_peak"), nullptr);
  EXPECT_FALSE(finding(high, "memory_peak")->saving_ns_per_step.has_value());  // not time
  EXPECT_EQ(*high.devices[0].peak_allocated_bytes, 900001);
  EXPECT_EQ(finding(memory_trace(900000), "memory_peak"), nullptr);
}

Report tensor_core_trace(const char* kernel_name, int32_t major) {
  Builder b;
  b.h100();
  b.t.devices[0].compute_major = major;
  b.step(1, 0, 100);
  b.op_with_kernel("aten::mm", 10, 20, kernel_name, 30, 90);
  b.op_with_kernel("aten::add", 20, 25, "elementwise", 90, 95);
  return Report(b.done());
}

TEST(Report, TensorCoreRuleAsTbWithSm90NamesApart) {
  const Report unused = tensor_core_trace("gemm_fp32_kernel", 7);
  ASSERT_TRUE(unused.tensor_core_eligible_share.has_value());
  EXPECT_DOUBLE_EQ(*unused.tensor_core_eligible_share, 60.0 / 65.0);
  EXPECT_DOUBLE_EQ(*unused.tensor_core_share, 0.0);
  ASSERT_NE(finding(unused, "tensor_cores_unused"), nullptr);
  EXPECT_EQ(finding(tensor_core_trace("gemm_fp32_kernel", 6), "tensor_cores_unused"), nullptr);
  EXPECT_EQ(finding(tensor_core_trace("ampere_s16816gemm", 8), "tensor_cores_unused"), nullptr);
  // A Hopper Tensor Core kernel TB's list does not know: TB's rule fires (it is TB's), the
  // evidence says why it may be wrong, and the sm90 share counts it.
  const Report hopper = tensor_core_trace("nvjet_hsh_128x256_64x4_2x1_v_bz_coopA_TNT", 9);
  const Report::Finding* f = finding(hopper, "tensor_cores_unused");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->evidence.back().note.find("predates"), std::string::npos);
  EXPECT_DOUBLE_EQ(*hopper.devices[0].tensor_core_share_sm90, 60.0 / 65.0);
}

Report communication_trace(double comm_us) {
  Builder b;
  b.step(1, 0, 1000);
  b.op("nccl:all_reduce", 100, 100 + comm_us);
  return Report(b.done());
}

TEST(Report, CommunicationRuleAtTbsTenPercent) {
  ASSERT_NE(finding(communication_trace(100.001), "communication"), nullptr);
  EXPECT_EQ(cat(communication_trace(100.001).steps[0], StepCategory::Communication), us(100.001));
  EXPECT_EQ(finding(communication_trace(100), "communication"), nullptr);
}

// ---------------------------------------------------------------- GPU metrics (TB)

TEST(Report, SmEfficiencyAndOccupancyFollowTb) {
  Builder b;
  b.step(1, 0, 200);
  Event& k1 = b.op_with_kernel("aten::mm", 0, 5, "a", 0.5, 100);
  k1.kernel.blocks_per_sm = 0.6f;
  k1.kernel.occupancy_pct = 40;
  Event& k2 = b.op_with_kernel("aten::mm", 5, 10, "b", 50, 150, 8);
  k2.kernel.blocks_per_sm = 0.7f;
  k2.kernel.occupancy_pct = 60;
  const Report r(b.done());
  ASSERT_EQ(r.devices.size(), 1u);
  const auto& d = r.devices[0];
  // Concurrent blocks per SM summed and capped at 1, integrated over the window / window.
  const double expected = (0.6f * 49.5 + 1.0 * 50 + 0.7f * 50) / 200.0;
  ASSERT_TRUE(d.sm_efficiency.has_value());
  EXPECT_NEAR(*d.sm_efficiency, expected, 1e-8);  // float blocks per SM summed and subtracted
  // Occupancy weighted by kernel time in the window, over kernel time.
  EXPECT_NEAR(*d.achieved_occupancy, (40 * 99.5 + 60 * 100) / 199.5, 1e-9);
  EXPECT_NEAR(d.utilization, 149.5 / 200, 1e-12);
}

// ---------------------------------------------------------------- HTA's numbers

Trace hta_trace() {
  Builder b;
  b.step(1, 0, 100);
  b.step(2, 100, 200);
  b.step(3, 200, 300);
  const uint64_t o = b.op("aten::mm", 5, 60);
  b.kernel("k1", 20, 30, b.call("cudaLaunchKernel", o, 10, 12), o);
  b.kernel("k2", 35, 40, b.call("cudaLaunchKernel", o, 14, 16), o);    // kernel wait 5
  b.kernel("k3", 55, 60, b.call("cudaLaunchKernel", o, 50, 52), o);    // host wait 15
  b.kernel("k4", 100, 110, b.call("cudaLaunchKernel", o, 53, 54), o);  // other 40
  b.gpu(EventKind::Memset, "Memset (Device)", 32, 34, b.call("cudaMemsetAsync", o, 31, 31.5), o, 8);
  const uint64_t late = b.op("aten::mm", 205, 215);
  b.kernel("k5", 215, 220, b.call("cudaLaunchKernel", late, 210, 211), late);  // last step
  return b.done();
}

TEST(Report, HtaIdleClassesAndTemporalBreakdownInHtasWindow) {
  const Report r(hta_trace());
  ASSERT_EQ(r.stream_idle.size(), 2u);
  const auto& s7 = r.stream_idle[0];
  EXPECT_EQ(s7.stream, 7);
  EXPECT_EQ(s7.activities, 4);  // k5 was launched in the last step: HTA leaves it out
  EXPECT_EQ(s7.host_wait_ns, us(15));
  EXPECT_EQ(s7.kernel_wait_ns, us(5));
  EXPECT_EQ(s7.other_ns, us(40));
  EXPECT_EQ(r.stream_idle[1].activities, 1);
  ASSERT_TRUE(r.temporal.determined);
  EXPECT_EQ(r.temporal.span_ns, us(90));
  EXPECT_EQ(r.temporal.compute_ns, us(30));
  EXPECT_EQ(r.temporal.non_compute_ns, us(2));  // the memset
  EXPECT_EQ(r.temporal.idle_ns, us(58));

  ReportOptions all;
  all.hta_include_last_step = true;
  const Report with_last(hta_trace(), all);
  EXPECT_EQ(with_last.stream_idle[0].activities, 5);
  EXPECT_EQ(with_last.stream_idle[0].host_wait_ns, us(15 + 105));
  ReportOptions strict;
  strict.thresholds.kernel_wait_ns = us(5);  // a 5 us gap is no longer "< 5 us"
  const Report moved(hta_trace(), strict);
  EXPECT_EQ(moved.stream_idle[0].kernel_wait_ns, 0);
  EXPECT_EQ(moved.stream_idle[0].other_ns, us(45));
}

// ---------------------------------------------------------------- idle causes (ptprof)

TEST(Report, IdleGapsAreAttributedToWhatTheLaunchingThreadDid) {
  Builder b;
  b.step(1, 0, 1000);
  b.op_with_kernel("aten::mm", 0, 50, "k1", 20, 100);  // gap [0,20]: op overhead
  // item(): a DtoH copy and a sync; the GPU idles before the copy, and after it until the next
  // kernel, which the host can only launch once item() returned.
  const uint64_t item = b.op("aten::item", 100, 200);
  const uint64_t cp = b.call("cudaMemcpyAsync", item, 105, 110);
  b.copy(2, 3, 2, 110, 120, cp, item);
  b.call("cudaStreamSynchronize", item, 110, 125);
  b.op_with_kernel("aten::add", 200, 300, "k2", 300, 310);
  b.range("enumerate(DataLoader)#It.__next__", 310, 500);
  const uint64_t empty = b.op("aten::empty", 500, 600);
  b.call("cudaMalloc", empty, 510, 590);
  b.op_with_kernel("aten::relu", 600, 700, "k3", 700, 710);
  b.op("nccl:all_reduce", 720, 760);
  b.range("optimizer", 800, 900);
  const Report r(b.done());
  ASSERT_TRUE(r.idle_causes_determined);
  EXPECT_EQ(r.gpu_idle_in_steps_ns, us(890));
  ASSERT_EQ(r.devices.size(), 1u);
  EXPECT_EQ(r.devices[0].idle_in_steps_ns, us(890));
  EXPECT_EQ(cause(r, IdleCause::DeviceToHost), us(10 + 180));
  EXPECT_EQ(cause(r, IdleCause::DataLoader), us(190));
  EXPECT_EQ(cause(r, IdleCause::Allocator), us(80));
  EXPECT_EQ(cause(r, IdleCause::OpOverhead), us(20 + 20 + 100));
  EXPECT_EQ(cause(r, IdleCause::Collective), us(40));
  EXPECT_EQ(cause(r, IdleCause::OutsideOps), us(250));
  EXPECT_EQ(cause(r, IdleCause::Unknown), 0);
  int64_t sum = 0;
  for (const auto& c : r.idle_causes) sum += c.total_ns;
  EXPECT_EQ(sum, r.gpu_idle_in_steps_ns);
  const auto& d2h = r.idle_causes[static_cast<int>(IdleCause::DeviceToHost)];
  ASSERT_FALSE(d2h.top.empty());
  EXPECT_EQ(d2h.top[0].first, "aten::item");
  const auto& outside = r.idle_causes[static_cast<int>(IdleCause::OutsideOps)];
  EXPECT_EQ(outside.top[0].first, "(no range)");
  EXPECT_EQ(outside.top[1], (std::pair<std::string, int64_t>{"optimizer", us(100)}));
  const Report::Finding* sync = finding(r, "synchronization");
  ASSERT_NE(sync, nullptr);
  EXPECT_EQ(*sync->saving_ns_per_step, us(190));
  EXPECT_EQ(sync->evidence[0].what, "aten::item");
}

Report sync_trace(double after_us, double sync_share) {
  Builder b;
  b.step(1, 0, 1000);
  b.op_with_kernel("aten::mul", 0, 10, "k1", 10, 100);
  b.add(EventKind::CudaRuntime, "cudaDeviceSynchronize", 20, 101).correlation = 77;
  b.op_with_kernel("aten::add", 101, 100 + after_us, "k2", 100 + after_us, 1000);
  ReportOptions o;
  o.thresholds.sync_share = sync_share;
  return Report(b.done(), o);
}

TEST(Report, SynchronizationRuleAtItsShare) {
  const Report r = sync_trace(50, 0.05);
  EXPECT_EQ(cause(r, IdleCause::Sync), us(50));  // the refill after the sync returned
  ASSERT_NE(finding(r, "synchronization"), nullptr);
  EXPECT_EQ(finding(r, "synchronization")->evidence[0].what, "cudaDeviceSynchronize");
  EXPECT_EQ(finding(sync_trace(49.999, 0.05), "synchronization"), nullptr);
}

TEST(Report, ACallWithACudaSyncRecordIsASync) {
  // cuda_sync records (Stream/Event/Context Sync) mark the call they correlate with as a wait,
  // whatever its name.
  Builder b;
  b.step(1, 0, 1000);
  b.op_with_kernel("aten::mul", 0, 10, "k1", 10, 100);
  Event& wait = b.add(EventKind::CudaRuntime, "cudaSomeNewWait", 20, 101);
  wait.correlation = 77;
  Event& rec = b.add(EventKind::CudaSync, "Stream Sync", 20, 101);
  rec.correlation = 77;
  rec.device = 0;
  rec.stream = 7;
  b.op_with_kernel("aten::add", 101, 150, "k2", 150, 1000);
  const Report r(b.done());
  EXPECT_EQ(cause(r, IdleCause::Sync), us(50));
  EXPECT_EQ(r.idle_causes[static_cast<int>(IdleCause::Sync)].top[0].first, "cudaSomeNewWait");
}

Report launch_trace(int32_t min_kernels, int64_t queue_full = 1020) {
  Builder b;
  b.step(1, 0, 1000);
  for (int i = 0; i < 6; ++i) {
    const double s = i * 100;
    b.op_with_kernel("aten::add", s, s + 90, "tiny", s + 85, s + 90);  // launched at s+1
  }
  ReportOptions o;
  o.thresholds.launch_bound_min_kernels = min_kernels;
  o.thresholds.launch_queue_full = queue_full;
  return Report(b.done(), o);
}

TEST(Report, LaunchBoundStretchesOfTinyKernels) {
  const Report r = launch_trace(5);
  const Report::Finding* f = finding(r, "launch_bound");
  ASSERT_NE(f, nullptr);
  // Five kernels after the first were each launched after the previous ended: their gaps.
  EXPECT_EQ(*f->saving_ns_per_step, us(5 * 95));
  EXPECT_EQ(finding(launch_trace(6), "launch_bound"), nullptr);
  EXPECT_EQ(finding(r, "gpu_bound_launch_queue"), nullptr);
  // The CPU-bound finding counts the rest of the host's op time, not these gaps again.
  const Report::Finding* cpu = finding(r, "cpu_bound");
  ASSERT_NE(cpu, nullptr);
  EXPECT_EQ(*cpu->saving_ns_per_step, us(1000 - 6 * 5 - 5 * 95));
}

TEST(Report, AFullLaunchQueueIsGpuBoundNotLaunchOverhead) {
  Builder b;
  b.step(1, 0, 1000);
  const uint64_t o = b.op("aten::add", 0, 10);
  for (int i = 0; i < 4; ++i)
    b.kernel("k", 100 + i * 200, 300 + i * 200, b.call("cudaLaunchKernel", o, 1 + i, 1.5 + i), o);
  ReportOptions opts;
  opts.thresholds.launch_queue_full = 3;
  const Report r(b.done(), opts);
  EXPECT_EQ(r.devices[0].max_queue_length, 4);
  EXPECT_EQ(r.devices[0].full_queue_ns, at(300) - at(3));  // 3 queued from t=3 to k2's start
  ASSERT_NE(finding(r, "gpu_bound_launch_queue"), nullptr);
  EXPECT_EQ(finding(r, "launch_bound"), nullptr);
  opts.thresholds.launch_queue_full = 5;
  EXPECT_EQ(finding(Report(b.t, opts), "gpu_bound_launch_queue"), nullptr);
}

Report copy_trace(double copy_share) {
  Builder b;
  b.step(1, 0, 1000);
  const uint64_t to = b.op("aten::to", 0, 100);
  b.copy(1, 1, 3, 100, 130, b.call("cudaMemcpyAsync", to, 10, 100), to);  // pageable HtoD
  b.op_with_kernel("aten::mm", 100, 110, "gemm", 130, 1000);
  ReportOptions o;
  o.thresholds.copy_share = copy_share;
  return Report(b.done(), o);
}

TEST(Report, HostDeviceCopiesRuleAtItsShare) {
  const Report r = copy_trace(0.03);
  const Report::Finding* f = finding(r, "host_device_copies");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(*f->saving_ns_per_step, us(30));
  bool pageable = false;
  for (const auto& e : f->evidence) pageable |= e.what.find("pageable") != std::string::npos;
  EXPECT_TRUE(pageable);
  EXPECT_NE(f->recommendation.find("Pin"), std::string::npos);
  EXPECT_EQ(finding(copy_trace(0.030001), "host_device_copies"), nullptr);
}

Report occupancy_trace(int32_t occupancy) {
  Builder b;
  b.step(1, 0, 1000);
  b.op_with_kernel("aten::mm", 0, 10, "gemm", 10, 1000).kernel.occupancy_pct = occupancy;
  return Report(b.done());
}

TEST(Report, LowOccupancyRuleAtItsThreshold) {
  const Report low = occupancy_trace(24);
  const Report::Finding* f = finding(low, "low_occupancy");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->evidence[0].what, "gemm");
  EXPECT_NEAR(static_cast<double>(*f->saving_ns_per_step), us(990) * 0.76, 1.0);
  EXPECT_EQ(finding(occupancy_trace(25), "low_occupancy"), nullptr);
}

Report cpu_bound_trace(double host_us) {
  Builder b;
  b.step(1, 0, 1000);
  // Launched before the step, so the step keeps its host span [0, 1000].
  b.op_with_kernel("aten::mm", -3, -1, "gemm", 0, 1000 - host_us);
  b.op("aten::nonzero_cpu_work", 1000 - host_us, 1000);
  return Report(b.done());
}

TEST(Report, CpuBoundRuleAtItsShare) {
  const Report r = cpu_bound_trace(200.001);
  const Report::Finding* f = finding(r, "cpu_bound");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->evidence[0].what, "aten::nonzero_cpu_work");
  EXPECT_EQ(finding(cpu_bound_trace(199.999), "cpu_bound"), nullptr);
}

Report dominant_trace(double op_us) {
  Builder b;
  b.step(1, 0, 1000);
  b.op("aten::conv2d", 0, op_us);
  b.op("aten::add", 990, 995);
  return Report(b.done());
}

TEST(Report, DominantOperatorRuleAtItsShare) {
  const Report r = dominant_trace(400);
  const Report::Finding* f = finding(r, "dominant_operator");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->evidence[0].what, "aten::conv2d");
  EXPECT_EQ(finding(dominant_trace(399.999), "dominant_operator"), nullptr);
}

TEST(Report, FindingsAreRankedByTheirSaving) {
  Builder b;
  b.step(1, 0, 1000);
  b.range("enumerate(DataLoader)#It.__next__", 0, 300);  // 30%
  b.op_with_kernel("aten::mm", 300, 310, "gemm", 310, 400);
  const Report r(b.done());
  ASSERT_GE(r.findings.size(), 2u);
  for (std::size_t i = 1; i < r.findings.size(); ++i)
    EXPECT_GE(r.findings[i - 1].saving_ns_per_step.value_or(-1),
              r.findings[i].saving_ns_per_step.value_or(-1));
  EXPECT_EQ(r.findings[0].id, "low_gpu_utilization");  // 910 us of 1000 without kernels
  const std::string text = r.summary();
  EXPECT_NE(text.find("upper bounds"), std::string::npos);
  EXPECT_NE(text.find("data_loader"), std::string::npos);
  const auto j = nlohmann::json::parse(r.to_json());
  EXPECT_EQ(j["findings"][0]["rank"], 1);
  EXPECT_TRUE(j["findings"][0]["saving_is_upper_bound"].get<bool>());
  EXPECT_EQ(j["steps"]["per_step"][0]["categories_us"]["DataLoader"].get<double>(), 300.0);
}

// ---------------------------------------------------------------- real traces

TEST(Report, RealH200TraceReadBack) {
  const std::string path =
      std::string(PTPROF_SOURCE_DIR) + "/tests/gpu/fixtures/h200/ptprof.pt.trace.json.gz";
  const Trace t = detail::parse_trace(detail::read_trace_file(path), path);
  const Report r(t);
  ASSERT_TRUE(r.has_gpu_data);
  EXPECT_EQ(r.steps.size(), 5u);  // the CPU steps; their GPU spans are not steps
  for (const auto& s : r.steps) {
    int64_t sum = 0;
    for (int64_t v : s.category_ns) sum += v;
    EXPECT_EQ(sum, s.total_ns());
  }
  ASSERT_EQ(r.devices.size(), 1u);
  EXPECT_GT(r.devices[0].utilization, 0.0);
  EXPECT_LT(r.devices[0].utilization, 1.0);
  EXPECT_TRUE(r.idle_causes_determined);
  EXPECT_FALSE(r.top_kernels.empty());
  expect_outputs(r);
}

}  // namespace
}  // namespace ptprof
