// Lean mode (CudaTracing::Lean) through the GpuBackend seam over a fake CUPTI that calls the
// subscriber as CUPTI's Callback API does (CUpti_CallbackData at enter and exit, CUpti_GraphData
// for graph nodes): which kinds and callbacks it turns on, how calls, GPU records and ops join,
// the cuda_runtime events timed by the callbacks, CUDA graph replays attributed to the op that
// captured their node, and the fallback to launch-call API records.
#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include "backend_fixture.h"
#include "cupti_test_util.h"
#include "gpu/cupti_call_log.h"
#include "gpu/cupti_clock.h"
#include "gpu/cupti_graphs.h"
#include "ptprof/options.h"
#include "trace/clock.h"

namespace ptprof::detail {
namespace {

constexpr CUpti_CallbackId kLaunch = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
constexpr CUpti_CallbackId kMemcpyAsync = CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020;
constexpr CUpti_CallbackId kMemsetAsync = CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020;
constexpr CUpti_CallbackId kGraphLaunch = CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000;
constexpr CUpti_CallbackId kCuLaunch = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel;
constexpr int64_t kUnixOffset = test::kBackendUnixOffset;
using test::os_tid;

bool contains(const std::vector<Status>& v, const std::string& needle) {
  return std::any_of(v.begin(), v.end(), [&](const Status& s) {
    return s.message().find(needle) != std::string::npos;
  });
}

class LeanTest : public test::BackendFixture {
 protected:
  LeanTest() { options_.tracing = CudaTracing::Lean; }
  void SetUp() override {
    CallLog::get().discard();
    GraphCaptures::get().clear();
  }
  void TearDown() override {
    if (backend_) backend_->disable();
  }
  void push(uint64_t id) { backend_->push_hook()(id); }
  void pop() { backend_->pop_hook()(0); }
  // cudaLaunchKernel as libtorch makes it: the runtime call makes a cuLaunchKernel inside it,
  // and the kernel record carries the runtime call's correlation id.
  uint32_t launch(const char* kernel = "_Z6kernelv") {
    return api_.callback_call(false, kLaunch, [&](uint32_t c) {
      api_.callback_call(true, kCuLaunch);
      const uint64_t t = api_.now();
      api_.emit(test::kernel_record(kernel, c, t + 20000, t + 25000));
    });
  }
  // cudaGraphLaunch of an executable graph whose one kernel node is `node`.
  uint32_t graph_launch(uint32_t graph, uint64_t node) {
    return api_.callback_call(false, kGraphLaunch, [&](uint32_t c) {
      const uint64_t t = api_.now();
      CUpti_ActivityKernel10 k = test::kernel_record("_Z4gemmv", c, t + 1000, t + 2000);
      k.graphId = graph;
      k.graphNodeId = node;
      api_.emit(k);
    });
  }
  const GraphNodeInfo* graph_node(const Event* e) const {
    if (e == nullptr || e->graph_node < 0) return nullptr;
    return &trace_.graph_nodes.at(static_cast<std::size_t>(e->graph_node));
  }
};

TEST(LeanOptions, ClassicIsTheDefaultUntilLeanIsMeasuredAndLeanIsAnOption) {
  EXPECT_EQ(Options{}.cuda_tracing, CudaTracing::Classic);
  Options lean;
  lean.cuda_tracing = CudaTracing::Lean;
  EXPECT_EQ(gpu_options(lean).tracing, CudaTracing::Lean);
  EXPECT_FALSE(Options{}.cuda_graph_launches_only);
  Options o;
  o.cuda_tracing = CudaTracing::Classic;
  o.cuda_graph_launches_only = true;
  o.gpu_buffer_bytes = 1 << 20;
  o.max_gpu_buffer_bytes = 8 << 20;
  const GpuOptions g = gpu_options(o);
  EXPECT_EQ(g.tracing, CudaTracing::Classic);
  EXPECT_TRUE(g.graph_launches_only);
  EXPECT_EQ(g.buffer_size_bytes, std::size_t{1} << 20);
  EXPECT_EQ(g.max_buffer_bytes, std::size_t{8} << 20);
  EXPECT_EQ(gpu_options(Options{}).tracing, CudaTracing::Classic);
}

TEST_F(LeanTest, EnablesGpuRecordsAndLaunchCallbacksOnly) {
  enable();
  EXPECT_NE(api_.callback, nullptr);
  EXPECT_EQ(api_.enabled,
            (std::set<CUpti_ActivityKind>{CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                          CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET,
                                          CUPTI_ACTIVITY_KIND_SYNCHRONIZATION}));
  auto on = [&](CUpti_CallbackDomain d, CUpti_CallbackId c) {
    return api_.callbacks_on.count({d, c}) == 1;
  };
  for (CUpti_CallbackId c : {kLaunch, kMemcpyAsync, kMemsetAsync, kGraphLaunch,
                             CUpti_CallbackId{CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020}})
    EXPECT_TRUE(on(CUPTI_CB_DOMAIN_RUNTIME_API, c)) << c;
  EXPECT_TRUE(on(CUPTI_CB_DOMAIN_DRIVER_API, kCuLaunch));
  EXPECT_TRUE(on(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch));
  // Calls that launch nothing are not called back.
  EXPECT_FALSE(on(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020));
  EXPECT_FALSE(on(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchHostFunc_v10000));
  EXPECT_FALSE(on(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent));
  for (CUpti_CallbackId c : {CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED,
                             CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED,
                             CUPTI_CBID_RESOURCE_GRAPHNODE_DESTROY_STARTING})
    EXPECT_TRUE(on(CUPTI_CB_DOMAIN_RESOURCE, c)) << c;
  EXPECT_TRUE(api_.api_records_on.empty());
  // The hooks keep ops on ptprof's side: no external-correlation push per op.
  push(1);
  EXPECT_TRUE(api_.stack.empty());
  pop();
  backend_->disable();
  EXPECT_EQ(api_.callback, nullptr);  // unsubscribed
  EXPECT_TRUE(api_.enabled.empty());
}

TEST_F(LeanTest, GraphLaunchesOnlyAddsTheGraphTrace) {
  options_.graph_launches_only = true;
  enable();
  EXPECT_EQ(api_.enabled.count(CUPTI_ACTIVITY_KIND_GRAPH_TRACE), 1u);
}

TEST_F(LeanTest, RefusesWhenAnotherSubscriberHoldsCupti) {
  api_.subscribe_result = CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  api_.subscriber_holder = "CUPTI for Nsight Systems";
  make();
  const Status st = backend_->enable();
  EXPECT_FALSE(st.ok());
  const std::string err = st.message();
  EXPECT_NE(err.find("(CUPTI for Nsight Systems)"), std::string::npos) << err;
  EXPECT_TRUE(api_.enabled.empty());
  backend_.reset();
}

TEST_F(LeanTest, NoLaunchCallbackFailsEnableAndNamesClassic) {
  for (const auto& [domain, size] :
       {std::pair<CUpti_CallbackDomain, uint32_t>{CUPTI_CB_DOMAIN_RUNTIME_API,
                                                  CUPTI_RUNTIME_TRACE_CBID_SIZE},
        {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE}}) {
    for (uint32_t c = 0; c < size; ++c) api_.failing_callbacks.insert({domain, c});
  }
  make();
  const Status st = backend_->enable();
  EXPECT_FALSE(st.ok());
  const std::string err = st.message();
  EXPECT_NE(err.find("CudaTracing::Classic"), std::string::npos) << err;
  EXPECT_TRUE(api_.enabled.empty());
  EXPECT_EQ(api_.callback, nullptr);
  backend_.reset();
}

TEST_F(LeanTest, CallbacksLinkKernelsCopiesAndMemsetsToTheirCallAndOp) {
  enable();
  const int64_t start = now_ns();
  backend_->begin_window(start);
  const int64_t t0 = now_ns();
  push(1001);  // aten::linear
  push(1002);  // aten::addmm
  const uint32_t k = launch();
  pop();
  const uint32_t m = api_.callback_call(false, kMemcpyAsync, [&](uint32_t c) {
    const uint64_t t = api_.now();
    api_.emit(test::memcpy_record(CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, CUPTI_ACTIVITY_MEMORY_KIND_PINNED,
                                  CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 4096, c, t + 1000, t + 3000));
  });
  pop();
  const uint32_t s = api_.callback_call(false, kMemsetAsync, [&](uint32_t c) {
    const uint64_t t = api_.now();
    api_.emit(test::memset_record(512, c, t + 1000, t + 2000));
  });
  const int64_t t1 = now_ns();
  cpu_op("aten::linear", 1001, t0, t1);
  cpu_op("aten::addmm", 1002, t0 + 1, t1 - 1);
  end_window(start, now_ns());

  EXPECT_TRUE(warnings_.empty()) << warnings_[0].message();
  EXPECT_EQ(trace_.metadata.at("ptprof_cuda_tracing"), "\"lean\"");
  EXPECT_EQ(trace_.metadata.at("ptprof_gpu_clock"), "\"cupti_timestamp_callback\"");
  EXPECT_EQ(trace_.metadata.count("ptprof_cuda_launch_api_records"), 0u);
  // One runtime event per call; the cuLaunchKernel inside cudaLaunchKernel is the same launch.
  ASSERT_EQ(all(EventKind::CudaRuntime).size(), 3u);
  EXPECT_TRUE(all(EventKind::CudaDriver).empty());
  const Event* rk = find(EventKind::CudaRuntime, k);
  const Event* rm = find(EventKind::CudaRuntime, m);
  const Event* rs = find(EventKind::CudaRuntime, s);
  ASSERT_TRUE(rk && rm && rs);
  EXPECT_EQ(rk->name, "cudaLaunchKernel");
  EXPECT_EQ(rm->name, "cudaMemcpyAsync");
  EXPECT_EQ(rs->name, "cudaMemsetAsync");
  EXPECT_EQ(rk->external_id, 1002u);
  EXPECT_EQ(rm->external_id, 1001u);
  EXPECT_EQ(rs->external_id, 0u);
  const Event* kk = find(EventKind::Kernel, k);
  const Event* km = find(EventKind::Memcpy, m);
  const Event* ks = find(EventKind::Memset, s);
  ASSERT_TRUE(kk && km && ks);
  EXPECT_EQ(kk->external_id, 1002u);
  EXPECT_EQ(km->external_id, 1001u);
  EXPECT_EQ(ks->external_id, 0u);
  for (const Event* r : {rk, rm, rs}) {
    EXPECT_EQ(r->pid, ::getpid());
    EXPECT_EQ(r->tid, os_tid());
    EXPECT_TRUE(r->flow_start);
  }
  for (const auto& [r, g] : {std::pair{rk, kk}, {rm, km}, {rs, ks}}) {
    EXPECT_TRUE(g->flow_end);
    EXPECT_GE(g->start_ns, r->start_ns);  // the GPU's ticks and the calls' on one clock
    EXPECT_EQ(g->graph_node, -1);
  }
}

TEST_F(LeanTest, RuntimeEventsAreTheCallbacksEnterAndExit) {
  enable();
  const int64_t start = now_ns();
  backend_->begin_window(start);
  int64_t before = 0, inside_from = 0, inside_to = 0, after = 0;
  before = now_ns();
  const uint32_t c = api_.callback_call(false, kLaunch, [&](uint32_t) {
    inside_from = now_ns();
    while (now_ns() - inside_from < 2000000) {
    }
    inside_to = now_ns();
  });
  after = now_ns();
  end_window(start, now_ns());
  const Event* r = find(EventKind::CudaRuntime, c);
  ASSERT_NE(r, nullptr);
  // Entry between `before` and the call's body, exit between its body and `after` (1 us
  // allowed for the tick conversion's rounding).
  EXPECT_GE(r->start_ns - kUnixOffset, before - 1000);
  EXPECT_LE(r->start_ns - kUnixOffset, inside_from + 1000);
  EXPECT_GE(r->start_ns + r->duration_ns - kUnixOffset, inside_to - 1000);
  EXPECT_LE(r->start_ns + r->duration_ns - kUnixOffset, after + 1000);
  EXPECT_EQ(r->cbid, static_cast<int32_t>(kLaunch));
}

TEST_F(LeanTest, ADriverLaunchOutsideARuntimeCallIsItsOwnEvent) {
  enable();
  const int64_t start = now_ns();
  backend_->begin_window(start);
  push(5);
  const uint32_t c = api_.callback_call(true, kCuLaunch, [&](uint32_t c) {
    const uint64_t t = api_.now();
    api_.emit(test::kernel_record("triton_kernel", c, t + 1000, t + 2000));
  });
  pop();
  cpu_op("triton_op", 5, start, now_ns());
  end_window(start, now_ns());
  const Event* d = find(EventKind::CudaDriver, c);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->name, "cuLaunchKernel");
  EXPECT_EQ(d->external_id, 5u);
  EXPECT_EQ(find(EventKind::Kernel, c)->external_id, 5u);
  EXPECT_TRUE(all(EventKind::CudaRuntime).empty());
}

TEST_F(LeanTest, CallsAfterTheWindowStayForTheNext) {
  enable();
  const int64_t start = now_ns();
  backend_->begin_window(start);
  const uint32_t in = launch();
  const int64_t end = now_ns();
  while (now_ns() - end < 100000) {
  }
  const uint32_t late = launch();
  end_window(start, end);
  EXPECT_NE(find(EventKind::CudaRuntime, in), nullptr);
  EXPECT_EQ(find(EventKind::CudaRuntime, late), nullptr);
  trace_ = Trace();
  end_window(end, now_ns());
  EXPECT_NE(find(EventKind::CudaRuntime, late), nullptr);
}

TEST_F(LeanTest, WarmupCallsAreDroppedAtWindowStart) {
  enable();
  const uint32_t warm = launch();
  const int64_t start = now_ns();
  backend_->begin_window(start);
  const uint32_t in = launch();
  end_window(start, now_ns());
  EXPECT_EQ(find(EventKind::CudaRuntime, warm), nullptr);
  EXPECT_NE(find(EventKind::CudaRuntime, in), nullptr);
  EXPECT_EQ(all(EventKind::CudaRuntime).size(), 1u);
}

// What CUPTI's docs say may happen with no API records on: GPU records whose correlation ids
// match no call. The first window says so; API records of the launch calls (and only those)
// are turned on from the next.
TEST_F(LeanTest, TurnsOnLaunchApiRecordsWhenNoGpuRecordMatchesACall) {
  enable();
  const int64_t start = now_ns();
  backend_->begin_window(start);
  api_.callback_call(false, kLaunch, [&](uint32_t) {
    const uint64_t t = api_.now();
    api_.emit(test::kernel_record("_Z6kernelv", 0, t + 1000, t + 2000));
  });
  const int64_t ran = now_ns();
  while (now_ns() - ran < 100000) {  // the kernel inside the window
  }
  end_window(start, now_ns());
  EXPECT_TRUE(contains(warnings_, "API records of the launch calls are on from the next window"))
      << (warnings_.empty() ? "" : warnings_[0].message());
  EXPECT_EQ(api_.api_records_on.count({CUPTI_CB_DOMAIN_RUNTIME_API, kLaunch}), 1u);
  EXPECT_EQ(api_.api_records_on.count(
                {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020}),
            0u);
  EXPECT_EQ(trace_.metadata.at("ptprof_cuda_launch_api_records"), "true");

  // Their records (now carrying the ids) add nothing to the trace: the callbacks' events stay.
  trace_ = Trace();
  warnings_.clear();
  const int64_t start2 = now_ns();
  backend_->begin_window(start2);
  const uint32_t c = api_.callback_call(false, kLaunch, [&](uint32_t c) {
    const uint64_t t = api_.now();
    api_.emit(test::api_record(false, kLaunch, c, t, t + 100, test::cupti_thread_id()));
    api_.emit(test::kernel_record("_Z6kernelv", c, t + 1000, t + 2000));
  });
  end_window(start2, now_ns());
  EXPECT_TRUE(warnings_.empty()) << warnings_[0].message();
  EXPECT_EQ(all(EventKind::CudaRuntime).size(), 1u);
  EXPECT_TRUE(find(EventKind::Kernel, c)->flow_end);
  backend_->disable();
  EXPECT_TRUE(api_.api_records_on.empty());
}

// A node captured inside aten::mm under a "block" range, instantiated (CUPTI reports the copy
// as CLONED), then replayed by a graph launch inside another op: its kernel is aten::mm's.
TEST_F(LeanTest, GraphReplaysAreAttributedToTheOpThatCapturedTheNode) {
  enable();
  const int64_t start = now_ns();
  backend_->begin_window(start);
  const int64_t t0 = now_ns();
  push(7);  // "block"
  push(8);  // aten::mm
  api_.callback_call(false, kLaunch, [&](uint32_t) {
    api_.graph_node_event(CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, 500, 3);
  });
  pop();
  pop();
  api_.graph_node_event(CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED, 900, 4, /*original=*/500);
  push(20);  // CUDAGraph::replay
  uint32_t replays[2];
  for (uint32_t& r : replays) r = graph_launch(4, 900);
  pop();
  const int64_t t1 = now_ns();
  cpu_op("block", 7, t0, t0 + 10, EventKind::UserAnnotation);
  cpu_op("aten::mm", 8, t0 + 1, t0 + 9);
  cpu_op("CUDAGraph::replay", 20, t0 + 20, t1);
  end_window(start, now_ns());

  for (uint32_t r : replays) {
    const Event* launch_call = find(EventKind::CudaRuntime, r);
    ASSERT_NE(launch_call, nullptr);
    EXPECT_EQ(launch_call->name, "cudaGraphLaunch");
    EXPECT_EQ(launch_call->external_id, 20u);
    const Event* k = find(EventKind::Kernel, r);
    ASSERT_NE(k, nullptr);
    EXPECT_EQ(k->external_id, 8u);  // the capturing op's, for per-op device time
    EXPECT_TRUE(k->flow_end);       // still drawn from the launch that ran it
    const GraphNodeInfo* g = graph_node(k);
    ASSERT_NE(g, nullptr);
    EXPECT_EQ(g->graph_id, 4u);
    EXPECT_EQ(g->node_id, 900u);
    EXPECT_EQ(g->captured_by, "aten::mm");
    EXPECT_EQ(g->capture_ranges, (std::vector<std::string_view>{"block"}));
  }
  EXPECT_EQ(trace_.graph_nodes.size(), 1u);  // replays of one node share its entry
}

// Captured in one window, replayed in a later one whose trace lacks the capturing ops: the
// kernel stays with the launch's op (the only op of this trace it ran under) and keeps the
// capture's names.
TEST_F(LeanTest, AReplayInALaterWindowKeepsTheCapturesNames) {
  enable();
  int64_t start = now_ns();
  backend_->begin_window(start);
  push(8);
  api_.graph_node_event(CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, 501, 3);
  pop();
  cpu_op("aten::addmm", 8, start, now_ns());
  end_window(start, now_ns());
  api_.graph_node_event(CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED, 901, 4, 501);

  trace_ = Trace();
  start = now_ns();
  backend_->begin_window(start);
  push(30);
  const uint32_t r = graph_launch(4, 901);
  pop();
  cpu_op("CUDAGraph::replay", 30, start, now_ns());
  end_window(start, now_ns());
  const Event* k = find(EventKind::Kernel, r);
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->external_id, 30u);
  const GraphNodeInfo* g = graph_node(k);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->captured_by, "aten::addmm");
  EXPECT_TRUE(g->capture_ranges.empty());
}

