// clock.h: the one clock of ptprof.
//
// Everything is recorded as int64 ns of CLOCK_MONOTONIC (cheap through the vDSO, never goes
// backwards) and mapped to Unix-epoch ns with one offset measured when a window opens. The
// trace writer is the only place that turns ns into the microseconds of the trace format.
#pragma once

#include <time.h>

#include <cstdint>

namespace ptprof::detail {

inline int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// CLOCK_REALTIME - CLOCK_MONOTONIC, from the tightest of several paired reads.
int64_t measure_unix_offset_ns();

// Kineto's baseTimeNanoseconds: the Unix time floored to a 7,889,238 s boundary, fixed for
// the process so that every trace of a run shares it.
int64_t trace_base_time_ns();

}  // namespace ptprof::detail
