// ProfileSession: drives the stages of a run's profiling, each in its own file.
//   env_options      Options the environment fills in
//   window_schedule  which action each step takes, and what changes between two actions
//   trigger_poller   on-demand requests: the trigger file and the signal
//   recorder         the callbacks' per-thread buffers (the GPU backend: gpu/gpu_backend.h)
//   cost_calibration what recording an op costs, measured at each install (ProfilerCost)
//   trace_assembly   a closed window's records -> its Trace
//   trace_delivery   the Trace -> its handlers, on the background writer
//   session_log      every warning and error -> Options::log and the Status
//   flight_stage     the flight recorder's rings, watchdog and crash dumps, beside the windows
//   cuda_memory_history  the CUDA allocator's history and its snapshots (windows, OOM)
#include "ptprof/session.h"

#include <csignal>

#include <atomic>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <ATen/record_function.h>

#include "gpu/gpu_backend.h"
#include "ptprof/error.h"
#include "recording/cost_calibration.h"
#include "recording/cuda_memory_history.h"
#include "recording/details.h"
#include "recording/env_options.h"
#include "recording/flight_stage.h"
#include "recording/recorder.h"
#include "recording/session_log.h"
#include "recording/symbolizer.h"
#include "recording/trace_assembly.h"
#include "recording/trace_delivery.h"
#include "recording/trigger_poller.h"
#include "recording/window_schedule.h"
#include "trace/clock.h"
#include "trace/process_info.h"

