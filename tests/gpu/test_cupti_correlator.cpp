// The correlator, fed synthetic CUPTI record streams (decoded from the real struct types).
#include <gtest/gtest.h>

#include <string>
#include <unordered_map>
#include <vector>

#include "cupti_test_util.h"
#include "gpu/cupti_correlator.h"
#include "gpu/cupti_decode.h"

namespace ptprof::detail {
namespace {

using test::api_record;
using test::ext_record;
using test::kernel_record;

constexpr int64_t kUnixOffset = 1700000000000000000;  // Unix ns - monotonic ns
constexpr int64_t kStart = 1000000000;                // window, monotonic ns
constexpr int64_t kEnd = 2000000000;
constexpr uint32_t kThreadA = 0xA1;  // CUPTI thread ids
constexpr uint32_t kThreadB = 0xB2;
constexpr int64_t kTidA = 100;  // their OS thread ids
constexpr int64_t kTidB = 200;
constexpr CUpti_CallbackId kLaunch = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;

// Window-relative microseconds -> CUPTI timestamp (on our clock: the identity map).
uint64_t at_us(double us) {
  return static_cast<uint64_t>(kStart + static_cast<int64_t>(us * 1000));
}

class CorrelatorTest : public ::testing::Test {
 protected:
  CorrelatorTest()
      : dec_(trace_, {test::h100(0), test::h100(1)}, [](CUpti_CallbackDomain d, uint32_t c) {
          return real_cupti_api().callback_name(d, c);
        }) {}

  // A CPU event as the session builds it: Unix ns, External id = op id.
  void op(const char* name, uint64_t id, int64_t tid, double start_us, double end_us,
          EventKind kind = EventKind::CpuOp) {
    Event e;
    e.kind = kind;
    e.name = trace_.intern(name);
    e.start_ns = static_cast<int64_t>(at_us(start_us)) + kUnixOffset;
    e.duration_ns = static_cast<int64_t>((end_us - start_us) * 1000);
    e.pid = 4242;
    e.tid = tid;
    e.external_id = id;
    trace_.events.push_back(e);
  }

  template <typename Record>
  void feed(const Record& r) {
    DecodedActivity a;
    ExternalCorrelationRecord x;
    switch (dec_.decode(reinterpret_cast<const CUpti_Activity&>(r), &a, &x)) {
      case RecordRole::Activity:
        cor_.add(a);
        break;
      case RecordRole::ExternalCorrelation:
        cor_.add_external(x);
        break;
      case RecordRole::Skipped:
        break;
    }
  }

  CorrelationStats finish(GpuClock clock = GpuClock::identity()) {
    CorrelationWindow w;
    w.start_ns = kStart;
    w.end_ns = kEnd;
    w.unix_offset_ns = kUnixOffset;
    w.clock = clock;
    return cor_.finish(w, {{kThreadA, kTidA}, {kThreadB, kTidB}}, trace_);
  }

  std::vector<const Event*> all(EventKind kind) const { return test::events_of(trace_, kind); }
  const Event* find(EventKind kind, uint64_t correlation) const {
    return test::event_with(trace_, kind, correlation);
  }
  const Event* annotation_span(const char* name, int64_t stream) const {
    for (const Event& e : trace_.events) {
      if (e.kind == EventKind::GpuUserAnnotation && e.name == name && e.stream == stream) return &e;
    }
    return nullptr;
  }

