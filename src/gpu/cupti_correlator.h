// cupti_correlator.h: joins one window's decoded CUPTI records with each other and with the
// window's CPU ops, and appends the result to the Trace.
//
// The joins (all by CUPTI correlation id, which a runtime/driver call shares with the GPU work
// it launched and with the external-correlation record CUPTI wrote just before it):
// - GPU activity -> launching runtime/driver call: "correlation" on both, an ac2g flow.
// - GPU activity and call -> CPU op: the ExternalCorrelation record of our kind (CUSTOM2)
//   holds the id on top of the calling thread's stack, i.e. the innermost op.
// - user range -> GPU: a gpu_user_annotation span per (device, stream) over the GPU work of
//   the range's op subtree.
// - GPU work a CUDA graph launch replayed -> the op that captured its node (GraphCaptures):
//   its External id becomes that op's where the op is in the trace (so per-op device time
//   counts it there), and the node and its capture are written as args. The ranges it is
//   projected onto stay those around the launch: that is when it ran.
// Lean mode's calls come timed by ptprof's callback (DecodedActivity::host_clock) and their op
// as an external-correlation pair of our kind, so both modes join the same way.
// Records arrive in buffers in any order (and per-thread buffers reorder them further), so
// everything is collected first and joined in finish().
//
// Window rule: a call belongs to the window its start falls in; GPU work belongs to the window
// of the call that launched it (so a kernel launched inside runs to completion in the trace,
// and one launched before the window stays out even if it ran inside). GPU work whose call is
// unknown (its record was dropped) is kept if its op is in the trace or it started inside.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "gpu/cupti_clock.h"
#include "gpu/cupti_decode.h"
#include "gpu/cupti_graphs.h"
#include "ptprof/trace.h"

namespace ptprof::detail {

struct CorrelationWindow {
  int64_t start_ns = 0;  // ptprof clock (CLOCK_MONOTONIC)
  int64_t end_ns = 0;
  int64_t unix_offset_ns = 0;  // added to every time written into the trace
  GpuClock clock;              // CUPTI timestamps -> ptprof clock
};

struct CorrelationStats {
  uint64_t kernels = 0;
  uint64_t memcpys = 0;
  uint64_t memsets = 0;
  uint64_t syncs = 0;
  uint64_t runtime_calls = 0;
  uint64_t driver_calls = 0;
  uint64_t overheads = 0;
  uint64_t gpu_user_annotations = 0;
  // Kernels, copies and memsets in the trace:
  uint64_t gpu_ops = 0;
  uint64_t gpu_with_launch = 0;           // whose runtime/driver call is in the trace
  uint64_t gpu_with_op = 0;               // whose External id is a CPU op of the trace
  uint64_t gpu_starts_before_launch = 0;  // clocks disagree: should stay 0
  uint64_t graph_work = 0;                // run by a CUDA graph launch
  uint64_t graph_work_captured = 0;       // of which the capturing op is in the trace
  uint64_t outside_window = 0;            // records left out: another window's
  uint64_t foreign_external = 0;          // external-correlation records of other kinds
};

class Correlator {
 public:
  void add(const DecodedActivity& activity) { activities_.push_back(activity); }
  void add_external(const ExternalCorrelationRecord& r);
  std::size_t size() const { return activities_.size(); }
  // Runtime/driver calls that start inside [start_ns, end_ns] when mapped with `clock`: the
  // backend's evidence for which clock CUPTI's timestamps are on.
  std::size_t api_calls_within(const GpuClock& clock, int64_t start_ns, int64_t end_ns) const;

  // Joins and appends to `trace`, whose CPU events (cpu_op / user_annotation, External id =
  // op id) must already be there. `threads` maps CUPTI's thread id to the OS thread id;
  // `graphs` (may be null) tells which op captured each CUDA graph node.
  CorrelationStats finish(const CorrelationWindow& window,
                          const std::unordered_map<uint32_t, int64_t>& threads, Trace& trace,
                          const GraphCaptureMap* graphs = nullptr);

 private:
  std::vector<DecodedActivity> activities_;
  std::unordered_map<uint32_t, uint64_t> external_;  // correlation id -> op id
  uint64_t foreign_external_ = 0;
};

}  // namespace ptprof::detail