TEST_F(LeanTest, ADestroyedNodeIsForgottenAfterTheNextWindow) {
  enable();
  push(8);
  api_.graph_node_event(CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, 502, 3);
  pop();
  EXPECT_EQ(GraphCaptures::get().size(), 1u);
  api_.graph_node_event(CUPTI_CBID_RESOURCE_GRAPHNODE_DESTROY_STARTING, 502, 3);
  EXPECT_EQ(GraphCaptures::get().size(), 1u);  // its last replays may still be in buffers
  const int64_t start = now_ns();
  backend_->begin_window(start);
  end_window(start, now_ns());
  EXPECT_EQ(GraphCaptures::get().size(), 0u);
}

// Lean mode's CUPTI timestamps are the recorder's ticks: mapped by the recorder's converter.
TEST(LeanClock, TicksMapOntoTheRecordersClock) {
  calibrate_clock();
  const GpuClock clock = GpuClock::from_ticks(TickConverter::current());
  EXPECT_TRUE(clock.is_ours());
  EXPECT_FALSE(clock.is_identity());
  const int64_t a = now_ns();
  const int64_t t0 = now_ticks();
  while (now_ns() - a < 2000000) {
  }
  const int64_t t1 = now_ticks();
  const int64_t b = now_ns();
  EXPECT_GE(clock.to_cpu(static_cast<uint64_t>(t0)), a - 1000);
  EXPECT_LE(clock.to_cpu(static_cast<uint64_t>(t1)), b + 1000);
  const int64_t d = clock.duration_to_cpu(static_cast<uint64_t>(t1 - t0));
  EXPECT_GE(d, 2000000 - 1000);
  EXPECT_LE(d, b - a + 1000);
}