  Trace trace_;
  ActivityDecoder dec_;
  Correlator cor_;
};

TEST_F(CorrelatorTest, LaunchJoinsKernelToRuntimeCallAndOp) {
  op("aten::add", 10, kTidA, 100, 200);
  feed(ext_record(5, 10));
  feed(api_record(false, kLaunch, 5, at_us(150), at_us(160), kThreadA, 4242));
  // The kernel runs after its op has ended on the CPU.
  feed(kernel_record("_Z3addv", 5, at_us(300), at_us(310)));
  const CorrelationStats st = finish();

  const Event* rt = find(EventKind::CudaRuntime, 5);
  ASSERT_NE(rt, nullptr);
  EXPECT_EQ(rt->name, "cudaLaunchKernel");
  EXPECT_EQ(rt->external_id, 10u);
  EXPECT_EQ(rt->pid, 4242);
  EXPECT_EQ(rt->tid, kTidA);  // CUPTI's thread id mapped to the OS one
  EXPECT_EQ(rt->start_ns, static_cast<int64_t>(at_us(150)) + kUnixOffset);
  EXPECT_EQ(rt->duration_ns, 10000);
  EXPECT_EQ(rt->cbid, static_cast<int32_t>(kLaunch));
  EXPECT_TRUE(rt->flow_start);
  EXPECT_FALSE(rt->flow_end);

  const Event* k = find(EventKind::Kernel, 5);
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->name, "add()");
  EXPECT_EQ(k->external_id, 10u);
  EXPECT_EQ(k->start_ns, static_cast<int64_t>(at_us(300)) + kUnixOffset);
  EXPECT_EQ(k->duration_ns, 10000);
  EXPECT_EQ(k->pid, 0);
  EXPECT_EQ(k->tid, 7);
  EXPECT_TRUE(k->flow_end);
  EXPECT_FALSE(k->flow_start);
  EXPECT_GE(k->start_ns, rt->start_ns);

  EXPECT_EQ(st.kernels, 1u);
  EXPECT_EQ(st.runtime_calls, 1u);
  EXPECT_EQ(st.gpu_ops, 1u);
  EXPECT_EQ(st.gpu_with_launch, 1u);
  EXPECT_EQ(st.gpu_with_op, 1u);
  EXPECT_EQ(st.gpu_starts_before_launch, 0u);
  EXPECT_EQ(st.outside_window, 0u);
}

TEST_F(CorrelatorTest, RecordsInAnyOrderAcrossBuffers) {
  op("aten::mm", 20, kTidA, 100, 200);
  // GPU buffer first, then the runtime buffer, the external correlation last.
  feed(kernel_record("_Z4gemmv", 8, at_us(400), at_us(450)));
  feed(api_record(false, kLaunch, 8, at_us(120), at_us(125), kThreadA));
  feed(ext_record(8, 20));
  finish();
  const Event* k = find(EventKind::Kernel, 8);
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->external_id, 20u);
  EXPECT_TRUE(k->flow_end);
  EXPECT_EQ(find(EventKind::CudaRuntime, 8)->external_id, 20u);
}

TEST_F(CorrelatorTest, SeveralThreadsAndStreams) {
  op("aten::add", 1, kTidA, 100, 200);
  op("aten::mul", 2, kTidB, 100, 200);
  feed(ext_record(31, 1));
  feed(api_record(false, kLaunch, 31, at_us(110), at_us(111), kThreadA));
  feed(ext_record(32, 2));
  feed(api_record(false, kLaunch, 32, at_us(112), at_us(113), kThreadB));
  feed(kernel_record("_Z1av", 31, at_us(300), at_us(301), 0, 7));
  feed(kernel_record("_Z1bv", 32, at_us(300), at_us(305), 1, 13));
  const CorrelationStats st = finish();
  EXPECT_EQ(st.gpu_with_op, 2u);
  const Event* ka = find(EventKind::Kernel, 31);
  const Event* kb = find(EventKind::Kernel, 32);
  ASSERT_TRUE(ka && kb);
  EXPECT_EQ(ka->external_id, 1u);
  EXPECT_EQ(ka->pid, 0);
  EXPECT_EQ(ka->tid, 7);
  EXPECT_EQ(kb->external_id, 2u);
  EXPECT_EQ(kb->pid, 1);
  EXPECT_EQ(kb->tid, 13);
  EXPECT_EQ(find(EventKind::CudaRuntime, 31)->tid, kTidA);
  EXPECT_EQ(find(EventKind::CudaRuntime, 32)->tid, kTidB);
}

TEST_F(CorrelatorTest, UnknownCuptiThreadKeepsItsId) {
  feed(api_record(false, kLaunch, 9, at_us(10), at_us(11), 0xDEAD));
  finish();
  EXPECT_EQ(find(EventKind::CudaRuntime, 9)->tid, 0xDEAD);
}

