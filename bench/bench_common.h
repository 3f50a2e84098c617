// bench_common.h: what ptprof's benchmarks share: the thread-CPU clock they time with, the
// floors every RecordFunction observer or memory reporter pays, and the median.
#pragma once

#include <time.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <ATen/record_function.h>
#include <torch/csrc/profiler/api.h>

namespace ptprof::bench {

// Loops are timed in this thread's CPU time: on a shared VM, wall time also counts the time
// the hypervisor gave our vCPU to someone else (steal), which varies run to run.
inline int64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

// The memory floor: a reporter that asks c10 for every allocation and free and does nothing
// with them. Once any reporter says memoryProfilingEnabled(), c10's CPU allocator does its own
// bookkeeping (a mutex and a pointer-to-size map per allocation and free) that every memory
// profiler pays, ptprof and libtorch's alike. Must be a ProfilerStateBase: libtorch casts the
// slot to one.
class EmptyReporter final : public torch::profiler::impl::ProfilerStateBase {
 public:
  EmptyReporter()
      : ProfilerStateBase(torch::profiler::impl::ProfilerConfig(
            torch::profiler::impl::ProfilerState::Disabled, false, /*profile_memory=*/true)) {}
  void reportMemoryUsage(void*, int64_t, std::size_t, std::size_t, c10::Device) override {}
  bool memoryProfilingEnabled() const override { return true; }
  torch::profiler::impl::ActiveProfilerType profilerType() override {
    return torch::profiler::impl::ActiveProfilerType::NONE;
  }
};

inline std::unique_ptr<at::ObserverContext> empty_start(const at::RecordFunction&) {
  return nullptr;
}
inline void empty_end(const at::RecordFunction&, at::ObserverContext*) {}

// A configuration: set up an observer, run the work, tear it down.
struct Config {
  std::string name;
  std::function<void()> setup;
  std::function<void()> teardown;
};

inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

inline double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t i = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

}  // namespace ptprof::bench
