#include "clock.h"

#include <limits>

namespace ptprof::detail {

namespace {
int64_t realtime_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}
}  // namespace

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

int64_t trace_base_time_ns() {
  static const int64_t base = [] {
    constexpr int64_t kPeriodNs = int64_t{7889238} * 1000000000;
    return realtime_ns() / kPeriodNs * kPeriodNs;
  }();
  return base;
}

}  // namespace ptprof::detail
