// The op-cost calibration (cost_calibration.h): one real ATen op timed with profiling on and off.
#include "recording/cost_calibration.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <optional>

#include <ATen/ATen.h>
#include <ATen/record_function.h>
#include <c10/util/ThreadLocalDebugInfo.h>
#include <torch/csrc/profiler/orchestration/observer.h>

#include "trace/clock.h"

namespace ptprof::detail {

namespace {

// Shadows the thread's memory reporter (profile_memory's, recorder.cpp) while the
// unprofiled rounds run: c10's allocators then report to nobody, as without a profiler.
// libtorch static_casts that slot to ProfilerStateBase, so this must be one.
class NoMemoryReports final : public torch::profiler::impl::ProfilerStateBase {
 public:
  NoMemoryReports()
      : ProfilerStateBase(torch::profiler::impl::ProfilerConfig(
            torch::profiler::impl::ProfilerState::Disabled, false, /*profile_memory=*/false)) {}
  void reportMemoryUsage(void*, int64_t, std::size_t, std::size_t, c10::Device) override {}
  bool memoryProfilingEnabled() const override { return false; }
  torch::profiler::impl::ActiveProfilerType profilerType() override {
    return torch::profiler::impl::ActiveProfilerType::NONE;
  }
};

// One round: `n` ops with profiling on or off for this thread; its wall time in ns.
int64_t round_ns(bool profiled, int n, const at::Tensor& a, const at::Tensor& b) {
  std::optional<at::RecordFunctionGuard> off;
  std::optional<c10::DebugInfoGuard> no_memory;
  if (!profiled) {
    off.emplace(false);
    no_memory.emplace(c10::DebugInfoKind::PROFILER_STATE, std::make_shared<NoMemoryReports>());
  }
  const int64_t start = now_ns();
  for (int i = 0; i < n; ++i) {
    at::Tensor c = at::add(a, b);
    (void)c;
  }
  return now_ns() - start;
}

}  // namespace

ProfilerCost calibrate_op_cost(const CalibrationOptions& options) {
  const int n = std::max(1, options.ops_per_round);
  const at::Tensor a = at::ones({1});
  const at::Tensor b = at::ones({1});
  // Untimed first: the thread's buffer, the op's interned name and the stack unwinder's rule
  // caches are set up once, not per op.
  round_ns(true, 16, a, b);
  round_ns(false, 16, a, b);
  int64_t on = std::numeric_limits<int64_t>::max();
  int64_t off = std::numeric_limits<int64_t>::max();
  // Interleaved, the fastest of each: a round the scheduler interrupted only raises its own
  // time, and a slow phase of the machine hits both modes alike.
  for (int r = 0; r < std::max(1, options.rounds); ++r) {
    on = std::min(on, round_ns(true, n, a, b));
    off = std::min(off, round_ns(false, n, a, b));
  }
  ProfilerCost cost;
  cost.op_ns = std::max<double>(0, static_cast<double>(on - off) / n);
  cost.op_ns_unprofiled = static_cast<double>(off) / n;
  cost.calibration_ops = static_cast<int64_t>(n) * std::max(1, options.rounds);
  return cost;
}

}  // namespace ptprof::detail
