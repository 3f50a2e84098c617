// gpu_backend.h: the seam between the session and GPU activity collection (CUPTI).
//
// The session drives a backend through the schedule: enable() at warmup, begin_window() when
// an active window opens, end_window() when it closes (the backend flushes and appends the
// window's GPU events, correlated with CPU ops through their External ids), disable() at
// stop. Tests drive the CUPTI backend with hand-built records through the same interface.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ptprof/trace.h"
#include "recording/recorder.h"

namespace ptprof::detail {

struct GpuOptions {
  std::size_t buffer_size_bytes = 4 << 20;
  std::size_t max_buffer_bytes = 128 << 20;
};

class GpuBackend {
 public:
  virtual ~GpuBackend() = default;
  // Empty when GPU activity can be collected; otherwise the reason it cannot.
  virtual std::string unavailable_reason() = 0;
  // Starts collection (warmup). Returns false and sets *error if it could not.
  virtual bool enable(std::string* error) = 0;
  // Discards what was collected so far; the window starts at start_ns (CLOCK_MONOTONIC).
  virtual void begin_window(int64_t start_ns) = 0;
  // Flushes and appends the window's GPU events to `trace` (times in Unix ns via
  // unix_offset_ns), plus devices and metadata. Warnings go to *warnings.
  virtual void end_window(int64_t start_ns, int64_t end_ns, int64_t unix_offset_ns, Trace& trace,
                          std::vector<std::string>* warnings) = 0;
  virtual void disable() = 0;
  // Hot-path hooks that push/pop a CPU op's id as external correlation (may be null).
  virtual CorrelationHook push_hook() = 0;
  virtual CorrelationHook pop_hook() = 0;
};

// The CUPTI backend when ptprof was built with CUPTI, otherwise one that reports why not.
std::unique_ptr<GpuBackend> make_gpu_backend(const GpuOptions& options);

}  // namespace ptprof::detail