TEST_F(CorrelatorTest, LaunchWithoutExternalCorrelation) {
  // A launch outside any op (e.g. a thread with RecordFunction off): linked to its kernel only.
  feed(api_record(false, kLaunch, 40, at_us(10), at_us(11), kThreadA));
  feed(kernel_record("_Z1kv", 40, at_us(20), at_us(21)));
  const CorrelationStats st = finish();
  const Event* k = find(EventKind::Kernel, 40);
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->external_id, 0u);
  EXPECT_TRUE(k->flow_end);
  EXPECT_EQ(find(EventKind::CudaRuntime, 40)->external_id, 0u);
  EXPECT_TRUE(find(EventKind::CudaRuntime, 40)->flow_start);
  EXPECT_EQ(st.gpu_with_launch, 1u);
  EXPECT_EQ(st.gpu_with_op, 0u);
}

TEST_F(CorrelatorTest, KernelWhoseRuntimeRecordWasDropped) {
  op("aten::relu", 50, kTidA, 100, 200);
  feed(ext_record(51, 50));
  feed(kernel_record("_Z4reluv", 51, at_us(300), at_us(301)));
  // No runtime record and no op: kept only because it ran inside the window...
  feed(kernel_record("_Z6orphanv", 52, at_us(500), at_us(501)));
  // ...so one that ran after the window stays out.
  feed(kernel_record("_Z4latev", 53, at_us(1500000), at_us(1500001)));
  const CorrelationStats st = finish();
  const Event* k = find(EventKind::Kernel, 51);
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->external_id, 50u);
  EXPECT_FALSE(k->flow_end);  // no launch in the trace: no dangling arrow
  ASSERT_NE(find(EventKind::Kernel, 52), nullptr);
  EXPECT_EQ(find(EventKind::Kernel, 52)->external_id, 0u);
  EXPECT_EQ(find(EventKind::Kernel, 53), nullptr);
  EXPECT_EQ(st.kernels, 2u);
  EXPECT_EQ(st.gpu_with_launch, 0u);
  EXPECT_EQ(st.gpu_with_op, 1u);
  EXPECT_EQ(st.outside_window, 1u);
}

TEST_F(CorrelatorTest, RecordsBelongToTheWindowOfTheirLaunch) {
  // Launched before the window (warmup), ran inside it: stays out with its launch.
  feed(api_record(false, kLaunch, 60, at_us(-50), at_us(-49), kThreadA));
  feed(kernel_record("_Z5earlyv", 60, at_us(5), at_us(6)));
  // Launched at the very end, ran after the window closed: in, complete.
  feed(api_record(false, kLaunch, 61, at_us(999990), at_us(999995), kThreadA));
  feed(kernel_record("_Z4tailv", 61, at_us(1000100), at_us(1000200)));
  // Launched after the window.
  feed(api_record(false, kLaunch, 62, at_us(1000001), at_us(1000002), kThreadA));
  feed(kernel_record("_Z5afterv", 62, at_us(1000300), at_us(1000400)));
  // CUPTI's own overhead outside the window.
  feed(test::overhead_record(CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH, at_us(1000500),
                             at_us(1000600)));
  feed(test::overhead_record(CUPTI_ACTIVITY_OVERHEAD_CUPTI_RESOURCE, at_us(10), at_us(20)));
  const CorrelationStats st = finish();
  EXPECT_EQ(find(EventKind::Kernel, 60), nullptr);
  EXPECT_EQ(find(EventKind::CudaRuntime, 60), nullptr);
  ASSERT_NE(find(EventKind::Kernel, 61), nullptr);
  EXPECT_EQ(find(EventKind::Kernel, 61)->duration_ns, 100000);
  EXPECT_NE(find(EventKind::CudaRuntime, 61), nullptr);
  EXPECT_EQ(find(EventKind::Kernel, 62), nullptr);
  EXPECT_EQ(find(EventKind::CudaRuntime, 62), nullptr);
  ASSERT_EQ(all(EventKind::Overhead).size(), 1u);
  EXPECT_EQ(all(EventKind::Overhead)[0]->name, "Resource");
  EXPECT_EQ(st.outside_window, 5u);
}

