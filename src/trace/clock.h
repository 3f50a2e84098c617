// clock.h: the one clock of ptprof.
//
// The hot path reads raw ticks (the invariant TSC where the CPU has one: ~12 ns against ~28 ns
// for clock_gettime in a VM; CLOCK_MONOTONIC ns otherwise). Ticks are converted to
// CLOCK_MONOTONIC ns by one calibrated linear map (TickConverter), and those to Unix-epoch ns
// by one offset; the trace writer is the only place that turns ns into the microseconds of the
// trace format.
#pragma once

#include <time.h>

#include <atomic>
#include <cstdint>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace ptprof::detail {

inline int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// True when ticks are TSC cycles. Set once by calibrate_clock(), which the recorder calls
// before it registers any callback, so ticks of one kind are never mixed with the other.
extern std::atomic<bool> g_ticks_are_tsc;  // set once per install; read on every op
void calibrate_clock();

inline int64_t now_ticks() {
#if defined(__x86_64__)
  if (__builtin_expect(g_ticks_are_tsc.load(std::memory_order_relaxed), 1))
    return static_cast<int64_t>(__rdtsc());
#endif
  return now_ns();
}

// Maps ticks to CLOCK_MONOTONIC ns: a line through a reference pair taken at process start and
// one taken when converting, so the baseline only grows and the slope only gets more exact.
class TickConverter {
 public:
  // A converter calibrated up to now.
  static TickConverter current();
  int64_t to_ns(int64_t ticks) const {
    if (!tsc_) return ticks;
    return ns0_ + static_cast<int64_t>(static_cast<long double>(ticks - tick0_) * ns_per_tick_);
  }

  // The map as its two reference pairs, for a file that converts later (a flight dump).
  struct Line {
    bool tsc = false;
    int64_t tick0 = 0, ns0 = 0, tick1 = 0, ns1 = 0;
  };
  Line line() const { return Line{tsc_, tick0_, ns0_, tick1_, ns1_}; }

 private:
  bool tsc_ = false;
  int64_t tick0_ = 0;
  int64_t ns0_ = 0;
  int64_t tick1_ = 0;
  int64_t ns1_ = 0;
  long double ns_per_tick_ = 1.0L;
};

// CLOCK_REALTIME - CLOCK_MONOTONIC, from the tightest of several paired reads.
int64_t measure_unix_offset_ns();

// Kineto's baseTimeNanoseconds: the Unix time floored to a 7,889,238 s boundary, fixed for
// the process (Kineto's own base, which a trace of this run gets unless its times lie in
// another period).
int64_t trace_base_time_ns();
// The 7,889,238 s boundary at or before `unix_ns` (floored, negative times included), or
// `unix_ns` itself where that boundary is below INT64_MIN: the trace writer's base for a trace
// whose earliest time is `unix_ns`, so every time it writes is a non-negative offset from it.
int64_t trace_base_time_ns(int64_t unix_ns);

}  // namespace ptprof::detail