namespace ptprof {

namespace {

std::atomic<bool> g_session_active{false};

// Bad Options throw ptprof::Error naming the field (the public rule: throw on bad config).
void validate(const Options& o) {
  if (o.schedule) o.schedule->validate();
  if (o.distributed) {
    const DistributedInfo& d = *o.distributed;
    if (d.rank < 0 || d.world_size < 1 || d.rank >= d.world_size)
      throw Error("ptprof: Options.distributed needs 0 <= rank < world_size (got rank " +
                  std::to_string(d.rank) + ", world_size " + std::to_string(d.world_size) + ")");
  }
  if (o.activities.empty())
    throw Error("ptprof: Options.activities is empty; ask for Activity::CPU and/or Activity::CUDA");
  for (std::size_t i = 0; i < o.on_trace_ready.size(); ++i) {
    if (!o.on_trace_ready[i])
      throw Error("ptprof: Options.on_trace_ready[" + std::to_string(i) + "] is null");
  }
  if (o.max_event_memory_bytes < (std::size_t{1} << 20))
    throw Error("ptprof: Options.max_event_memory_bytes must be >= 1 MiB (got " +
                std::to_string(o.max_event_memory_bytes) + ")");
  if (o.gpu_buffer_bytes < (std::size_t{64} << 10) || o.gpu_buffer_bytes % 8 != 0)
    throw Error("ptprof: Options.gpu_buffer_bytes must be a multiple of 8 and >= 64 KiB (got " +
                std::to_string(o.gpu_buffer_bytes) + ")");
  if (o.max_gpu_buffer_bytes < o.gpu_buffer_bytes)
    throw Error("ptprof: Options.max_gpu_buffer_bytes must be >= Options.gpu_buffer_bytes (got " +
                std::to_string(o.max_gpu_buffer_bytes) + ")");
  if (o.max_stack_depth < 1 || o.max_stack_depth > detail::kMaxStackDepth)
    throw Error("ptprof: Options.max_stack_depth must be in [1, " +
                std::to_string(detail::kMaxStackDepth) + "] (got " +
                std::to_string(o.max_stack_depth) + ")");
  const FlightRecorderOptions& f = o.flight_recorder;
  if (f.enabled && (f.events_per_thread < 16 || f.events_per_thread > (1u << 26)))
    throw Error("ptprof: Options.flight_recorder.events_per_thread must be in [16, 2^26] (got " +
                std::to_string(f.events_per_thread) + ")");
  if (f.enabled && (f.max_threads < 1 || f.max_threads > 4096))
    throw Error("ptprof: Options.flight_recorder.max_threads must be in [1, 4096] (got " +
                std::to_string(f.max_threads) + ")");
  if (f.enabled && !(f.window_seconds > 0))
    throw Error("ptprof: Options.flight_recorder.window_seconds must be > 0 (got " +
                std::to_string(f.window_seconds) + ")");
  if (f.enabled && !(f.hang_seconds >= 0))
    throw Error("ptprof: Options.flight_recorder.hang_seconds must be >= 0 (got " +
                std::to_string(f.hang_seconds) + ")");
  const CudaMemoryHistoryOptions& m = o.cuda_memory_history;
  if (m.max_entries < 1)
    throw Error("ptprof: Options.cuda_memory_history.max_entries must be >= 1");
  if (m.max_oom_dumps < 0)
    throw Error("ptprof: Options.cuda_memory_history.max_oom_dumps must be >= 0 (got " +
                std::to_string(m.max_oom_dumps) + ")");
  if (o.trigger_check_interval_ms < 0)
    throw Error("ptprof: Options.trigger_check_interval_ms must be >= 0 (got " +
                std::to_string(o.trigger_check_interval_ms) + ")");
  if (o.trigger_signal < 0 || o.trigger_signal >= NSIG || o.trigger_signal == SIGKILL ||
      o.trigger_signal == SIGSTOP || o.trigger_signal == SIGSEGV || o.trigger_signal == SIGBUS ||
      o.trigger_signal == SIGFPE || o.trigger_signal == SIGILL || o.trigger_signal == SIGABRT)
    throw Error(
        "ptprof: Options.trigger_signal must be 0 or a signal a program may take for "
        "itself, such as SIGUSR1 (got " +
        std::to_string(o.trigger_signal) + ")");
}

detail::WindowOptions session_window(const Options& o) {
  detail::WindowOptions w;
  w.record_shapes = o.record_shapes;
  w.profile_memory = o.profile_memory;
  w.with_stack = o.with_stack;
  w.with_flops = o.with_flops;
  w.report = o.report;
  w.cuda_memory = o.cuda_memory_history.enabled;
  w.handlers = o.on_trace_ready;
  return w;
}

}  // namespace

class SessionImpl {
 public:
  explicit SessionImpl(Options options)
      : opts_(detail::with_environment(std::move(options), &env_warnings_)),
        log_(opts_.log),
        schedule_(opts_.schedule, opts_.on_demand_only, session_window(opts_)),
        delivery_(opts_.write_in_background, log_) {
    validate(opts_);
    for (const detail::Status& w : env_warnings_) log_.warning(w);
    bool expected = false;
    if (!g_session_active.compare_exchange_strong(expected, true)) {
      throw Error(
          "ptprof: a ProfileSession is already active in this process; stop it before starting "
          "another");
    }
    window_.pid = ::getpid();
    window_.process_name = detail::process_name();
    window_.worker_name =
        opts_.worker_name.empty() ? detail::default_worker_name() : opts_.worker_name;
    if (opts_.distributed && opts_.worker_name.empty())
      window_.worker_name += "_rank" + std::to_string(opts_.distributed->rank);
    window_.distributed = opts_.distributed;
    // Options::report: the report is one more handler, its summary through the log.
    report_ = report_handler(
        "", [log = &log_](LogLevel, const std::string& summary) { log->info(summary); });
    try {
      for (Activity a : opts_.activities) want_cuda_ |= a == Activity::CUDA;
      if (want_cuda_) {
        gpu_ = detail::make_gpu_backend(detail::gpu_options(opts_));
        gpu_reason_ = gpu_->unavailable_reason();
        if (!gpu_reason_.empty()) {
          warning(StatusCode::kUnavailable, "CUDA activity requested but not available: " +
                                                gpu_reason_ + "; recording CPU activity only");
          gpu_.reset();
        }
      }
      if (opts_.flight_recorder.enabled) start_flight();
      cuda_memory_ = std::make_unique<detail::CudaMemoryHistory>(
          opts_.cuda_memory_history, window_.worker_name, log_,
          detail::make_session_cuda_allocator_api());
      cuda_memory_->start();
      triggers_ = std::make_unique<detail::TriggerPoller>(
          opts_.trigger_file, opts_.trigger_check_interval_ms, opts_.trigger_signal);
      poll_triggers();  // a request already in the file is taken at step 0
      action_ = schedule_.action(step_num_, nullptr);
      transition(ProfilerAction::NONE, action_);
      begin_step_range();
    } catch (...) {
      teardown();
      g_session_active.store(false);
      throw;
    }
  }

  ~SessionImpl() {
    try {
      stop();
    } catch (...) {
      // stop() reports through the log; nothing may escape a destructor.
    }
  }