TEST_F(CorrelatorTest, CopiesAndMemsetsJoinLikeKernels) {
  op("aten::copy_", 70, kTidA, 100, 200);
  feed(ext_record(71, 70));
  feed(api_record(false, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, 71, at_us(110), at_us(115),
                  kThreadA));
  feed(test::memcpy_record(CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, CUPTI_ACTIVITY_MEMORY_KIND_PINNED,
                           CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 1 << 20, 71, at_us(120), at_us(140)));
  feed(ext_record(72, 70));
  feed(api_record(false, CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020, 72, at_us(150), at_us(152),
                  kThreadA));
  feed(test::memset_record(4096, 72, at_us(160), at_us(161)));
  const CorrelationStats st = finish();
  const Event* m = find(EventKind::Memcpy, 71);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->name, "Memcpy HtoD (Pinned -> Device)");
  EXPECT_EQ(m->external_id, 70u);
  EXPECT_EQ(m->transfer.bytes, 1u << 20);
  EXPECT_TRUE(m->flow_end);
  const Event* s = find(EventKind::Memset, 72);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->external_id, 70u);
  EXPECT_TRUE(s->flow_end);
  EXPECT_TRUE(find(EventKind::CudaRuntime, 71)->flow_start);
  EXPECT_TRUE(find(EventKind::CudaRuntime, 72)->flow_start);
  EXPECT_EQ(st.memcpys, 1u);
  EXPECT_EQ(st.memsets, 1u);
  EXPECT_EQ(st.gpu_with_op, 2u);
}

TEST_F(CorrelatorTest, NonLaunchCallsDrawNoArrow) {
  feed(api_record(false, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, 80, at_us(1), at_us(2),
                  kThreadA));
  // A launch whose kernel is not in the trace (not yet run, or dropped) draws none either.
  feed(api_record(false, kLaunch, 81, at_us(3), at_us(4), kThreadA));
  finish();
  EXPECT_FALSE(find(EventKind::CudaRuntime, 80)->flow_start);
  EXPECT_FALSE(find(EventKind::CudaRuntime, 81)->flow_start);
}

TEST_F(CorrelatorTest, DriverNoiseIsDroppedDriverLaunchesKept) {
  op("triton_op", 90, kTidA, 100, 200);
  feed(api_record(true, CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent, 91, at_us(110), at_us(111),
                  kThreadA));
  feed(ext_record(92, 90));
  feed(api_record(true, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 92, at_us(112), at_us(113),
                  kThreadA));
  feed(kernel_record("triton_kernel", 92, at_us(150), at_us(160)));
  const CorrelationStats st = finish();
  EXPECT_EQ(find(EventKind::CudaDriver, 91), nullptr);
  const Event* d = find(EventKind::CudaDriver, 92);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->name, "cuLaunchKernel");
  EXPECT_TRUE(d->flow_start);
  EXPECT_EQ(d->external_id, 90u);
  EXPECT_TRUE(find(EventKind::Kernel, 92)->flow_end);
  EXPECT_EQ(find(EventKind::Kernel, 92)->external_id, 90u);
  EXPECT_EQ(st.driver_calls, 1u);
}

TEST_F(CorrelatorTest, SyncRecordsFindTheirDeviceThroughTheContext) {
  feed(kernel_record("_Z1kv", 1, at_us(1), at_us(2), /*device=*/1));  // context 1 on device 1
  feed(api_record(false, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, 95, at_us(10),
                  at_us(50), kThreadA));
  feed(test::sync_record(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, 95, at_us(11),
                         at_us(49), 7, /*context=*/1));
  const CorrelationStats st = finish();
  const Event* s = find(EventKind::CudaSync, 95);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->name, "Stream Sync");
  EXPECT_EQ(s->device, 1);
  EXPECT_EQ(s->pid, 1);
  EXPECT_EQ(s->tid, 7);
  EXPECT_TRUE(s->flow_end);
  EXPECT_TRUE(find(EventKind::CudaRuntime, 95)->flow_start);
  EXPECT_EQ(st.syncs, 1u);
  EXPECT_EQ(st.gpu_ops, 1u);  // syncs are not GPU work
}

