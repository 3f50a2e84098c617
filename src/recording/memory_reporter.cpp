#include "recording/memory_reporter.h"

#include <atomic>
#include <memory>

#include <c10/util/ThreadLocalDebugInfo.h>
#include <torch/csrc/profiler/orchestration/observer.h>

namespace ptprof::detail {

namespace {

std::atomic<bool> g_reporting{false};

// Sits in the PROFILER_STATE slot of c10's thread-local debug info, where c10's allocators
// report every allocation and free. libtorch static_casts that slot to ProfilerStateBase, so
// this must be one; with ProfilerState::Disabled, profilerEnabled() stays false.
class MemoryReporter final : public torch::profiler::impl::ProfilerStateBase {
 public:
  MemoryReporter()
      : ProfilerStateBase(torch::profiler::impl::ProfilerConfig(
            torch::profiler::impl::ProfilerState::Disabled, false, /*profile_memory=*/true)) {}
  void reportMemoryUsage(void* ptr, int64_t alloc_size, std::size_t total_allocated,
                         std::size_t total_reserved, c10::Device device) override {
    record_memory(ptr, alloc_size, total_allocated, total_reserved, device);
  }
  // Inert outside profile_memory sessions, even where it is left in a thread's slot.
  bool memoryProfilingEnabled() const override {
    return g_reporting.load(std::memory_order_relaxed);
  }
  torch::profiler::impl::ActiveProfilerType profilerType() override {
    return torch::profiler::impl::ActiveProfilerType::NONE;
  }
};

const std::shared_ptr<MemoryReporter>& memory_reporter() {
  // Leaked: c10 may hold the raw pointer in thread-local slots up to thread exit.
  static auto* r = new std::shared_ptr<MemoryReporter>(std::make_shared<MemoryReporter>());
  return *r;
}

}  // namespace

void set_memory_reporting(bool on) {
  g_reporting.store(on, std::memory_order_relaxed);
}

bool ensure_memory_reporter() {
  auto* current = c10::ThreadLocalDebugInfo::get(c10::DebugInfoKind::PROFILER_STATE);
  if (current == memory_reporter().get()) return true;
  if (current != nullptr) return false;  // another profiler (torch.profiler) owns it
  c10::ThreadLocalDebugInfo::_push(c10::DebugInfoKind::PROFILER_STATE, memory_reporter());
  return true;
}

void remove_memory_reporter() {
  if (c10::ThreadLocalDebugInfo::get(c10::DebugInfoKind::PROFILER_STATE) != memory_reporter().get())
    return;
  try {
    c10::ThreadLocalDebugInfo::_pop(c10::DebugInfoKind::PROFILER_STATE);
  } catch (...) {
    // Something was pushed above it; it stays, inert (memoryProfilingEnabled() is false).
  }
}

}  // namespace ptprof::detail
