#include "recording/flight/watchdog.h"

#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <new>

#include "recording/flight/rings.h"
#include "trace/clock.h"
#include "trace/json_writer.h"

namespace ptprof::detail::flight {

namespace {

// ptprof's own thread handles a crash on a stack of its own too.
struct AltStack {
  static constexpr std::size_t kBytes = 64 * 1024;
  void* mem = nullptr;
  AltStack() {
    mem = ::mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) {
      mem = nullptr;
      return;
    }
    stack_t s{};
    s.ss_sp = mem;
    s.ss_size = kBytes;
    ::sigaltstack(&s, nullptr);
  }
  ~AltStack() {
    if (mem == nullptr) return;
    stack_t off{};
    off.ss_flags = SS_DISABLE;
    ::sigaltstack(&off, nullptr);
    ::munmap(mem, kBytes);
  }
};

}  // namespace

int64_t Watchdog::period_ns() const {
  constexpr int64_t kMs = 1000000;
  return hang_ns_ > 0 ? std::clamp<int64_t>(hang_ns_ / 4, 10 * kMs, 100 * kMs) : 100 * kMs;
}

void Watchdog::start(int64_t hang_ns, Hooks hooks) {
  stop();
  hang_ns_ = hang_ns;
  hooks_ = std::move(hooks);
  stopping_ = false;
  requested_.store(0);
  thread_ = std::thread([this] { run(); });
}

void Watchdog::stop() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Watchdog::forget_after_fork() {
  // Placement-new over the parent's objects: a joinable std::thread may not be destroyed,
  // and the mutex may have been held by a thread that is not here.
  new (&thread_) std::thread();
  new (&mu_) std::mutex();
  new (&cv_) std::condition_variable();
  stopping_ = false;
}

void Watchdog::run() {
  pthread_setname_np(pthread_self(), "ptprof_flight");
  AltStack alt;
  int64_t dumped_stall = 0;  // the step time of the stall last dumped
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    cv_.wait_for(lock, std::chrono::nanoseconds(period_ns()));
    if (stopping_) break;
    lock.unlock();
    if (const uint32_t r = requested_.exchange(0)) hooks_.dump(static_cast<Reason>(r), "");
    if (hooks_.dump_asked && hooks_.dump_asked()) hooks_.dump(Reason::kTriggerFile, "");
    const int64_t step_ticks = g_last_step_ticks.load(std::memory_order_relaxed);
    if (hang_ns_ > 0 && step_ticks != 0 && step_ticks != dumped_stall) {
      const TickConverter clock = TickConverter::current();
      const int64_t quiet = clock.to_ns(now_ticks()) - clock.to_ns(step_ticks);
      if (quiet >= hang_ns_) {
        dumped_stall = step_ticks;
        hooks_.dump(Reason::kHang,
                    "no step() for " + format_fixed(static_cast<double>(quiet) / 1e9, 1) +
                        " s after step " +
                        std::to_string(g_last_step.load(std::memory_order_relaxed)));
      }
    }
    lock.lock();
  }
}

}  // namespace ptprof::detail::flight
