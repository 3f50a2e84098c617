// The CUPTI backend driven through the GpuBackend seam over a fake CUPTI.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <torch/csrc/autograd/profiler_kineto.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include "trace/clock.h"
#include "backend_fixture.h"
#include "cupti_test_util.h"
#include "gpu/cupti_backend.h"

namespace ptprof::detail {
namespace {

constexpr CUpti_CallbackId kLaunch = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
constexpr int64_t kUnixOffset = test::kBackendUnixOffset;
using test::os_tid;

bool contains(const std::vector<Status>& v, const std::string& needle) {
  return std::any_of(v.begin(), v.end(), [&](const Status& s) {
    return s.message().find(needle) != std::string::npos;
  });
}

// The message of an enable() that must fail as kUnavailable.
std::string refused_enable(GpuBackend& backend) {
  const Status st = backend.enable();
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kUnavailable);
  return st.message();
}

// Classic mode's lifecycle and joins (lean mode's are in test_cupti_lean.cpp).
class BackendTest : public test::BackendFixture {
 protected:
  BackendTest() { options_.tracing = CudaTracing::Classic; }
  // One launch: runtime call now, its kernel `delay_ns` later. Returns the correlation id.
  uint32_t launch(int64_t delay_ns = 20000, uint32_t stream = 7) {
    const uint64_t t = api_.now();
    const uint32_t c = api_.api_call(false, kLaunch, t, t + 3000);
    api_.emit(test::kernel_record("_Z6kernelv", c, t + delay_ns, t + delay_ns + 5000, 0, stream));
    return c;
  }
};

TEST_F(BackendTest, NamesAMissingDriver) {
  api_.driver_problem_text = "no NVIDIA driver: libcuda.so.1 cannot be loaded (not found)";
  make();
  EXPECT_EQ(backend_->unavailable_reason(), api_.driver_problem_text);
  std::string err;
  err = refused_enable(*backend_);
  EXPECT_EQ(err, api_.driver_problem_text);
  EXPECT_TRUE(api_.enabled.empty());
  EXPECT_EQ(api_.request, nullptr);
}

TEST_F(BackendTest, NamesAFailingCuptiGetVersion) {
  api_.version_result = CUPTI_ERROR_NOT_INITIALIZED;
  make();
  EXPECT_NE(backend_->unavailable_reason().find("cuptiGetVersion failed"), std::string::npos);
}

TEST_F(BackendTest, NamesAMissingGpu) {
  api_.devices = 0;
  make();
  EXPECT_EQ(backend_->unavailable_reason(), "no CUDA GPU: cudaGetDeviceCount found 0 devices");
  test::FakeCuptiApi no_device;
  no_device.device_count_result = cudaErrorNoDevice;
  EXPECT_EQ(make_cupti_backend(options_, no_device)->unavailable_reason().rfind("no CUDA GPU", 0),
            0u);
  test::FakeCuptiApi old_driver;
  old_driver.device_count_result = cudaErrorInsufficientDriver;
  EXPECT_NE(make_cupti_backend(options_, old_driver)
                ->unavailable_reason()
                .find("cudaGetDeviceCount failed: cudaError_35"),
            std::string::npos);
}

TEST(RealCuptiApiTest, NamesTheMissingDriverOnThisMachine) {
  void* h = ::dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (h != nullptr) {
    ::dlclose(h);
    GTEST_SKIP() << "this machine has a CUDA driver";
  }
  auto backend = make_gpu_backend(GpuOptions{});
  const std::string reason = backend->unavailable_reason();
  EXPECT_NE(reason.find("no NVIDIA driver"), std::string::npos) << reason;
  EXPECT_NE(reason.find("libcuda.so.1"), std::string::npos) << reason;
  std::string err;
  err = refused_enable(*backend);
  EXPECT_EQ(err, reason);
}

TEST(RealCuptiApiTest, CallbackNamesNeedNoGpu) {
  EXPECT_STREQ(real_cupti_api().callback_name(CUPTI_CB_DOMAIN_RUNTIME_API, kLaunch),
               "cudaLaunchKernel_v7000");
  uint32_t v = 0;
  EXPECT_EQ(real_cupti_api().get_version(&v), CUPTI_SUCCESS);
  EXPECT_GE(v, 130000u);
}

TEST(RealCuptiApiTest, SeesLibtorchsOwnProfiler) {
  using torch::profiler::impl::ActivityType;
  using torch::profiler::impl::ProfilerConfig;
  using torch::profiler::impl::ProfilerState;
  EXPECT_FALSE(real_cupti_api().torch_profiler_active());
  const ProfilerConfig config(ProfilerState::KINETO);
  torch::autograd::profiler::prepareProfiler(config, {ActivityType::CPU});
  torch::autograd::profiler::enableProfiler(config, {ActivityType::CPU});
  EXPECT_TRUE(real_cupti_api().torch_profiler_active());
  torch::autograd::profiler::disableProfiler();
  EXPECT_FALSE(real_cupti_api().torch_profiler_active());
}

TEST_F(BackendTest, RefusesWhileLibtorchsProfilerRuns) {
  api_.torch_active = true;
  make();
  EXPECT_EQ(backend_->unavailable_reason(), "");
  std::string err;
  err = refused_enable(*backend_);
  EXPECT_NE(err.find("libtorch's own profiler"), std::string::npos) << err;
  EXPECT_TRUE(api_.enabled.empty());
  EXPECT_EQ(api_.request, nullptr);  // its buffer callbacks are left alone
}

TEST_F(BackendTest, RefusesWhenAnotherSubscriberHoldsCupti) {
  api_.subscribe_result = CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  api_.subscriber_holder = "CUPTI for Nsight Systems";
  make();
  std::string err;
  err = refused_enable(*backend_);
  EXPECT_NE(err.find("already in use by another profiler (CUPTI for Nsight Systems)"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("MULTIPLE_SUBSCRIBERS"), std::string::npos);
  EXPECT_TRUE(api_.enabled.empty());

  test::FakeCuptiApi anonymous;
  anonymous.subscribe_result = CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  auto b = make_cupti_backend(options_, anonymous);
  err = refused_enable(*b);
  EXPECT_NE(err.find("libtorch's own profiler if it ran earlier"), std::string::npos) << err;
  EXPECT_NE(err.find("TEARDOWN_CUPTI=1"), std::string::npos) << err;

  // CUPTI's own name for a holder that gave none (as Kineto's subscriber does).
  test::FakeCuptiApi unnamed;
  unnamed.subscribe_result = CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  unnamed.subscriber_holder = "CUPTI for <not provided>";
  auto c = make_cupti_backend(options_, unnamed);
  err = refused_enable(*c);
  EXPECT_NE(err.find("TEARDOWN_CUPTI=1"), std::string::npos) << err;
  EXPECT_EQ(err.find("<not provided>"), std::string::npos) << err;
}

TEST_F(BackendTest, EnableRegistersTimestampsFirstAndTheKinds) {
  enable();
  EXPECT_NE(api_.timestamp, nullptr);
  EXPECT_EQ(api_.timestamp() / 1000000, static_cast<uint64_t>(now_ns()) / 1000000);
  EXPECT_NE(api_.request, nullptr);
  EXPECT_NE(api_.complete, nullptr);
  for (CUpti_ActivityKind k :
       {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
        CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER,
        CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
        CUPTI_ACTIVITY_KIND_OVERHEAD}) {
    EXPECT_EQ(api_.enabled.count(k), 1u) << k;
  }
  EXPECT_EQ(api_.enabled.count(CUPTI_ACTIVITY_KIND_KERNEL), 0u);  // it serializes kernels
  ASSERT_NE(backend_->push_hook(), nullptr);
  ASSERT_NE(backend_->pop_hook(), nullptr);
  backend_->disable();
  EXPECT_TRUE(api_.enabled.empty());
}

TEST_F(BackendTest, RequiredKindFailureFailsEnable) {
  api_.failing_kinds = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL};
  make();
  std::string err;
  err = refused_enable(*backend_);
  EXPECT_NE(err.find("CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL"), std::string::npos) << err;
  EXPECT_TRUE(api_.enabled.empty());  // what was enabled is turned off again
}

TEST_F(BackendTest, OptionalKindFailureIsAWarning) {
  api_.failing_kinds = {CUPTI_ACTIVITY_KIND_SYNCHRONIZATION};
  enable();
  const int64_t start = now_ns();
  backend_->begin_window(start);
  end_window(start, now_ns());
  EXPECT_TRUE(contains(warnings_, "SYNCHRONIZATION could not be enabled")) << warnings_.size();
}

TEST_F(BackendTest, HooksPushAndPopOurCorrelationIds) {
  enable();
  backend_->push_hook()(41);
  backend_->push_hook()(42);
  EXPECT_EQ(api_.stack, (std::vector<uint64_t>{41, 42}));
  backend_->pop_hook()(0);
  EXPECT_EQ(api_.stack, (std::vector<uint64_t>{41}));
  const CorrelationHook push = backend_->push_hook();
  backend_.reset();
  push(43);  // a hook still in flight after the backend is gone does nothing
  EXPECT_EQ(api_.stack, (std::vector<uint64_t>{41}));
}

TEST_F(BackendTest, PushHookRegistersTheThreadsCuptiId) {
  enable();
  uint32_t cupti_id = 0;
  int64_t tid = 0;
  std::thread t([&] {
    backend_->push_hook()(1);
    backend_->pop_hook()(0);
    cupti_id = test::cupti_thread_id();
    tid = os_tid();
  });
  t.join();
  const auto ids = cupti_thread_ids();
  ASSERT_EQ(ids.count(cupti_id), 1u);
  EXPECT_EQ(ids.at(cupti_id), tid);
}

TEST_F(BackendTest, WindowJoinsKernelsToTheInnermostOp) {
  enable();
  const int64_t start = now_ns();
  backend_->begin_window(start);
  const int64_t t0 = now_ns();
  backend_->push_hook()(1001);  // aten::linear
  backend_->push_hook()(1002);  // aten::addmm inside it
  const uint32_t inner = launch();
  backend_->pop_hook()(0);
  const uint32_t outer = launch();
  backend_->pop_hook()(0);
  const uint32_t none = launch();  // outside any op
  const int64_t t1 = now_ns();
  const int64_t end = now_ns();
  cpu_op("aten::linear", 1001, t0, t1);
  cpu_op("aten::addmm", 1002, t0 + 1, t1 - 1);
  end_window(start, end);

  EXPECT_TRUE(warnings_.empty()) << warnings_[0].message();
  EXPECT_GE(api_.flushes, 2);  // FlushAll(0), then forced
  EXPECT_GE(api_.synchronizes, 1);
  ASSERT_EQ(all(EventKind::Kernel).size(), 3u);
  ASSERT_EQ(all(EventKind::CudaRuntime).size(), 3u);
  EXPECT_EQ(find(EventKind::Kernel, inner)->external_id, 1002u);
  EXPECT_EQ(find(EventKind::CudaRuntime, inner)->external_id, 1002u);
  EXPECT_EQ(find(EventKind::Kernel, outer)->external_id, 1001u);
  EXPECT_EQ(find(EventKind::Kernel, none)->external_id, 0u);
  for (uint32_t c : {inner, outer, none}) {
    const Event* rt = find(EventKind::CudaRuntime, c);
    const Event* k = find(EventKind::Kernel, c);
    EXPECT_EQ(rt->name, "cudaLaunchKernel");
    EXPECT_EQ(rt->pid, ::getpid());
    EXPECT_EQ(rt->tid, os_tid());
    EXPECT_TRUE(rt->flow_start);
    EXPECT_TRUE(k->flow_end);
    EXPECT_GE(k->start_ns, rt->start_ns);
    EXPECT_GE(rt->start_ns, start + kUnixOffset);
    EXPECT_LE(rt->start_ns, end + kUnixOffset);
    EXPECT_FLOAT_EQ(k->kernel.blocks_per_sm, 4.0f);  // the fake's H100: 132 SMs
    EXPECT_EQ(k->kernel.occupancy_pct, 50);
  }
  ASSERT_EQ(trace_.devices.size(), 1u);
  EXPECT_EQ(trace_.devices[0].name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(trace_.devices[0].num_sms, 132);
  EXPECT_EQ(trace_.metadata.at("cupti_version"), "130001");
  EXPECT_EQ(trace_.metadata.at("cuda_runtime_version"), "13000");
  EXPECT_EQ(trace_.metadata.at("cuda_driver_version"), "13010");
  EXPECT_EQ(trace_.metadata.at("ptprof_gpu_clock"), "\"cupti_timestamp_callback\"");
  EXPECT_EQ(trace_.metadata.count("ptprof_gpu_dropped_records"), 0u);
}

TEST_F(BackendTest, WarmupAndLateRecordsStayOutOfTheWindow) {
  enable();
  const uint32_t warm = launch();
  api_.flush_all(0);                    // a buffer completed during warmup
  const uint32_t warm_late = launch();  // warmup records still in CUPTI's open buffer
  const int64_t start = now_ns();
  backend_->begin_window(start);
  const uint32_t in = launch();
  const int64_t end = now_ns();
  const uint32_t after = launch();  // after the window closed, flushed with it
  end_window(start, end);
  EXPECT_EQ(find(EventKind::Kernel, warm), nullptr);
  EXPECT_EQ(find(EventKind::Kernel, warm_late), nullptr);
  EXPECT_EQ(find(EventKind::CudaRuntime, warm_late), nullptr);
  EXPECT_NE(find(EventKind::Kernel, in), nullptr);
  EXPECT_EQ(find(EventKind::Kernel, after), nullptr);
  EXPECT_EQ(find(EventKind::CudaRuntime, after), nullptr);

  // The next window sees only its own.
  Trace second;
  const int64_t start2 = now_ns();
  backend_->begin_window(start2);
  const uint32_t in2 = launch();
  backend_->end_window(start2, now_ns(), kUnixOffset, second, &warnings_);
  ASSERT_EQ(second.events.size(), 2u);
  for (const Event& e : second.events) EXPECT_EQ(e.correlation, in2);
}

TEST_F(BackendTest, DroppedRecordsAreCountedAndReported) {
  options_.buffer_size_bytes = 1024;
  options_.max_buffer_bytes = 2048;  // two buffers
  enable();
  const int64_t start = now_ns();
  backend_->begin_window(start);
  const int kCalls = 100;
  for (int i = 0; i < kCalls; ++i) {
    const uint64_t t = api_.now();
    api_.api_call(false, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, t, t + 10);
  }
  const uint64_t dropped = api_.dropped;
  ASSERT_GT(dropped, 0u);
  end_window(start, now_ns());
  const std::size_t kept = all(EventKind::CudaRuntime).size();
  EXPECT_EQ(kept + dropped, static_cast<std::size_t>(kCalls));
  EXPECT_EQ(trace_.metadata.at("ptprof_gpu_dropped_records"), std::to_string(dropped));
  EXPECT_EQ(trace_.metadata.at("ptprof_gpu_buffers_refused"), std::to_string(dropped));
  EXPECT_TRUE(contains(warnings_, std::to_string(dropped) + " records dropped"));
  EXPECT_TRUE(contains(warnings_, "cap of 2048 bytes of CUPTI buffers"));

  // The buffers came back to the pool: the next window has room again.
  Trace next;
  std::vector<Status> w2;
  const int64_t s2 = now_ns();
  backend_->begin_window(s2);
  for (int i = 0; i < 10; ++i) {
    const uint64_t t = api_.now();
    api_.api_call(false, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, t, t + 10);
  }
  backend_->end_window(s2, now_ns(), kUnixOffset, next, &w2);
  EXPECT_EQ(next.events.size(), 10u);
  EXPECT_TRUE(w2.empty());
}

TEST_F(BackendTest, OldCuptiGetsOverflowBuffersInsteadOfRefusals) {
  api_.version = 26;  // rejecting a buffer can crash CUPTI before API version 27
  options_.buffer_size_bytes = 1024;
  options_.max_buffer_bytes = 1024;
  enable();
  const int64_t start = now_ns();
  backend_->begin_window(start);
  const int kCalls = 60;
  for (int i = 0; i < kCalls; ++i) {
    const uint64_t t = api_.now();
    api_.api_call(false, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, t, t + 10);
  }
  EXPECT_EQ(api_.dropped, 0u);  // CUPTI always got a buffer
  end_window(start, now_ns());
  const std::size_t kept = all(EventKind::CudaRuntime).size();
  ASSERT_LT(kept, static_cast<std::size_t>(kCalls));
  EXPECT_EQ(trace_.metadata.at("ptprof_gpu_dropped_records"), std::to_string(kCalls - kept));
  EXPECT_EQ(trace_.metadata.at("ptprof_gpu_buffers_refused"), "0");
}

TEST_F(BackendTest, CompletionOnCuptisOwnThreadDuringFlush) {
  // bufferCompleted runs on another thread while FlushAll blocks: a pool lock held across
  // FlushAll would deadlock here (ctest's timeout would catch it).
  api_.complete_on_other_thread = true;
  enable();
  const int64_t start = now_ns();
  backend_->begin_window(start);
  const uint32_t c = launch();
  end_window(start, now_ns());
  EXPECT_NE(find(EventKind::Kernel, c), nullptr);
}

TEST_F(BackendTest, MeasuredOffsetWhenTheTimestampCallbackIsRefused) {
  api_.timestamp_callback_result = CUPTI_ERROR_NOT_SUPPORTED;
  api_.cupti_clock_offset_ns = 3000000000;  // CUPTI's clock 3 s ahead of ours
  enable();
  const int64_t start = now_ns();
  backend_->begin_window(start);
  const uint32_t c = launch();
  const int64_t end = now_ns();
  end_window(start, end);
  EXPECT_TRUE(contains(warnings_, "refused ptprof's timestamp callback"));
  EXPECT_EQ(trace_.metadata.at("ptprof_gpu_clock"), "\"measured_offset\"");
  const Event* rt = find(EventKind::CudaRuntime, c);
  const Event* k = find(EventKind::Kernel, c);
  ASSERT_TRUE(rt && k);
  // Within the pairs' measurement error of where they happened on our clock.
  EXPECT_GE(rt->start_ns, start + kUnixOffset - 100000);
  EXPECT_LE(rt->start_ns, end + kUnixOffset + 100000);
  EXPECT_GE(k->start_ns, rt->start_ns);
}

TEST_F(BackendTest, DetectsATimestampCallbackReplacedByAnotherProfiler) {
  api_.timestamp_callback_replaced = true;
  api_.cupti_clock_offset_ns = -2000000000;
  enable();
  const int64_t start = now_ns();
  backend_->begin_window(start);
  const uint32_t c = launch();
  const int64_t end = now_ns();
  end_window(start, end);
  EXPECT_TRUE(contains(warnings_, "not on ptprof's clock"));
  const Event* rt = find(EventKind::CudaRuntime, c);
  ASSERT_NE(rt, nullptr);
  EXPECT_GE(rt->start_ns, start + kUnixOffset - 100000);
  EXPECT_LE(rt->start_ns, end + kUnixOffset + 100000);
}

TEST_F(BackendTest, WarnsWhenLibtorchsProfilerStartsMidWindow) {
  enable();
  const int64_t start = now_ns();
  backend_->begin_window(start);
  api_.torch_active = true;
  end_window(start, now_ns());
  EXPECT_TRUE(contains(warnings_, "became active during the window"));
}

TEST_F(BackendTest, GpuUserAnnotationsFromTheWindowsRanges) {
  enable();
  const int64_t start = now_ns();
  backend_->begin_window(start);
  const int64_t t0 = now_ns();
  backend_->push_hook()(7);  // the "forward" range
  backend_->push_hook()(8);  // an op in it
  const uint32_t a = launch(20000, 7);
  const uint32_t b = launch(40000, 13);
  backend_->pop_hook()(0);
  backend_->pop_hook()(0);
  const int64_t t1 = now_ns();
  cpu_op("forward", 7, t0, t1, EventKind::UserAnnotation);
  cpu_op("aten::mul", 8, t0 + 1, t1 - 1);
  end_window(start, now_ns());
  const auto spans = all(EventKind::GpuUserAnnotation);
  ASSERT_EQ(spans.size(), 2u);
  for (const Event* s : spans) {
    EXPECT_EQ(s->name, "forward");
    EXPECT_EQ(s->external_id, 7u);
    const Event* k = find(EventKind::Kernel, s->stream == 7 ? a : b);
    ASSERT_NE(k, nullptr);
    EXPECT_EQ(s->start_ns, k->start_ns - 1);
    EXPECT_EQ(s->duration_ns, k->duration_ns + 2);
  }
}

// ptprof's own cost per launch (issue 28 section 4): launches timed before CUPTI is on and
// after, once per backend.
TEST_F(BackendTest, MeasuresWhatTracingAddsPerLaunch) {
  api_.launch_ns_untraced = 1500;
  api_.launch_ns_traced = 3700;
  make();
  EXPECT_FALSE(backend_->launch_cost_ns().has_value());
  enable();
  ASSERT_TRUE(backend_->launch_cost_ns().has_value());
  EXPECT_DOUBLE_EQ(*backend_->launch_cost_ns(), 2200);
  // Not again at the next window's enable: the probe's launches would land in its warmup for
  // nothing, and the first measure stands.
  const int probes = api_.launch_probes;
  backend_->disable();
  ASSERT_TRUE(backend_->enable().ok());
  EXPECT_EQ(api_.launch_probes, probes);
  EXPECT_DOUBLE_EQ(*backend_->launch_cost_ns(), 2200);
}

TEST_F(BackendTest, NoLaunchCostWhereTheProbeFails) {
  api_.launch_ns_traced = -1;  // a CUDA call fails once CUPTI is on
  enable();
  EXPECT_FALSE(backend_->launch_cost_ns().has_value());
  api_.launch_ns_untraced = -1;
  api_.launch_ns_traced = 3000;
  enable();
  EXPECT_FALSE(backend_->launch_cost_ns().has_value());
}

TEST_F(BackendTest, TracingThatCostsNothingIsZeroNotNegative) {
  api_.launch_ns_untraced = 2000;
  api_.launch_ns_traced = 1900;
  enable();
  ASSERT_TRUE(backend_->launch_cost_ns().has_value());
  EXPECT_DOUBLE_EQ(*backend_->launch_cost_ns(), 0);
}

}  // namespace
}  // namespace ptprof::detail