// The call log: per-thread chunks from a pool filled ahead, read up to a time.
TEST(CallLog, AppendsWithoutAllocatingAndReadsUpToATime) {
  CallLog& log = CallLog::get();
  log.discard();
  log.reserve(log.allocated_chunks() + 2, log.allocated_chunks() + 2);
  const std::size_t allocated = log.allocated_chunks();
  constexpr int kCalls = CallLog::kChunkCalls + 100;  // spans two chunks
  for (int i = 0; i < kCalls; ++i) {
    HostCall c;
    c.start = 1000 + i;
    c.end = 1000 + i;
    c.correlation = static_cast<uint32_t>(i);
    log.append(c);
  }
  EXPECT_EQ(log.allocated_chunks(), allocated);
  EXPECT_EQ(log.take_dropped(), 0u);
  std::vector<uint32_t> seen;
  log.read(1000 + 10, [&](int64_t tid, const HostCall& c) {
    EXPECT_EQ(tid, os_tid());
    seen.push_back(c.correlation);
  });
  EXPECT_EQ(seen, (std::vector<uint32_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
  seen.clear();
  log.read(INT64_MAX, [&](int64_t, const HostCall& c) { seen.push_back(c.correlation); });
  ASSERT_EQ(seen.size(), static_cast<std::size_t>(kCalls - 11));
  EXPECT_EQ(seen.front(), 11u);
  EXPECT_EQ(seen.back(), static_cast<uint32_t>(kCalls - 1));
  EXPECT_EQ(log.allocated_chunks(), allocated);
}

TEST(CallLog, CountsCallsPastTheCapAsDropped) {
  CallLog& log = CallLog::get();
  log.discard();
  log.reserve(0, log.allocated_chunks());  // no chunk beyond those that exist
  const std::size_t chunks = log.allocated_chunks();
  const uint64_t room = (chunks + 1) * CallLog::kChunkCalls;  // + the one this thread holds
  for (uint64_t i = 0; i < room + 5; ++i) log.append(HostCall{});
  EXPECT_GE(log.take_dropped(), 5u);
  EXPECT_EQ(log.allocated_chunks(), chunks);
  log.discard();
  EXPECT_EQ(log.take_dropped(), 0u);
}

TEST(CallLog, ReadsAThreadThatEnded) {
  CallLog& log = CallLog::get();
  log.discard();
  log.reserve(log.allocated_chunks() + 1, log.allocated_chunks() + 4);
  int64_t tid = 0;
  std::thread t([&] {
    tid = os_tid();
    HostCall c;
    c.start = 5;
    c.correlation = 77;
    c.op = 9;
    log.append(c);
  });
  t.join();
  std::vector<std::pair<int64_t, uint64_t>> seen;
  log.read(INT64_MAX, [&](int64_t t, const HostCall& c) {
    if (c.correlation == 77) seen.emplace_back(t, c.op);
  });
  EXPECT_EQ(seen, (std::vector<std::pair<int64_t, uint64_t>>{{tid, 9}}));
}

}  // namespace
}  // namespace ptprof::detail
