#include "gpu/cupti_clock.h"

#include <cmath>
#include <cstdlib>

namespace ptprof::detail {

bool measure_clock_pair(const std::function<int64_t()>& cpu,
                        const std::function<bool(uint64_t*)>& cupti, int tries, ClockPair* out) {
  bool any = false;
  for (int i = 0; i < tries; ++i) {
    const int64_t before = cpu();
    uint64_t ts = 0;
    const bool ok = cupti(&ts);
    const int64_t after = cpu();
    if (!ok) continue;
    const int64_t spread = after - before;
    if (!any || spread < out->spread_ns) {
      out->cpu_ns = before + spread / 2;
      out->cupti_ns = ts;
      out->spread_ns = spread;
      any = true;
    }
  }
  return any;
}

GpuClock GpuClock::from_ticks(const TickConverter& ticks) {
  GpuClock c;
  c.ticks_ = true;
  c.ticks_map_ = ticks;
  return c;
}

GpuClock GpuClock::from_pair(const ClockPair& a) {
  GpuClock c;
  c.identity_ = false;
  c.cupti_base_ = a.cupti_ns;
  c.cpu_base_ = a.cpu_ns;
  return c;
}

GpuClock GpuClock::from_pairs(const ClockPair& a, const ClockPair& b) {
  GpuClock c = from_pair(b);
  const int64_t d_cpu = b.cpu_ns - a.cpu_ns;
  const double d_cupti = static_cast<double>(b.cupti_ns) - static_cast<double>(a.cupti_ns);
  // Below 1 ms apart the pairs' spread would dominate the fitted rate.
  if (d_cpu >= 1000000 && d_cupti >= 1e6) {
    const double rate = static_cast<double>(d_cpu) / d_cupti;
    // Within 0.1% of 1 the clocks tick alike and the difference is measurement noise.
    if (std::fabs(rate - 1.0) > 1e-3) c.rate_ = rate;
  }
  return c;
}

int64_t GpuClock::to_cpu(uint64_t cupti_ns) const {
  if (ticks_) return ticks_map_.to_ns(static_cast<int64_t>(cupti_ns));
  if (identity_) return static_cast<int64_t>(cupti_ns);
  // Exact integer arithmetic for the common offset-only case.
  if (rate_ == 1.0) return cpu_base_ + static_cast<int64_t>(cupti_ns - cupti_base_);
  const double d = static_cast<double>(cupti_ns) - static_cast<double>(cupti_base_);
  return cpu_base_ + static_cast<int64_t>(std::llround(d * rate_));
}

int64_t GpuClock::duration_to_cpu(uint64_t cupti_duration) const {
  if (ticks_) return ticks_map_.to_ns(static_cast<int64_t>(cupti_duration)) - ticks_map_.to_ns(0);
  if (identity_ || rate_ == 1.0) return static_cast<int64_t>(cupti_duration);
  return static_cast<int64_t>(std::llround(static_cast<double>(cupti_duration) * rate_));
}

bool same_clock(const ClockPair& p, int64_t tolerance_ns) {
  const int64_t diff = static_cast<int64_t>(p.cupti_ns) - p.cpu_ns;
  return std::llabs(diff) <= tolerance_ns + p.spread_ns;
}

}  // namespace ptprof::detail