  void step() {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    if (stopped_) return;
    try {
      end_step_range();
      flight_.step(step_num_);
      ProfilerAction prev = action_;
      ++step_num_;
      poll_triggers();
      bool demand_over = false;
      action_ = schedule_.action(step_num_, &demand_over);
      if (demand_over) {
        // The asked-for window is saved and its capture taken down before the schedule's own
        // actions resume with the session's options.
        transition(prev, ProfilerAction::NONE);
        prev = ProfilerAction::NONE;
      }
      transition(prev, action_);
      begin_step_range();
    } catch (const std::exception& e) {
      error(StatusCode::kInternal, std::string("step() failed: ") + e.what());
    } catch (...) {
      error(StatusCode::kInternal, "step() failed with an unknown exception");
    }
  }

  Status stop() {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    if (!stopped_) {
      stopped_ = true;
      try {
        end_step_range();
        // torch.profiler's exit: a window in progress is stopped and handed to the handlers;
        // a warmup is stopped without a trace.
        if (window_open_) close_window(/*save=*/true);
      } catch (const std::exception& e) {
        error(StatusCode::kInternal, std::string("stop() failed: ") + e.what());
      } catch (...) {
        error(StatusCode::kInternal, "stop() failed with an unknown exception");
      }
      teardown();
      delivery_.finish();
      g_session_active.store(false);
    }
    return log_.status();
  }

  int64_t step_num() const { return step_num_; }
  ProfilerAction action() const { return action_; }
  bool active() const { return !stopped_; }
  const Trace* last_trace() const { return last_trace_.get(); }
  Status status() const { return log_.status(); }

 private:
  // ---- the flight recorder ----

  void start_flight() {
    detail::flight::Identity id;
    id.worker = window_.worker_name;
    if (opts_.distributed) {
      id.rank = opts_.distributed->rank;
      id.world_size = opts_.distributed->world_size;
      id.backend = opts_.distributed->backend;
    }
    // Its messages come from the watchdog's thread and flight_dump()'s callers too: through
    // the session's log, which takes them one at a time, while the session runs.
    std::vector<detail::Status> warnings;
    flight_.start(
        opts_.flight_recorder, id,
        [log = &log_](LogLevel level, const std::string& message) {
          log->warning(detail::Status(StatusCode::kAborted, message));
        },
        &warnings);
    for (const detail::Status& w : warnings) log_.warning(w);
  }

  // ---- on demand ----

  void poll_triggers() {
    std::vector<detail::Status> warnings;
    const auto request = triggers_->poll(&warnings);
    for (const detail::Status& w : warnings) log_.warning(w);
    if (!request) return;
    const detail::Trigger& t = request->trigger;
    const std::string source = request->source;
    const bool signalled = source == "signal";
    // The flight recorder's dump is written by its watchdog, not in step().
    if (t.dump || (signalled && flight_.running())) {
      if (flight_.running())
        flight_.request(signalled ? detail::flight::Reason::kSignal
                                  : detail::flight::Reason::kTriggerFile);
      else
        warning(StatusCode::kFailedPrecondition,
                "on-demand request (" + source + ") asks for a flight recorder dump (DUMP=1), "
                "but no flight recorder runs (Options.flight_recorder)");
    }
    if (t.empty && !signalled) return;  // DUMP=1 alone: no window
    const auto start = schedule_.arm(t, step_num_, installed_);
    if (!start.ok()) {
      warning(start.status().code(), "on-demand request (" + source + ") at step " +
                                         std::to_string(step_num_) +
                                         " refused: " + start.status().message());
      return;
    }
    if (window_handlers(schedule_.next_window()).empty())
      warning(StatusCode::kFailedPrecondition,
              "on-demand window (" + source +
                  "): no OUTPUT and no trace handler; only last_trace() will hold it");
    log_.info("on-demand window (" + source + ", seen at step " + std::to_string(step_num_) +
              "): steps " + std::to_string(*start) + ".." + std::to_string(*start + t.steps - 1) +
              (t.output.empty() ? "" : " to " + t.output));
  }

  // ---- the window: the schedule's state changes carried out ----

  void transition(ProfilerAction prev, ProfilerAction cur) {
    const detail::Transition t = detail::plan_transition(prev, cur, step_num_, installed_);
    if (t.warning) log_.warning(*t.warning);
    if (t.close) close_window(t.save);
    if (t.uninstall) uninstall();
    if (t.install) install();
    if (t.open) open_window();
    // A new warmup after a saved window: records from here on are discarded again.
    if (t.rewarm) detail::Recorder::get().begin_window(opts_.max_event_memory_bytes);
  }

