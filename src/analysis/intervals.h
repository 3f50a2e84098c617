// intervals.h: sets of time intervals [start, end) in int64 ns, kept sorted and disjoint.
//
// The report's overlays, unions and idle gaps are all set algebra on these; TB's range_utils
// and HTA's merge_kernel_intervals compute the same sets on float microseconds.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace ptprof::detail {

struct Interval {
  int64_t start = 0;
  int64_t end = 0;
};
using Intervals = std::vector<Interval>;  // sorted by start, disjoint, each end >= start

// Sorts and merges overlapping or touching intervals. Zero-length intervals are dropped: they
// add no time to any sum.
inline Intervals merge(Intervals v) {
  std::sort(v.begin(), v.end(), [](const Interval& a, const Interval& b) {
    return a.start != b.start ? a.start < b.start : a.end < b.end;
  });
  Intervals out;
  for (const Interval& iv : v) {
    if (iv.end <= iv.start) continue;
    if (!out.empty() && iv.start <= out.back().end) {
      out.back().end = std::max(out.back().end, iv.end);
    } else {
      out.push_back(iv);
    }
  }
  return out;
}

inline int64_t total(const Intervals& v) {
  int64_t sum = 0;
  for (const Interval& iv : v) sum += iv.end - iv.start;
  return sum;
}

// a ∩ b, both merged.
inline Intervals intersect(const Intervals& a, const Intervals& b) {
  Intervals out;
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const int64_t s = std::max(a[i].start, b[j].start);
    const int64_t e = std::min(a[i].end, b[j].end);
    if (s < e) out.push_back({s, e});
    if (a[i].end < b[j].end) {
      ++i;
    } else {
      ++j;
    }
  }
  return out;
}

// a \ b, both merged.
inline Intervals subtract(const Intervals& a, const Intervals& b) {
  Intervals out;
  if (a.empty()) return out;
  // Skip what ends before `a` starts: `a` is often one step against a whole trace's `b`.
  std::size_t j = static_cast<std::size_t>(
      std::lower_bound(b.begin(), b.end(), a.front().start,
                       [](const Interval& iv, int64_t t) { return iv.end <= t; }) -
      b.begin());
  for (const Interval& iv : a) {
    int64_t cur = iv.start;
    while (j < b.size() && b[j].end <= cur) ++j;
    std::size_t k = j;
    while (k < b.size() && b[k].start < iv.end) {
      if (b[k].start > cur) out.push_back({cur, b[k].start});
      cur = std::max(cur, b[k].end);
      if (cur >= iv.end) break;
      ++k;
    }
    if (cur < iv.end) out.push_back({cur, iv.end});
  }
  return out;
}

// Time of `v` inside [start, end).
inline int64_t total_within(const Intervals& v, int64_t start, int64_t end) {
  int64_t sum = 0;
  auto it = std::lower_bound(v.begin(), v.end(), start,
                             [](const Interval& iv, int64_t t) { return iv.end <= t; });
  for (; it != v.end() && it->start < end; ++it)
    sum += std::min(it->end, end) - std::max(it->start, start);
  return sum;
}

}  // namespace ptprof::detail
