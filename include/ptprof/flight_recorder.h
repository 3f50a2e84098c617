// ptprof/flight_recorder.h: an always-on flight recorder (docs/flight-recorder.md).
//
// Every op and range (and collective) goes into bounded per-thread rings, the last N seconds or
// M events of each thread, overwriting the oldest; nothing is written until a dump is asked
// for: by flight_dump(), by the on-demand trigger file (DUMP=1) or signal, by the watchdog when
// no step() came for hang_seconds, or by a crash (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT,
// std::terminate). Each rank writes its own dumps, named by its worker name
// (<host>_<pid>_rank<R>): <worker>.<time>.ptflight (the digest: what each thread was inside,
// the last collectives) and <worker>.<time>.pt.trace.json.gz (the last seconds as a trace);
// a crash writes the raw rings into the .ptflight instead, which 'ptprof flight DUMP -o' and
// every other command turn into the trace later. 'ptprof report DIR' on the ranks' dumps says
// what every rank was doing at the end.
#pragma once

#include <cstdint>
#include <string>

namespace ptprof {

struct FlightRecorderOptions {
  bool enabled = false;  // also PTPROF_FLIGHT_RECORDER=1 for an unconfigured binary
  // Where dumps go. Empty: <PTPROF_LOGDIR>/flight, or ./ptprof_flight without PTPROF_LOGDIR.
  std::string dir;
  // Records kept per thread (rounded up to a power of two): 64 bytes each, allocated when a
  // thread first records, at most max_threads rings in all. Memory is fixed from then on.
  uint32_t events_per_thread = 65536;
  uint32_t max_threads = 64;
  // A dump's trace keeps the ops that ended this long before it (and every op still open).
  double window_seconds = 60;
  // The watchdog dumps when no step() has come for this long since the last one, then keeps
  // watching (one dump per stall). 0: no hang detection. PTPROF_FLIGHT_RECORDER_HANG_S.
  double hang_seconds = 0;
  // Dump on fatal signals and std::terminate, then hand the signal on unchanged (the previous
  // handler or the default action: core dumps and exit statuses are what they were).
  bool crash_dumps = true;
};

// Writes a dump now (reason "api"; `why` in words in its digest) and returns the path of its
// trace; "" when no flight recorder runs or the dump could not be written (logged). Never
// throws.
std::string flight_dump(const std::string& why = "");

}  // namespace ptprof