  void install() {
    auto& rec = detail::Recorder::get();
    if (gpu_) {
      const detail::Status enabled = gpu_->enable();
      if (enabled.ok()) {
        rec.set_correlation_hooks(gpu_->push_hook(), gpu_->pop_hook());
      } else {
        gpu_reason_ = enabled.message();
        warning(enabled.code(), "CUDA activity could not be enabled: " + gpu_reason_ +
                                    "; recording CPU activity only");
        gpu_.reset();
      }
    }
    // A window's options hold from its install (warmup) to its close.
    window_.options = schedule_.next_window();
    const detail::WindowOptions& w = window_.options;
    cuda_memory_->window_installed(w.cuda_memory);
    detail::CaptureOptions capture;
    capture.inputs = w.record_shapes || w.with_flops;
    capture.inputs_for_flops_only = w.with_flops && !w.record_shapes;
    capture.stacks = w.with_stack;
    capture.memory = w.profile_memory;
    capture.stack_depth = opts_.max_stack_depth;
    rec.install(capture);
    rec.begin_window(opts_.max_event_memory_bytes);  // warmup: recorded, then discarded
    installed_ = true;
    calibrate();
  }

  // ptprof's own cost with this window's options, timed now that its callbacks are in: the
  // calibration's ops fall into the warmup that the window's start discards.
  void calibrate() {
    window_.cost.reset();
    try {
      window_.cost = detail::calibrate_op_cost();
      if (gpu_) window_.cost->launch_ns = gpu_->launch_cost_ns();
    } catch (const std::exception& e) {
      warning(StatusCode::kInternal,
              std::string("ptprof's own cost could not be calibrated: ") + e.what() +
                  "; the trace has no ptprof_cost");
    }
  }

  void uninstall() {
    auto& rec = detail::Recorder::get();
    rec.uninstall();
    rec.set_correlation_hooks(nullptr, nullptr);
    rec.discard_window();
    if (gpu_) gpu_->disable();
    installed_ = false;
  }

  void open_window() {
    window_.unix_offset_ns = detail::measure_unix_offset_ns();
    detail::Recorder::get().begin_window(opts_.max_event_memory_bytes);
    window_.start_ns = detail::now_ns();
    if (gpu_) gpu_->begin_window(window_.start_ns);
    window_open_ = true;
    window_.steps.clear();
  }

  void close_window(bool save) {
    window_open_ = false;
    window_.end_ns = detail::now_ns();
    const int64_t close_start = window_.end_ns;
    detail::Collected collected = detail::Recorder::get().end_window();
    // The allocator's state as the window ends, before its trace is built.
    std::shared_ptr<const std::string> snapshot =
        cuda_memory_->window_closed(window_.options.cuda_memory, save);
    if (!save) {
      if (gpu_) gpu_->begin_window(window_.end_ns);  // drop GPU records of the discarded window
      return;
    }
    // The previous trace ends here (last_trace() is valid until the next window ends), before
    // the new one is built, so the two are not both held for the budget's sake.
    last_trace_.reset();
    std::vector<TraceHandlerPtr> handlers = window_handlers(window_.options);
    if (snapshot) {
      if (handlers.empty() && opts_.cuda_memory_history.dir.empty()) {
        warning(StatusCode::kFailedPrecondition,
                "window " + std::to_string(window_.index) +
                    ": no trace handler and no Options.cuda_memory_history.dir, so its CUDA "
                    "memory snapshot is not written");
      } else {
        // After the trace handlers (it goes beside their files), before the report.
        const std::size_t at = handlers.size() - (window_.options.report ? 1 : 0);
        handlers.insert(handlers.begin() + static_cast<std::ptrdiff_t>(at),
                        cuda_memory_->snapshot_handler(std::move(snapshot)));
      }
    }
    if (!handlers.empty()) delivery_.wait_for_room();
    window_.gpu_unavailable.reset();
    if (want_cuda_ && !gpu_) window_.gpu_unavailable = gpu_reason_;
    auto trace = std::make_shared<Trace>();
    detail::assemble_trace(collected, window_, symbolizer_, *trace);
    collected = detail::Collected();  // the records go before the GPU's events come
    if (trace->dropped_events > 0 && !warned_drops_) {
      warned_drops_ = true;
      warning(StatusCode::kResourceExhausted,
              std::to_string(trace->dropped_events) + " events of window " +
                  std::to_string(window_.index) +
                  " were dropped: it outgrew Options.max_event_memory_bytes (" +
                  std::to_string(opts_.max_event_memory_bytes) +
                  " bytes); each trace's metadata has its count (ptprof_dropped_events)");
    }
    if (gpu_) {
      std::vector<detail::Status> warnings;
      gpu_->end_window(window_.start_ns, window_.end_ns, window_.unix_offset_ns, *trace, &warnings);
      for (const detail::Status& w : warnings) log_.warning(w);
    }
    detail::finish_trace(*trace);
    if (window_.cost) {
      ProfilerCost cost = *window_.cost;
      cost.close_ns = detail::now_ns() - close_start;
      set_profiler_cost(*trace, cost);
    }
    last_trace_ = trace;
    ++window_.index;
    if (!handlers.empty()) delivery_.deliver(std::move(trace), std::move(handlers));
  }