TEST_F(CorrelatorTest, ForeignExternalCorrelationKindsAreIgnored) {
  op("aten::add", 10, kTidA, 100, 200);
  feed(ext_record(5, 999, CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0));  // Kineto's
  feed(api_record(false, kLaunch, 5, at_us(150), at_us(160), kThreadA));
  feed(kernel_record("_Z3addv", 5, at_us(300), at_us(310)));
  const CorrelationStats st = finish();
  EXPECT_EQ(find(EventKind::Kernel, 5)->external_id, 0u);
  EXPECT_EQ(st.foreign_external, 1u);
}

TEST_F(CorrelatorTest, UserRangesBecomeGpuSpansPerStream) {
  op("ProfilerStep#3", 1, kTidA, 0, 900, EventKind::UserAnnotation);
  op("forward", 2, kTidA, 10, 500, EventKind::UserAnnotation);
  op("aten::linear", 3, kTidA, 20, 200);
  op("aten::addmm", 4, kTidA, 30, 190);  // child of aten::linear
  op("inner", 8, kTidA, 240, 310, EventKind::UserAnnotation);
  op("aten::relu", 5, kTidA, 250, 300);
  op("backward", 6, kTidB, 600, 800, EventKind::UserAnnotation);  // another thread
  op("aten::mm", 7, kTidB, 610, 700);
  feed(ext_record(11, 4));
  feed(api_record(false, kLaunch, 11, at_us(40), at_us(41), kThreadA));
  feed(kernel_record("_Z4gemmv", 11, at_us(100), at_us(180), 0, 7));
  feed(ext_record(12, 5));
  feed(api_record(false, kLaunch, 12, at_us(260), at_us(261), kThreadA));
  feed(kernel_record("_Z4reluv", 12, at_us(270), at_us(290), 0, 7));
  feed(ext_record(13, 5));
  feed(api_record(false, kLaunch, 13, at_us(262), at_us(263), kThreadA));
  feed(kernel_record("_Z4sidev", 13, at_us(265), at_us(275), 0, 13));
  feed(ext_record(14, 7));
  feed(api_record(false, kLaunch, 14, at_us(620), at_us(621), kThreadB));
  feed(kernel_record("_Z2mmv", 14, at_us(700), at_us(750), 0, 7));
  const CorrelationStats st = finish();

  const Event* fwd7 = annotation_span("forward", 7);
  ASSERT_NE(fwd7, nullptr);
  EXPECT_EQ(fwd7->external_id, 2u);
  EXPECT_EQ(fwd7->pid, 0);
  EXPECT_EQ(fwd7->tid, 7);
  EXPECT_EQ(fwd7->device, 0);
  // From the gemm's start to the relu's end, widened by 1 ns each side as Kineto does.
  EXPECT_EQ(fwd7->start_ns, static_cast<int64_t>(at_us(100)) - 1 + kUnixOffset);
  EXPECT_EQ(fwd7->duration_ns, 190000 + 2);
  const Event* fwd13 = annotation_span("forward", 13);
  ASSERT_NE(fwd13, nullptr);
  EXPECT_EQ(fwd13->start_ns, static_cast<int64_t>(at_us(265)) - 1 + kUnixOffset);
  EXPECT_EQ(fwd13->duration_ns, 10000 + 2);
  // The step range spans all the GPU work beneath it on its thread, per stream, as torch.profiler
  // writes it (TensorBoard's writer leaves it out). The other thread's range is not beneath it.
  const Event* step7 = annotation_span("ProfilerStep#3", 7);
  ASSERT_NE(step7, nullptr);
  EXPECT_EQ(step7->external_id, 1u);
  EXPECT_EQ(step7->start_ns, static_cast<int64_t>(at_us(100)) - 1 + kUnixOffset);
  EXPECT_EQ(step7->duration_ns, 190000 + 2);
  ASSERT_NE(annotation_span("ProfilerStep#3", 13), nullptr);
  EXPECT_EQ(annotation_span("ProfilerStep#3", 13)->duration_ns, 10000 + 2);
  const Event* bwd = annotation_span("backward", 7);
  ASSERT_NE(bwd, nullptr);
  EXPECT_EQ(bwd->external_id, 6u);
  EXPECT_EQ(bwd->start_ns, static_cast<int64_t>(at_us(700)) - 1 + kUnixOffset);
  EXPECT_EQ(annotation_span("backward", 13), nullptr);
  // A range nested in forward gets its own span, inside forward's.
  EXPECT_EQ(annotation_span("inner", 7)->external_id, 8u);
  EXPECT_EQ(annotation_span("inner", 7)->start_ns,
            static_cast<int64_t>(at_us(270)) - 1 + kUnixOffset);
  EXPECT_EQ(st.gpu_user_annotations, 7u);
  EXPECT_EQ(all(EventKind::GpuUserAnnotation).size(), 7u);
}

