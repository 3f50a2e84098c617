#include "trace/clock.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include <limits>
#include <mutex>

namespace ptprof::detail {

namespace {

int64_t realtime_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

bool has_invariant_tsc() {
#if defined(__x86_64__)
  unsigned a, b, c, d;
  if (__get_cpuid_max(0x80000000, nullptr) < 0x80000007) return false;
  __cpuid(0x80000007, a, b, c, d);
  return (d & (1u << 8)) != 0;  // CPUID.80000007H:EDX[8] = invariant TSC
#else
  return false;
#endif
}

struct Pair {
  int64_t tick;
  int64_t ns;
};

// A (tsc, monotonic) pair read as close together as the machine allows.
Pair read_pair() {
  Pair best{0, 0};
#if defined(__x86_64__)
  int64_t best_gap = std::numeric_limits<int64_t>::max();
  for (int i = 0; i < 8; ++i) {
    const int64_t a = static_cast<int64_t>(__rdtsc());
    const int64_t n = now_ns();
    const int64_t b = static_cast<int64_t>(__rdtsc());
    if (b - a < best_gap) {
      best_gap = b - a;
      best = Pair{a + (b - a) / 2, n};
    }
  }
#endif
  return best;
}

const Pair& reference_pair() {
  static const Pair p = read_pair();
  return p;
}

// Spins ~2 ms so the first conversion already has a usable slope.
bool calibrate_tsc() {
  if (!has_invariant_tsc()) return false;
  const Pair a = reference_pair();
  Pair b;
  do {
    b = read_pair();
  } while (b.ns - a.ns < 2000000);
  const long double slope = static_cast<long double>(b.ns - a.ns) / (b.tick - a.tick);
  return slope > 0.01L && slope < 100.0L;  // 10 MHz .. 100 GHz: anything else is not a TSC
}

}  // namespace

std::atomic<bool> g_ticks_are_tsc{false};

void calibrate_clock() {
  static const bool tsc = calibrate_tsc();  // thread-safe, once
  g_ticks_are_tsc.store(tsc, std::memory_order_relaxed);
}

TickConverter TickConverter::current() {
  TickConverter c;
  c.tsc_ = g_ticks_are_tsc.load(std::memory_order_relaxed);
  if (!c.tsc_) return c;
  const Pair a = reference_pair();
  const Pair b = read_pair();
  c.tick0_ = a.tick;
  c.ns0_ = a.ns;
  c.tick1_ = b.tick;
  c.ns1_ = b.ns;
  c.ns_per_tick_ = static_cast<long double>(b.ns - a.ns) / (b.tick - a.tick);
  return c;
}

int64_t measure_unix_offset_ns() {
  int64_t best_gap = std::numeric_limits<int64_t>::max();
  int64_t offset = 0;
  for (int i = 0; i < 16; ++i) {
    const int64_t a = now_ns();
    const int64_t r = realtime_ns();
    const int64_t b = now_ns();
    if (b - a < best_gap) {
      best_gap = b - a;
      offset = r - (a + (b - a) / 2);
    }
  }
  return offset;
}

int64_t trace_base_time_ns(int64_t unix_ns) {
  constexpr int64_t kPeriodNs = int64_t{7889238} * 1000000000;
  int64_t rem = unix_ns % kPeriodNs;
  if (rem < 0) rem += kPeriodNs;  // floor, not truncation toward zero, for times before 1970
  int64_t base;
  return __builtin_sub_overflow(unix_ns, rem, &base) ? unix_ns : base;
}

int64_t trace_base_time_ns() {
  static const int64_t base = trace_base_time_ns(realtime_ns());
  return base;
}

}  // namespace ptprof::detail
