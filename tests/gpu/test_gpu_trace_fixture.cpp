// Writes a synthetic GPU trace in ptprof's layout (three ProfilerStep#N windows of CPU ops, their
// runtime calls, kernels, copies and memsets, decoded and correlated by the real decoder and
// correlator) for the consumer check: tests/gpu/check_gpu_consumers.sh loads it into
// TensorBoard's plugin and HTA. Runs only when PTPROF_GPU_FIXTURE_DIR names where to write.
#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "trace/clock.h"
#include "cupti_test_util.h"
#include "gpu/cupti_correlator.h"
#include "gpu/cupti_decode.h"
#include "ptprof/trace_handler.h"

namespace ptprof::detail {
namespace {

TEST(GpuTraceFixture, WritesATraceForTheConsumerCheck) {
  const char* dir = std::getenv("PTPROF_GPU_FIXTURE_DIR");
  if (dir == nullptr || *dir == '\0') GTEST_SKIP() << "PTPROF_GPU_FIXTURE_DIR not set";
  Trace t;
  const int64_t offset = measure_unix_offset_ns();
  const int64_t start = now_ns();
  const int64_t pid = ::getpid();
  const int64_t tid = static_cast<int64_t>(::syscall(SYS_gettid));
  const uint32_t cupti_thread = 0xA1;
  auto at = [&](int64_t us) { return static_cast<uint64_t>(start + us * 1000); };
  t.pid = pid;
  t.process_name = "gpu_fixture";
  t.worker_name = "gpu_fixture";
  t.window_start_ns = start + offset;
  t.window_end_ns = start + 3100 * 1000 + offset;
  t.steps = {1, 2, 3};
  t.threads.push_back(ThreadInfo{tid, 1, "main"});
  t.devices.push_back(test::h100(0).props);
  t.metadata["cupti_version"] = "130001";
  t.metadata["cuda_runtime_version"] = "13000";
  t.metadata["cuda_driver_version"] = "13010";
  uint64_t next_id = 1;
  auto op = [&](const char* name, int64_t s, int64_t e, EventKind k = EventKind::CpuOp) {
    Event ev;
    ev.kind = k;
    ev.name = t.intern(name);
    ev.start_ns = start + s * 1000 + offset;
    ev.duration_ns = (e - s) * 1000;
    ev.pid = pid;
    ev.tid = tid;
    ev.external_id = next_id++;
    t.events.push_back(ev);
    return ev.external_id;
  };

  ActivityDecoder dec(t, {test::h100(0)}, [](CUpti_CallbackDomain d, uint32_t c) {
    return real_cupti_api().callback_name(d, c);
  });
  Correlator cor;
  auto feed = [&](const auto& r) { test::feed(dec, cor, r); };
  uint32_t corr = 1;
  auto call = [&](uint64_t op_id, CUpti_CallbackId cbid, int64_t s_us) {
    feed(test::ext_record(corr, op_id));
    feed(test::api_record(false, cbid, corr, at(s_us), at(s_us + 6), cupti_thread,
                          static_cast<uint32_t>(pid)));
    return corr++;
  };
  for (int step = 0; step < 3; ++step) {
    const int64_t b = 100 + step * 1000;
    const std::string name = "ProfilerStep#" + std::to_string(step + 1);
    op(name.c_str(), b, b + 900, EventKind::UserAnnotation);
    const uint64_t copy = op("aten::copy_", b + 10, b + 60);
    uint32_t c = call(copy, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, b + 20);
    feed(test::memcpy_record(CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, CUPTI_ACTIVITY_MEMORY_KIND_PINNED,
                             CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 1 << 20, c, at(b + 30),
                             at(b + 80)));
    op("forward", b + 90, b + 410, EventKind::UserAnnotation);
    op("aten::linear", b + 100, b + 300);
    const uint64_t addmm = op("aten::addmm", b + 110, b + 290);
    c = call(addmm, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, b + 120);
    feed(test::kernel_record("_ZN7cutlass6KernelINS_4gemmEEEvT_", c, at(b + 130), at(b + 330)));
    const uint64_t relu = op("aten::relu", b + 320, b + 400);
    c = call(relu, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, b + 330);
    feed(test::kernel_record("_Z11relu_kernelPfi", c, at(b + 340), at(b + 360)));
    const uint64_t zero = op("aten::zero_", b + 420, b + 470);
    c = call(zero, CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020, b + 430);
    feed(test::memset_record(4096, c, at(b + 440), at(b + 445)));
  }
  CorrelationWindow w;
  w.start_ns = start;
  w.end_ns = start + 3100 * 1000;
  w.unix_offset_ns = offset;
  const CorrelationStats st = cor.finish(w, {{cupti_thread, tid}}, t);
  ASSERT_EQ(st.kernels, 6u);
  ASSERT_EQ(st.gpu_with_op, 12u);
  t.rebuild_tree();
  tensorboard_trace_handler(dir, "gpu_fixture")->handle(t);
}

}  // namespace
}  // namespace ptprof::detail
