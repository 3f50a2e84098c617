// gpu_backend.h: the seam between the session and GPU activity collection (CUPTI).
//
// The session drives a backend through the schedule: enable() at warmup, begin_window() when
// an active window opens, end_window() when it closes (the backend flushes and appends the
// window's GPU events, correlated with CPU ops through their External ids), disable() at
// stop. Tests drive the CUPTI backend with hand-built records through the same interface.
// The seam owns the hook type the recorder calls (CorrelationHook): gpu/ includes nothing
// from recording/.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "ptprof/options.h"
#include "ptprof/trace.h"

namespace ptprof::detail {

// Called on the recording hot path at each CPU op's entry (push, with the op's id) and exit
// (pop): the backend makes the id CUPTI's external correlation of what the op launches.
using CorrelationHook = void (*)(uint64_t id);

struct GpuOptions {
  std::size_t buffer_size_bytes = 4 << 20;
  std::size_t max_buffer_bytes = 128 << 20;
  CudaTracing tracing = CudaTracing::Classic;  // Options::cuda_tracing
  bool graph_launches_only = false;         // Options::cuda_graph_launches_only
};

// The session's Options, as the backend takes them.
inline GpuOptions gpu_options(const Options& o) {
  GpuOptions g;
  g.buffer_size_bytes = o.gpu_buffer_bytes;
  g.max_buffer_bytes = o.max_gpu_buffer_bytes;
  g.tracing = o.cuda_tracing;
  g.graph_launches_only = o.cuda_graph_launches_only;
  return g;
}

// An op or user range open on the calling thread, as the recorder knows it.
struct OpenOp {
  uint64_t id = 0;             // the id the push hook was given (the trace's External id)
  const char* name = nullptr;  // valid during the call only
  bool user_range = false;
};
// Fills `out` with the ops open on the calling thread, outermost first, and returns how many
// (at most `max`). Asked only when a CUDA graph node is created (capture time), so that a node
// captured outside a recorded window (in warmup, say) still names its op.
using OpenOpsHook = std::size_t (*)(OpenOp* out, std::size_t max);

class GpuBackend {
 public:
  virtual ~GpuBackend() = default;
  // Empty when GPU activity can be collected; otherwise the reason it cannot.
  virtual std::string unavailable_reason() = 0;
  // Starts collection (warmup); kUnavailable, saying why, where it could not.
  virtual Status enable() = 0;
  // Discards what was collected so far; the window starts at start_ns (CLOCK_MONOTONIC).
  virtual void begin_window(int64_t start_ns) = 0;
  // Flushes and appends the window's GPU events to `trace` (times in Unix ns via
  // unix_offset_ns), plus devices and metadata. What was lost or is off goes to *warnings.
  virtual void end_window(int64_t start_ns, int64_t end_ns, int64_t unix_offset_ns, Trace& trace,
                          std::vector<Status>* warnings) = 0;
  virtual void disable() = 0;
  // Hot-path hooks the recorder calls at each op's entry (push, with the op's id) and exit
  // (pop): they tell the backend which op launches what (may be null).
  virtual CorrelationHook push_hook() = 0;
  virtual CorrelationHook pop_hook() = 0;
  // CPU time GPU tracing adds per launch (kernel, copy or memset call), measured at the first
  // enable() by timing launches before and after CUPTI was switched on; nothing where it was
  // not measured (no GPU, a CUDA call failed).
  virtual std::optional<double> launch_cost_ns() const = 0;
  // Names of the open ops at graph capture (optional: without it, names come from the trace of
  // the window the capture happened in).
  virtual void set_open_ops_hook(OpenOpsHook hook) = 0;
};

// The CUPTI backend when ptprof was built with CUPTI, otherwise one that reports why not.
std::unique_ptr<GpuBackend> make_gpu_backend(const GpuOptions& options);

}  // namespace ptprof::detail
