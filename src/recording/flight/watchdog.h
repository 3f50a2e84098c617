// watchdog.h: the flight recorder's thread. It dumps when no step() has come for the hang
// threshold (once per stall: the next step() re-arms it) and keeps watching, and it writes the
// dumps asked for where asking cannot write them (a signal handler, a trigger file seen while
// the training loop is stuck). It never waits on anything the training threads hold.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "trace/flight_format.h"

namespace ptprof::detail::flight {

class Watchdog {
 public:
  struct Hooks {
    std::function<void(Reason, const std::string&)> dump;  // writes a dump (never throws)
    std::function<bool()> dump_asked;  // polled each tick: a trigger file asking for one
  };

  ~Watchdog() { stop(); }
  // hang_ns 0: no hang detection.
  void start(int64_t hang_ns, Hooks hooks);
  void stop();
  // In a forked child, where its thread is not: forgets it without joining.
  void forget_after_fork();
  // A dump for `reason` at the next tick. Async-signal-safe (one atomic store).
  void request(Reason reason) { requested_.store(static_cast<uint32_t>(reason)); }
  // Ticks between looks: a quarter of the threshold, within [10 ms, 100 ms].
  int64_t period_ns() const;

 private:
  void run();

  int64_t hang_ns_ = 0;
  Hooks hooks_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::atomic<uint32_t> requested_{0};
};

}  // namespace ptprof::detail::flight
