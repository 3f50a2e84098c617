#include "recording/flight/flight_recorder.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <new>

#include "ptprof/error.h"
#include "recording/flight/crash.h"
#include "recording/flight/rings.h"
#include "recording/flight/snapshot.h"
#include "trace/clock.h"

namespace ptprof {

std::string flight_dump(const std::string& why) {
  auto& recorder = detail::flight::FlightRecorder::get();
  if (!recorder.running()) return "";
  return recorder.dump(detail::flight::Reason::kApi, why);
}

}  // namespace ptprof

namespace ptprof::detail::flight {

namespace {

int64_t to_ns(double seconds) {
  if (!(seconds > 0)) return 0;
  return seconds > 1e9 ? int64_t{1} << 62 : static_cast<int64_t>(std::llround(seconds * 1e9));
}

}  // namespace

FlightRecorder& FlightRecorder::get() {
  static FlightRecorder* r = new FlightRecorder();  // leaked: the crash handler outlives main
  return *r;
}

FlightRecorder::FlightRecorder() {
  pthread_atfork(nullptr, nullptr, &FlightRecorder::after_fork_in_child);
}

void FlightRecorder::after_fork_in_child() {
  FlightRecorder& self = get();
  new (&self.mu_) std::mutex();  // another thread may have held it at the fork
  if (!self.running_.exchange(false)) return;
  self.watchdog_.forget_after_fork();
  forget_crash_handlers_after_fork();
}

std::vector<std::string> FlightRecorder::start(const FlightRecorderOptions& options,
                                               const Identity& identity,
                                               std::function<bool()> dump_asked, LogSink log) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> warnings;
  if (running_.load()) return warnings;
  if (options.dir.empty()) throw Error("ptprof: flight recorder: no directory for its dumps");
  std::error_code ec;
  std::filesystem::create_directories(options.dir, ec);
  if (ec || !std::filesystem::is_directory(options.dir, ec))
    throw Error("ptprof: flight recorder: cannot make its dump directory " + options.dir +
                (ec ? ": " + ec.message() : ""));
  RingConfig rings;
  rings.capacity = options.events_per_thread;
  rings.max_threads = options.max_threads;
  if (!Rings::get().configure(rings)) {
    const RingConfig kept = Rings::get().config();
    warnings.push_back("flight recorder: its rings were sized by an earlier session (" +
                       std::to_string(kept.capacity) + " events, " +
                       std::to_string(kept.max_threads) +
                       " threads) and keep that size for the process");
  }
  options_ = options;
  dir_ = options.dir;
  log_ = std::move(log);
  calibrate_clock();  // before any tick is recorded: ticks of one kind only
  const TickConverter::Line line = TickConverter::current().line();

  identity_ = FlightDump();
  FileHeader& h = identity_.header;
  h.rank = identity.rank;
  h.world_size = identity.world_size;
  h.pid = ::getpid();
  h.ticks_are_tsc = line.tsc ? 1 : 0;
  h.tick0 = line.tick0;
  h.ns0 = line.ns0;
  h.tick1 = line.tick1;
  h.ns1 = line.ns1;
  h.window_ns = to_ns(options.window_seconds);
  h.hang_ns = to_ns(options.hang_seconds);
  h.last_step = -1;
  identity_.worker = identity.worker;
  identity_.backend = identity.backend;

  if (options.crash_dumps) {
    CrashSetup setup;
    setup.dir = dir_;
    setup.worker = identity.worker;
    setup.header = h;
    std::memcpy(setup.header.worker, identity.worker.c_str(),
                std::min(identity.worker.size(), sizeof(h.worker) - 1));
    std::memcpy(setup.header.backend, identity.backend.c_str(),
                std::min(identity.backend.size(), sizeof(h.backend) - 1));
    const std::string why = install_crash_handlers(setup);
    if (!why.empty()) warnings.push_back("flight recorder: no crash dumps: " + why);
  }
  g_last_step.store(-1);
  g_last_step_ticks.store(0);
  Watchdog::Hooks hooks;
  hooks.dump = [this](Reason reason, const std::string& message) { dump(reason, message); };
  hooks.dump_asked = std::move(dump_asked);
  watchdog_.start(h.hang_ns, std::move(hooks));
  running_.store(true, std::memory_order_release);
  return warnings;
}

void FlightRecorder::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!running_.exchange(false)) return;
  }
  watchdog_.stop();  // outside the lock: its last dump may be taking it
  std::lock_guard<std::mutex> lock(mu_);
  uninstall_crash_handlers();
}

void FlightRecorder::on_step(int64_t step) {
  g_last_step.store(step, std::memory_order_relaxed);
  g_last_step_ticks.store(now_ticks(), std::memory_order_release);
}

std::string FlightRecorder::dump(Reason reason, const std::string& message, std::string* error) {
  std::lock_guard<std::mutex> lock(mu_);
  try {
    FlightDump id = identity_;
    id.header.reason = static_cast<uint32_t>(reason);
    id.message = message;
    FlightDump d = take_snapshot(id, /*rings=*/true);
    d.header.dump_tid = static_cast<int64_t>(::syscall(SYS_gettid));
    const std::string base =
        dir_ + "/" + identity_.worker + "." + std::to_string(d.header.dump_unix_ns);
    const std::string trace = base + ".pt.trace.json.gz";
    flight_trace(d).save(trace);
    // The digest last: once it is there, so is its trace.
    d.has_rings = false;
    for (FlightDumpThread& t : d.threads) t.records.clear();
    write_flight_dump(d, base + ".ptflight");
    return trace;
  } catch (const std::exception& e) {
    const std::string why = std::string("flight recorder: the ") +
                            reason_name(static_cast<uint32_t>(reason)) +
                            " dump was not written: " + e.what();
    if (error != nullptr) {
      *error = why;
    } else if (log_) {
      try {
        log_(LogLevel::kWarning, why);
      } catch (...) {  // a sink that throws loses the message, not the process
      }
    }
    return "";
  }
}

}  // namespace ptprof::detail::flight