  // Where a window's trace goes: its handlers, and the report after them.
  std::vector<TraceHandlerPtr> window_handlers(const detail::WindowOptions& w) const {
    std::vector<TraceHandlerPtr> handlers = w.handlers;
    if (w.report) handlers.push_back(report_);
    return handlers;
  }

  void begin_step_range() {
    if (!schedule_.marks_steps()) return;
    // Created after the transition, so the first step of a window is inside it.
    step_rf_ = std::make_unique<at::RecordFunction>(at::RecordScope::USER_SCOPE);
    if (step_rf_->isActive()) step_rf_->before("ProfilerStep#" + std::to_string(step_num_));
    if (window_open_) window_.steps.push_back(step_num_);
  }

  void end_step_range() { step_rf_.reset(); }

  void teardown() {
    triggers_.reset();  // the signal goes back to its previous handler
    step_rf_.reset();
    if (installed_) uninstall();
    if (cuda_memory_) cuda_memory_->stop();
    flight_.stop();
  }

  void error(StatusCode code, std::string msg) { log_.error(detail::Status(code, std::move(msg))); }
  void warning(StatusCode code, std::string msg) {
    log_.warning(detail::Status(code, std::move(msg)));
  }

  std::vector<detail::Status> env_warnings_;  // before opts_: with_environment fills it
  Options opts_;
  detail::SessionLog log_;
  detail::WindowSchedule schedule_;
  detail::TraceDelivery delivery_;  // after log_, which it reports to
  TraceHandlerPtr report_;          // Options::report's handler
  // step() and stop(). Recursive: a trace handler that step() runs on this thread (without
  // write_in_background) may call into the session.
  mutable std::recursive_mutex mu_;
  bool want_cuda_ = false;
  std::unique_ptr<detail::GpuBackend> gpu_;
  std::string gpu_reason_;
  std::unique_ptr<detail::TriggerPoller> triggers_;
  detail::FlightStage flight_;
  std::unique_ptr<detail::CudaMemoryHistory> cuda_memory_;
  detail::Symbolizer symbolizer_;  // its symbol tables are loaded once, for every window

  int64_t step_num_ = 0;
  ProfilerAction action_ = ProfilerAction::NONE;
  bool installed_ = false;
  bool window_open_ = false;
  bool stopped_ = false;
  bool warned_drops_ = false;
  detail::WindowInfo window_;  // of the window being captured, from its install to its close
  std::unique_ptr<at::RecordFunction> step_rf_;
  std::shared_ptr<Trace> last_trace_;
};

ProfileSession::ProfileSession(Options options)
    : impl_(std::make_unique<SessionImpl>(std::move(options))) {}
ProfileSession::~ProfileSession() = default;
ProfileSession::ProfileSession(ProfileSession&&) noexcept = default;
ProfileSession& ProfileSession::operator=(ProfileSession&& other) noexcept {
  if (this != &other) {
    impl_.reset();  // stops this session first
    impl_ = std::move(other.impl_);
  }
  return *this;
}

void ProfileSession::step() {
  if (impl_) impl_->step();
}
Status ProfileSession::stop() {
  return impl_ ? impl_->stop() : Status{};
}
int64_t ProfileSession::step_num() const {
  return impl_ ? impl_->step_num() : 0;
}
ProfilerAction ProfileSession::current_action() const {
  return impl_ ? impl_->action() : ProfilerAction::NONE;
}
bool ProfileSession::active() const {
  return impl_ && impl_->active();
}
const Trace* ProfileSession::last_trace() const {
  return impl_ ? impl_->last_trace() : nullptr;
}
KeyAverages ProfileSession::key_averages(bool group_by_input_shape) const {
  const Trace* t = last_trace();
  return t ? t->key_averages(group_by_input_shape) : KeyAverages{};
}
Status ProfileSession::status() const {
  return impl_ ? impl_->status() : Status{};
}

}  // namespace ptprof
