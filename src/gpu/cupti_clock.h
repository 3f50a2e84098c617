// cupti_clock.h: mapping CUPTI timestamps onto ptprof's clock (CLOCK_MONOTONIC ns).
//
// Normally CUPTI calls our timestamp callback, so its records are on our clock already and the
// map is the identity (classic mode's callback returns CLOCK_MONOTONIC ns) or ptprof's tick
// conversion (lean mode's returns the recorder's own ticks, rdtsc where there is one: cheaper
// for CUPTI to call, and the same clock as the ops'). When the callback could not be
// registered, or another profiler replaced it (Kineto registers a TSC one), the map is fitted
// from (our clock, cuptiGetTimestamp) pairs read at window start and end: an offset, and a rate
// when the clocks tick differently.
#pragma once

#include <cstdint>
#include <functional>

#include "trace/clock.h"

namespace ptprof::detail {

struct ClockPair {
  int64_t cpu_ns = 0;     // our clock, midpoint of the reads around the CUPTI read
  uint64_t cupti_ns = 0;  // cuptiGetTimestamp
  int64_t spread_ns = 0;  // width of that bracket: the pair's uncertainty
};

// Reads `tries` pairs and keeps the tightest. Returns false if `cupti` never succeeded.
bool measure_clock_pair(const std::function<int64_t()>& cpu,
                        const std::function<bool(uint64_t*)>& cupti, int tries, ClockPair* out);

class GpuClock {
 public:
  static GpuClock identity() { return GpuClock(); }
  // CUPTI timestamps that are ptprof's ticks (trace/clock.h), mapped by `ticks`.
  static GpuClock from_ticks(const TickConverter& ticks);
  // Offset only (one pair), or offset and rate (two pairs at least 1 ms apart on both clocks).
  static GpuClock from_pair(const ClockPair& a);
  static GpuClock from_pairs(const ClockPair& a, const ClockPair& b);

  int64_t to_cpu(uint64_t cupti_ns) const;
  int64_t duration_to_cpu(uint64_t cupti_duration) const;
  bool is_identity() const { return identity_ && !ticks_; }
  // Ours: the identity or the tick conversion (our timestamp callback is in use).
  bool is_ours() const { return identity_; }
  double rate() const { return rate_; }

 private:
  bool identity_ = true;  // ours: no fitted map
  bool ticks_ = false;    // ours, through ticks_map_
  TickConverter ticks_map_;
  uint64_t cupti_base_ = 0;
  int64_t cpu_base_ = 0;
  double rate_ = 1.0;  // our ns per CUPTI unit
};

// True when a pair shows CUPTI timestamps on our clock (as with our timestamp callback).
bool same_clock(const ClockPair& p, int64_t tolerance_ns);

}  // namespace ptprof::detail