TEST_F(CorrelatorTest, MeasuredClockMapsCuptiTimesOntoOurs) {
  // CUPTI on another clock, 5 s ahead of ours.
  const int64_t ahead = 5000000000;
  op("aten::add", 10, kTidA, 100, 200);
  feed(ext_record(5, 10));
  feed(api_record(false, kLaunch, 5, at_us(150) + ahead, at_us(160) + ahead, kThreadA));
  feed(kernel_record("_Z3addv", 5, at_us(300) + ahead, at_us(310) + ahead));
  ClockPair p;
  p.cpu_ns = kStart;
  p.cupti_ns = static_cast<uint64_t>(kStart + ahead);
  EXPECT_EQ(cor_.api_calls_within(GpuClock::identity(), kStart, kEnd), 0u);
  EXPECT_EQ(cor_.api_calls_within(GpuClock::from_pair(p), kStart, kEnd), 1u);
  finish(GpuClock::from_pair(p));
  EXPECT_EQ(find(EventKind::CudaRuntime, 5)->start_ns,
            static_cast<int64_t>(at_us(150)) + kUnixOffset);
  EXPECT_EQ(find(EventKind::Kernel, 5)->start_ns, static_cast<int64_t>(at_us(300)) + kUnixOffset);
  EXPECT_EQ(find(EventKind::Kernel, 5)->duration_ns, 10000);
}

TEST_F(CorrelatorTest, ClockSkewIsCounted) {
  feed(api_record(false, kLaunch, 5, at_us(150), at_us(160), kThreadA));
  feed(kernel_record("_Z3addv", 5, at_us(140), at_us(145)));
  EXPECT_EQ(finish().gpu_starts_before_launch, 1u);
}

TEST(GpuClockTest, FitsRateAndOffset) {
  // CUPTI ticking at 2 units per ns (a TSC), 1000 units ahead at the first pair.
  ClockPair a{1000000000, 2000001000, 0};
  ClockPair b{1100000000, 2200001000, 0};
  const GpuClock c = GpuClock::from_pairs(a, b);
  EXPECT_DOUBLE_EQ(c.rate(), 0.5);
  EXPECT_EQ(c.to_cpu(2100001000), 1050000000);
  EXPECT_EQ(c.duration_to_cpu(2000), 1000);
  // Same rate within noise: offset only, exact integers.
  ClockPair d{1100000000, 1100000500, 0};
  const GpuClock o = GpuClock::from_pairs(ClockPair{1000000000, 1000000500, 0}, d);
  EXPECT_DOUBLE_EQ(o.rate(), 1.0);
  EXPECT_EQ(o.to_cpu(1200000500), 1200000000);
  EXPECT_TRUE(same_clock(ClockPair{100, 150, 20}, 50));
  EXPECT_FALSE(same_clock(ClockPair{100, 1000000, 20}, 50));
}

TEST(GpuClockTest, MeasureKeepsTheTightestPair) {
  int64_t t = 0;
  int call = 0;
  // The CPU reads bracket the CUPTI read by 5 ns, except on the third try (1 ns).
  auto cpu = [&] {
    t += (call == 4 || call == 5) ? 1 : 5;
    ++call;
    return t;
  };
  auto cupti = [&](uint64_t* ts) {
    *ts = static_cast<uint64_t>(t) + 1000;
    return true;
  };
  ClockPair p;
  ASSERT_TRUE(measure_clock_pair(cpu, cupti, 4, &p));
  EXPECT_EQ(p.spread_ns, 1);
  EXPECT_FALSE(measure_clock_pair(
      cpu, [](uint64_t*) { return false; }, 3, &p));
}

}  // namespace
}  // namespace ptprof::detail
