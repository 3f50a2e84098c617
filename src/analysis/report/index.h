// index.h: the report's index over one trace, built once and read by every pass and rule:
// GPU activities, launches by correlation, host events by thread, host waits; and the small
// event predicates they share.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ptprof/trace.h"

namespace ptprof::detail {

// Bounds for minimum and maximum searches over times.
inline constexpr int64_t kMaxNs = std::numeric_limits<int64_t>::max();
inline constexpr int64_t kMinNs = std::numeric_limits<int64_t>::min();

inline bool is_host_range(EventKind k) {
  return k == EventKind::CpuOp || k == EventKind::UserAnnotation;
}
inline bool is_api_call(EventKind k) {
  return k == EventKind::CudaRuntime || k == EventKind::CudaDriver;
}
inline bool is_activity(EventKind k) {
  return k == EventKind::Kernel || k == EventKind::Memcpy || k == EventKind::Memset;
}
inline int64_t end_of(const Event& e) {
  return e.start_ns + e.duration_ns;
}
// GPU events carry their device and stream in fields; a trace read back from a file without
// those args still has them as pid and tid, as Kineto writes them.
inline int32_t device_of(const Event& e) {
  return e.device >= 0 ? e.device : static_cast<int32_t>(e.pid);
}
inline int64_t stream_of(const Event& e) {
  return e.stream >= 0 ? e.stream : e.tid;
}
inline bool kernel_args_present(const KernelInfo& k) {
  return k.grid[0] > 0 || k.blocks_per_sm > 0 || k.occupancy_pct > 0;
}

struct TraceIndex {
  explicit TraceIndex(const Trace& trace);

  const Trace& t;
  std::vector<int64_t> activities;                  // kernels, copies, memsets
  std::unordered_map<uint64_t, int64_t> launch_of;  // correlation -> runtime/driver call
  std::unordered_map<uint64_t, std::vector<int64_t>> activities_of;  // correlation -> activities
  std::unordered_map<int64_t, std::vector<int64_t>> host_events;     // tid -> ranges and calls
  std::unordered_set<uint64_t> waits;  // correlations of cuda_sync records of a host wait

  // The call that launched a GPU activity, -1 when the trace has none.
  int64_t launch(const Event& activity) const {
    if (activity.correlation == 0) return -1;
    auto l = launch_of.find(activity.correlation);
    return l == launch_of.end() ? -1 : l->second;
  }

  // Tensor Core classes of a kernel name (bit 0: TB's list, bit 1: sm90+ names), keyed by the
  // interned name's address: a trace has few kernel names and many kernels, and the substring
  // tests were a fifth of `ptprof report` on a 100 MB trace.
  uint8_t tensor_core_bits(std::string_view name);

 private:
  struct NameKey {
    std::size_t operator()(const std::string_view& n) const {
      return std::hash<const void*>()(n.data()) ^ n.size();
    }
    bool operator()(const std::string_view& a, const std::string_view& b) const {
      return a.data() == b.data() && a.size() == b.size();
    }
  };
  std::unordered_map<std::string_view, uint8_t, NameKey, NameKey> tensor_core_class_;
};

}  // namespace ptprof::detail
