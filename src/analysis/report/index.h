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
#include <utility>
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

// Correlation -> the GPU activities that carry it, in event order: (correlation, event) pairs
// sorted, 16 bytes an activity where a hash map of vectors took about 90 (a large trace has
// hundreds of thousands of kernels).
class ActivitiesByCorrelation {
 public:
  using Entry = std::pair<uint64_t, int64_t>;
  // The events of one correlation.
  class Events {
   public:
    struct Iter {
      const Entry* p;
      int64_t operator*() const { return p->second; }
      Iter& operator++() {
        ++p;
        return *this;
      }
      bool operator!=(const Iter& o) const { return p != o.p; }
    };
    Events(const Entry* b, const Entry* e) : b_(b), e_(e) {}
    Iter begin() const { return {b_}; }
    Iter end() const { return {e_}; }
    bool empty() const { return b_ == e_; }

   private:
    const Entry* b_;
    const Entry* e_;
  };
  // Built from every (correlation, event) in event order.
  explicit ActivitiesByCorrelation(std::vector<Entry> entries);
  ActivitiesByCorrelation() = default;
  Events find(uint64_t correlation) const;  // empty: none
  // fn(correlation, events) for each correlation, by correlation.
  template <class Fn>
  void for_each(Fn&& fn) const {
    for (std::size_t i = 0; i < entries_.size();) {
      std::size_t j = i;
      while (j < entries_.size() && entries_[j].first == entries_[i].first) ++j;
      fn(entries_[i].first, Events(entries_.data() + i, entries_.data() + j));
      i = j;
    }
  }

 private:
  std::vector<Entry> entries_;
};

struct TraceIndex {
  explicit TraceIndex(const Trace& trace);

  const Trace& t;
  std::vector<int64_t> activities;                  // kernels, copies, memsets
  std::unordered_map<uint64_t, int64_t> launch_of;  // correlation -> runtime/driver call
  ActivitiesByCorrelation activities_of;
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
