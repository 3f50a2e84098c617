#include "ptprof/session.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

#include <ATen/record_function.h>

#include "gpu/gpu_backend.h"
#include "ptprof/error.h"
#include "ptprof/report.h"
#include "recording/details.h"
#include "recording/on_demand.h"
#include "recording/recorder.h"
#include "recording/stack_capture.h"
#include "recording/symbolizer.h"
#include "trace/clock.h"
#include "trace/collectives.h"
#include "trace/flops.h"
#include "trace/handlers.h"
#include "trace/json_writer.h"
#include "trace/process_info.h"

namespace ptprof {

namespace {

std::atomic<bool> g_session_active{false};

// Options::trigger_signal: the handler only sets this flag; step() acts on it.
std::atomic<bool> g_trigger_signalled{false};
static_assert(std::atomic<bool>::is_always_lock_free);
extern "C" void on_trigger_signal(int) {
  g_trigger_signalled.store(true);
}

const char* env_value(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : nullptr;
}

bool env_flag(const char* name) {
  const char* v = env_value(name);
  if (v == nullptr) return false;
  const std::string s(v);
  if (s == "1" || s == "true") return true;
  if (s == "0" || s == "false") return false;
  throw Error(std::string("ptprof: ") + name + " must be 0 or 1 (got \"" + s + "\")");
}

// PTPROF_SCHEDULE=W,U,A[,R[,S]]: wait, warmup, active, repeat, skip_first.
Schedule schedule_from_env(const std::string& text) {
  std::vector<int64_t> v;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const std::size_t comma = std::min(text.find(',', pos), text.size());
    const std::string part = text.substr(pos, comma - pos);
    char* end = nullptr;
    errno = 0;
    const long long n = std::strtoll(part.c_str(), &end, 10);
    if (part.empty() || *end != '\0' || errno != 0 || n < 0)
      throw Error(
          "ptprof: PTPROF_SCHEDULE must be wait,warmup,active[,repeat[,skip_first]] "
          "in whole numbers (got \"" +
          text + "\")");
    v.push_back(n);
    pos = comma + 1;
  }
  if (v.size() < 3 || v.size() > 5)
    throw Error("ptprof: PTPROF_SCHEDULE must be wait,warmup,active[,repeat[,skip_first]] (got \"" +
                text + "\")");
  Schedule sch;
  sch.wait = v[0];
  sch.warmup = v[1];
  sch.active = v[2];
  if (v.size() > 3) sch.repeat = v[3];
  if (v.size() > 4) sch.skip_first = v[4];
  return sch;
}

// The rank and world size a launcher put in the environment (options.h lists the pairs, in
// order). Not ptprof's variables: one that is not a number is a warning, and the pair ignored.
std::optional<DistributedInfo> distributed_from_environment() {
  static const char* const kPairs[][2] = {{"RANK", "WORLD_SIZE"},
                                          {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
                                          {"PMI_RANK", "PMI_SIZE"},
                                          {"SLURM_PROCID", "SLURM_NTASKS"}};
  for (const auto& pair : kPairs) {
    const char* rank = env_value(pair[0]);
    const char* size = env_value(pair[1]);
    if (rank == nullptr || size == nullptr) continue;
    auto number = [](const char* v, int64_t* out) {
      char* end = nullptr;
      errno = 0;
      const long long n = std::strtoll(v, &end, 10);
      if (*v == '\0' || *end != '\0' || errno != 0 || n < 0) return false;
      *out = n;
      return true;
    };
    DistributedInfo d;
    if (!number(rank, &d.rank) || !number(size, &d.world_size) || d.rank >= d.world_size) {
      std::fprintf(stderr,
                   "[ptprof] warning: %s=\"%s\" and %s=\"%s\" are not a rank and a world size; "
                   "no distributedInfo from them\n",
                   pair[0], rank, pair[1], size);
      continue;
    }
    return d;
  }
  return std::nullopt;
}

// What the environment fills in: only what the Options leave unset (options.h).
Options with_environment(Options o) {
  if (const char* v = env_value("PTPROF_LOGDIR"); v != nullptr && o.on_trace_ready.empty())
    o.on_trace_ready.push_back(tensorboard_trace_handler(v));
  if (const char* v = env_value("PTPROF_SCHEDULE"); v != nullptr && !o.schedule)
    o.schedule = schedule_from_env(v);
  if (const char* v = env_value("PTPROF_TRIGGER_FILE"); v != nullptr && o.trigger_file.empty())
    o.trigger_file = v;
  if (const char* v = env_value("PTPROF_TRIGGER_SIGNAL"); v != nullptr && o.trigger_signal == 0) {
    o.trigger_signal = detail::signal_number(v);
    if (o.trigger_signal == 0)
      throw Error(
          std::string("ptprof: PTPROF_TRIGGER_SIGNAL names no signal ptprof takes (got \"") + v +
          "\"; SIGUSR1, SIGUSR2, SIGHUP, SIGURG or a number)");
  }
  if (env_flag("PTPROF_ON_DEMAND_ONLY")) o.on_demand_only = true;
  if (!o.distributed) o.distributed = distributed_from_environment();
  return o;
}

bool recording(ProfilerAction a) {
  return a == ProfilerAction::RECORD || a == ProfilerAction::RECORD_AND_SAVE;
}

void warn(const std::string& msg) {
  std::fprintf(stderr, "[ptprof] warning: %s\n", msg.c_str());
}

std::string json_string(const std::string& s) {
  std::string out;
  detail::JsonWriter::escape_into(out, s);
  return out;
}

// distributedInfo as torch.profiler writes it (json.dumps of a dict: ", " and ": " spacing,
// which HTA's rank regex needs), with the keys in its order.
std::string distributed_info_json(const DistributedInfo& d) {
  std::string s = "{";
  if (!d.backend.empty()) s += "\"backend\": " + json_string(d.backend) + ", ";
  s += "\"rank\": " + std::to_string(d.rank) + ", \"world_size\": " + std::to_string(d.world_size);
  if (!d.groups.empty()) {
    s += ", \"pg_count\": " + std::to_string(d.groups.size()) + ", \"pg_config\": [";
    for (std::size_t i = 0; i < d.groups.size(); ++i) {
      const ProcessGroupInfo& g = d.groups[i];
      s += (i ? ", " : "");
      s += "{\"pg_name\": " + json_string(g.name) + ", \"pg_desc\": " + json_string(g.desc) +
           ", \"backend_config\": " + json_string(g.backend_config) +
           ", \"pg_size\": " + std::to_string(g.size) + ", \"ranks\": [";
      for (std::size_t k = 0; k < g.ranks.size(); ++k)
        s += (k ? ", " : "") + std::to_string(g.ranks[k]);
      s += "]}";
    }
    s += "]";
  }
  if (!d.nccl_version.empty()) s += ", \"nccl_version\": " + json_string(d.nccl_version);
  return s + "}";
}

}  // namespace

std::string Status::message() const {
  std::string m;
  for (const auto& e : errors) m += (m.empty() ? "" : "\n") + std::string("error: ") + e;
  for (const auto& w : warnings) m += (m.empty() ? "" : "\n") + std::string("warning: ") + w;
  return m;
}

class SessionImpl {
 public:
  explicit SessionImpl(Options options) : opts_(with_environment(std::move(options))) {
    validate();
    bool expected = false;
    if (!g_session_active.compare_exchange_strong(expected, true)) {
      throw Error(
          "ptprof: a ProfileSession is already active in this process; stop it before starting "
          "another");
    }
    pid_ = ::getpid();
    process_name_ = detail::process_name();
    worker_name_ = opts_.worker_name.empty() ? detail::default_worker_name() : opts_.worker_name;
    if (opts_.distributed) {
      const DistributedInfo& d = *opts_.distributed;
      if (opts_.worker_name.empty()) worker_name_ += "_rank" + std::to_string(d.rank);
      // Spaced as Python's json.dumps spaces it: HTA finds the rank with "rank":\s+(\d+).
      distributed_info_ = distributed_info_json(d);
    }
    try {
      for (Activity a : opts_.activities) want_cuda_ |= a == Activity::CUDA;
      if (want_cuda_) {
        detail::GpuOptions gpu_opts;
        gpu_opts.buffer_size_bytes = opts_.gpu_buffer_bytes;
        gpu_opts.max_buffer_bytes = opts_.max_gpu_buffer_bytes;
        gpu_ = detail::make_gpu_backend(gpu_opts);
        gpu_reason_ = gpu_->unavailable_reason();
        if (!gpu_reason_.empty()) {
          report_warning("CUDA activity requested but not available: " + gpu_reason_ +
                         "; recording CPU activity only");
          gpu_.reset();
        }
      }
      start_triggers();
      poll_trigger();  // a request already in the file is taken at step 0
      action_ = current_schedule_action(nullptr);
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
      // stop() reports through Status; nothing may escape a destructor.
    }
  }

  void step() {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    if (stopped_) return;
    try {
      end_step_range();
      ProfilerAction prev = action_;
      ++step_num_;
      poll_trigger();
      bool demand_over = false;
      action_ = current_schedule_action(&demand_over);
      if (demand_over) {
        // The asked-for window is saved and its capture taken down before the schedule's own
        // actions resume with the session's options.
        transition(prev, ProfilerAction::NONE);
        prev = ProfilerAction::NONE;
      }
      transition(prev, action_);
      begin_step_range();
    } catch (const std::exception& e) {
      report_error(std::string("step() failed: ") + e.what());
    } catch (...) {
      report_error("step() failed with an unknown exception");
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
        report_error(std::string("stop() failed: ") + e.what());
      } catch (...) {
        report_error("stop() failed with an unknown exception");
      }
      teardown();
      drain_writer(/*quit=*/true);
      g_session_active.store(false);
    }
    return status_;
  }

  int64_t step_num() const { return step_num_; }
  ProfilerAction action() const { return action_; }
  bool active() const { return !stopped_; }
  const Trace* last_trace() const { return last_trace_.get(); }
  Status status() const {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    {
      std::lock_guard<std::mutex> wlock(writer_mu_);
      collect_writer_errors_locked();
    }
    return status_;
  }

 private:
  void validate() const {
    if (opts_.schedule) opts_.schedule->validate();
    if (opts_.distributed) {
      const DistributedInfo& d = *opts_.distributed;
      if (d.rank < 0 || d.world_size < 1 || d.rank >= d.world_size)
        throw Error("ptprof: Options.distributed needs 0 <= rank < world_size (got rank " +
                    std::to_string(d.rank) + ", world_size " + std::to_string(d.world_size) + ")");
    }
    if (opts_.activities.empty())
      throw Error(
          "ptprof: Options.activities is empty; ask for Activity::CPU and/or Activity::CUDA");
    for (std::size_t i = 0; i < opts_.on_trace_ready.size(); ++i) {
      if (!opts_.on_trace_ready[i])
        throw Error("ptprof: Options.on_trace_ready[" + std::to_string(i) + "] is null");
    }
    if (opts_.max_event_memory_bytes < (std::size_t{1} << 20))
      throw Error("ptprof: Options.max_event_memory_bytes must be >= 1 MiB (got " +
                  std::to_string(opts_.max_event_memory_bytes) + ")");
    if (opts_.gpu_buffer_bytes < (std::size_t{64} << 10) || opts_.gpu_buffer_bytes % 8 != 0)
      throw Error("ptprof: Options.gpu_buffer_bytes must be a multiple of 8 and >= 64 KiB (got " +
                  std::to_string(opts_.gpu_buffer_bytes) + ")");
    if (opts_.max_gpu_buffer_bytes < opts_.gpu_buffer_bytes)
      throw Error("ptprof: Options.max_gpu_buffer_bytes must be >= Options.gpu_buffer_bytes (got " +
                  std::to_string(opts_.max_gpu_buffer_bytes) + ")");
    if (opts_.max_stack_depth < 1 || opts_.max_stack_depth > 250)
      throw Error("ptprof: Options.max_stack_depth must be in [1, 250] (got " +
                  std::to_string(opts_.max_stack_depth) + ")");
    if (opts_.trigger_check_interval_ms < 0)
      throw Error("ptprof: Options.trigger_check_interval_ms must be >= 0 (got " +
                  std::to_string(opts_.trigger_check_interval_ms) + ")");
    if (opts_.trigger_signal < 0 || opts_.trigger_signal >= NSIG ||
        opts_.trigger_signal == SIGKILL || opts_.trigger_signal == SIGSTOP ||
        opts_.trigger_signal == SIGSEGV || opts_.trigger_signal == SIGBUS ||
        opts_.trigger_signal == SIGFPE || opts_.trigger_signal == SIGILL ||
        opts_.trigger_signal == SIGABRT)
      throw Error(
          "ptprof: Options.trigger_signal must be 0 or a signal a program may take for "
          "itself, such as SIGUSR1 (got " +
          std::to_string(opts_.trigger_signal) + ")");
  }

  // The action of the step about to run. A window asked for on demand comes first; when it is
  // over, *demand_over is set and the schedule (or, on_demand_only, nothing) takes over.
  ProfilerAction current_schedule_action(bool* demand_over) {
    if (demand_) {
      const int a = detail::demand_action(*demand_, demand_start_, step_num_);
      if (a != 4) return static_cast<ProfilerAction>(a);  // 0..3 are NONE..RECORD_AND_SAVE
      demand_.reset();
      if (demand_over != nullptr) *demand_over = true;
    }
    if (opts_.on_demand_only) return ProfilerAction::NONE;
    return opts_.schedule ? opts_.schedule->action(step_num_) : ProfilerAction::RECORD;
  }

  // ---- on demand ----

  void start_triggers() {
    if (opts_.trigger_signal != 0) {
      struct sigaction sa {};
      sa.sa_handler = on_trigger_signal;
      sigemptyset(&sa.sa_mask);
      sa.sa_flags = SA_RESTART;
      g_trigger_signalled.store(false);
      if (::sigaction(opts_.trigger_signal, &sa, &old_sigaction_) != 0)
        throw Error("ptprof: cannot take signal " + std::to_string(opts_.trigger_signal) + ": " +
                    std::strerror(errno));
      signal_taken_ = true;
    }
  }

  void stop_triggers() {
    if (signal_taken_) {
      ::sigaction(opts_.trigger_signal, &old_sigaction_, nullptr);
      signal_taken_ = false;
    }
  }

  // Looks at the trigger file (at most every trigger_check_interval_ms, at once after the
  // signal) and arms a window when it changed and asks for one.
  void poll_trigger() {
    const bool signalled = signal_taken_ && g_trigger_signalled.exchange(false);
    if (opts_.trigger_file.empty() && !signalled) return;
    if (!signalled) {
      const int64_t now = detail::now_ns();
      if (now < next_trigger_check_ns_) return;
      next_trigger_check_ns_ = now + opts_.trigger_check_interval_ms * 1000000;
    }
    detail::Trigger t;
    const char* source = signalled ? "signal" : "trigger file";
    if (!opts_.trigger_file.empty()) {
      struct stat st {};
      if (::stat(opts_.trigger_file.c_str(), &st) != 0) {
        trigger_seen_ = false;  // a file made again later is a new request
        if (!signalled) return;
      } else {
        const TriggerKey key{
            static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino),
            static_cast<int64_t>(st.st_size),
            static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec};
        if (trigger_seen_ && key == trigger_key_ && !signalled) return;
        trigger_key_ = key;
        trigger_seen_ = true;
        std::string text;
        if (!read_small_file(opts_.trigger_file, &text)) {
          report_warning("trigger file " + opts_.trigger_file +
                         " cannot be read: " + std::strerror(errno) + "; ignored");
          return;
        }
        const std::string err = detail::parse_trigger(text, &t);
        if (!err.empty()) {
          report_warning("trigger file " + opts_.trigger_file + ": " + err + "; ignored");
          return;
        }
        if (t.empty && !signalled) return;  // an emptied file asks for nothing
      }
    }
    arm(t, source);
  }

  static bool read_small_file(const std::string& path, std::string* out) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    char buf[4096];
    for (;;) {
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0 || out->size() > (64 << 10)) {
        const int saved = errno;
        ::close(fd);
        errno = saved;
        return n == 0 || out->size() > (64 << 10);
      }
      out->append(buf, static_cast<std::size_t>(n));
    }
  }

  void arm(const detail::Trigger& t, const char* source) {
    const std::string when = " at step " + std::to_string(step_num_);
    if (demand_ || installed_) {
      report_warning(std::string("on-demand request (") + source + ")" + when +
                     " refused: a window is being recorded");
      return;
    }
    const int64_t start = detail::first_active_step(t, step_num_);
    if (start < 0) {
      report_warning(std::string("on-demand request (") + source + ")" + when +
                     " refused: START_STEP " + std::to_string(*t.start_step) + " has passed");
      return;
    }
    WindowOptions w = base_window();
    if (t.record_shapes) w.record_shapes = *t.record_shapes;
    if (t.profile_memory) w.profile_memory = *t.profile_memory;
    if (t.with_stack) w.with_stack = *t.with_stack;
    if (t.with_flops) w.with_flops = *t.with_flops;
    if (t.report) w.report = *t.report;
    if (!t.output.empty()) w.handlers = {tensorboard_trace_handler(t.output)};
    if (w.handlers.empty() && !w.report)
      report_warning(std::string("on-demand window (") + source +
                     "): no OUTPUT and no trace handler; only last_trace() will hold it");
    demand_ = t;
    demand_start_ = start;
    demand_window_ = std::move(w);
    std::fprintf(stderr, "[ptprof] on-demand window (%s, seen at step %lld): steps %lld..%lld%s\n",
                 source, static_cast<long long>(step_num_), static_cast<long long>(start),
                 static_cast<long long>(start + t.steps - 1),
                 t.output.empty() ? "" : (" to " + t.output).c_str());
  }

  // The options of a window: the session's, or an on-demand request's.
  struct WindowOptions {
    bool record_shapes = false, profile_memory = false, with_stack = false, with_flops = false;
    bool report = false;
    std::vector<TraceHandlerPtr> handlers;
  };
  WindowOptions base_window() const {
    return {opts_.record_shapes, opts_.profile_memory, opts_.with_stack,
            opts_.with_flops,    opts_.report,         opts_.on_trace_ready};
  }

  // torch.profiler's action map, expressed as what must change between two actions.
  void transition(ProfilerAction prev, ProfilerAction cur) {
    if (recording(prev) && (!recording(cur) || prev == ProfilerAction::RECORD_AND_SAVE)) {
      const bool save = prev == ProfilerAction::RECORD_AND_SAVE;
      if (!save) {
        report_warning("incorrect schedule: step " + std::to_string(step_num_) + " is " +
                       to_string(cur) + " right after RECORD; the window is discarded");
      }
      close_window(save);
    }
    if (cur == ProfilerAction::NONE) {
      if (prev == ProfilerAction::WARMUP)
        report_warning("incorrect schedule: WARMUP followed by NONE; nothing recorded");
      if (installed_) uninstall();
      return;
    }
    if (!installed_) install();
    if (recording(cur) && !window_open_) {
      open_window();
    } else if (cur == ProfilerAction::WARMUP && prev != ProfilerAction::WARMUP) {
      // A new warmup after a saved window: records from here on are discarded again.
      detail::Recorder::get().begin_window(opts_.max_event_memory_bytes);
    }
  }

  void install() {
    auto& rec = detail::Recorder::get();
    if (gpu_) {
      std::string err;
      if (gpu_->enable(&err)) {
        rec.set_correlation_hooks(gpu_->push_hook(), gpu_->pop_hook());
      } else {
        gpu_reason_ = err;
        report_warning("CUDA activity could not be enabled: " + err +
                       "; recording CPU activity only");
        gpu_.reset();
      }
    }
    // A window's options hold from its install (warmup) to its close.
    win_ = demand_ ? demand_window_ : base_window();
    detail::CaptureOptions capture;
    capture.inputs = win_.record_shapes || win_.with_flops;
    capture.inputs_for_flops_only = win_.with_flops && !win_.record_shapes;
    capture.stacks = win_.with_stack;
    capture.memory = win_.profile_memory;
    capture.stack_depth = opts_.max_stack_depth;
    rec.install(capture);
    rec.begin_window(opts_.max_event_memory_bytes);  // warmup: recorded, then discarded
    installed_ = true;
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
    unix_offset_ns_ = detail::measure_unix_offset_ns();
    detail::Recorder::get().begin_window(opts_.max_event_memory_bytes);
    window_start_ = detail::now_ns();
    if (gpu_) gpu_->begin_window(window_start_);
    window_open_ = true;
    window_steps_.clear();
  }

  void close_window(bool save) {
    window_open_ = false;
    const int64_t end = detail::now_ns();
    detail::Collected collected = detail::Recorder::get().end_window();
    if (!save) {
      if (gpu_) gpu_->begin_window(end);  // drop GPU records of the discarded window
      return;
    }
    // The previous trace ends here (last_trace() is valid until the next window ends), before
    // the new one is built, so the two are not both held for the budget's sake.
    last_trace_.reset();
    const bool outputs = !win_.handlers.empty() || win_.report;
    const bool background = opts_.write_in_background && outputs;
    if (background) {
      // Back-pressure, before building: the writer holds at most one trace (the one it is
      // writing) while this one is built, however slow the disk is.
      std::unique_lock<std::mutex> lock(writer_mu_);
      if (!writer_.joinable()) writer_ = std::thread([this] { writer_loop(); });
      writer_cv_.wait(lock, [this] { return pending_ == nullptr; });
    }
    auto trace = std::make_shared<Trace>();
    build_trace(collected, end, *trace);
    if (gpu_) {
      std::vector<std::string> warnings;
      gpu_->end_window(window_start_, end, unix_offset_ns_, *trace, &warnings);
      for (auto& w : warnings) report_warning(w);
    }
    trace->rebuild_tree();
    trace->attribute_memory();
    detail::share_collectives_with_kernels(*trace);
    last_trace_ = trace;
    ++window_index_;
    if (!outputs) return;
    if (!background) {
      for (auto& e : run_handlers(*trace, win_)) report_error(e);
      return;
    }
    std::lock_guard<std::mutex> lock(writer_mu_);
    pending_ = std::move(trace);  // still empty: only this thread fills it
    pending_window_ = win_;
    writer_cv_.notify_all();
  }

  // Runs every handler on `trace`; returns the failures, each naming the handler and reason.
  std::vector<std::string> run_handlers(const Trace& trace, const WindowOptions& w) {
    std::vector<std::string> errors;
    for (std::size_t i = 0; i < w.handlers.size(); ++i) {
      try {
        w.handlers[i]->handle(trace);
      } catch (const std::exception& e) {
        errors.push_back(std::string("trace handler ") + std::to_string(i) +
                         " failed: " + e.what());
      } catch (...) {
        errors.push_back("trace handler " + std::to_string(i) +
                         " failed with an unknown exception");
      }
    }
    if (w.report) write_report(trace, w.handlers, &errors);
    return errors;
  }

  // Options::report: the report printed, and saved beside each trace file the handlers wrote.
  void write_report(const Trace& trace, const std::vector<TraceHandlerPtr>& handlers,
                    std::vector<std::string>* errors) {
    try {
      const Report report(trace);
      std::cout << report.summary() << std::flush;
      for (const TraceHandlerPtr& h : handlers) {
        const auto* file = dynamic_cast<const detail::FileTraceHandler*>(h.get());
        if (file == nullptr || file->last_path().empty()) continue;
        const std::string& path = file->last_path();
        const auto slash = path.rfind('/');
        const std::string dir =
            slash == std::string::npos ? "reports" : path.substr(0, slash) + "/reports";
        const std::string base =
            dir + "/" + path.substr(slash == std::string::npos ? 0 : slash + 1);
        if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
          throw Error("ptprof: cannot create report directory " + dir + ": " +
                      std::strerror(errno));
        report.save_json(base + ".report.json");
        report.save_html(base + ".report.html");
      }
    } catch (const std::exception& e) {
      errors->push_back(std::string("report: ") + e.what());
    }
  }

  void writer_loop() {
    std::unique_lock<std::mutex> lock(writer_mu_);
    for (;;) {
      writer_cv_.wait(lock, [this] { return pending_ != nullptr || writer_quit_; });
      if (!pending_) return;  // quit with nothing left to write
      std::shared_ptr<Trace> trace = std::move(pending_);
      pending_ = nullptr;
      const WindowOptions window = std::move(pending_window_);
      writing_ = true;
      writer_cv_.notify_all();
      lock.unlock();
      std::vector<std::string> errors = run_handlers(*trace, window);
      trace.reset();  // the window's memory goes as soon as it is written
      lock.lock();
      for (auto& e : errors) writer_errors_.push_back(std::move(e));
      writing_ = false;
      writer_cv_.notify_all();
    }
  }

  // Waits until every handed-over window is written; with `quit`, ends the writer thread.
  void drain_writer(bool quit) {
    std::unique_lock<std::mutex> lock(writer_mu_);
    if (writer_.joinable()) {
      writer_cv_.wait(lock, [this] { return pending_ == nullptr && !writing_; });
      if (quit) {
        writer_quit_ = true;
        writer_cv_.notify_all();
        lock.unlock();
        writer_.join();
        lock.lock();
      }
    }
    collect_writer_errors_locked();
  }

  void collect_writer_errors_locked() const {
    for (auto& e : writer_errors_) {
      std::fprintf(stderr, "[ptprof] error: %s\n", e.c_str());
      status_.errors.push_back(std::move(e));
    }
    writer_errors_.clear();
  }

  void build_trace(const detail::Collected& c, int64_t end, Trace& t) {
    t.pid = pid_;
    t.process_name = process_name_;
    t.worker_name = worker_name_;
    t.window_start_ns = window_start_ + unix_offset_ns_;
    t.window_end_ns = end + unix_offset_ns_;
    t.window_index = window_index_;
    t.steps = window_steps_;
    t.dropped_events = c.dropped + c.dropped_memory;
    if (t.dropped_events > 0) {
      t.dropped_by_kind = {{"cpu_op", c.dropped}, {"memory", c.dropped_memory}};
      t.metadata["ptprof_dropped_events"] = "{\"cpu_op\": " + std::to_string(c.dropped) +
                                            ", \"memory\": " + std::to_string(c.dropped_memory) +
                                            "}";
      if (!warned_drops_) {
        warned_drops_ = true;
        report_warning(std::to_string(t.dropped_events) + " events of window " +
                       std::to_string(window_index_) +
                       " were dropped: it outgrew Options.max_event_memory_bytes (" +
                       std::to_string(opts_.max_event_memory_bytes) +
                       " bytes); each trace's metadata has its count (ptprof_dropped_events)");
      }
    }
    if (want_cuda_ && !gpu_) {
      t.gpu_unavailable_reason = gpu_reason_;
      t.metadata["ptprof_gpu_unavailable"] = json_string(gpu_reason_);
    }
    if (win_.record_shapes) t.metadata["record_shapes"] = "1";
    if (win_.profile_memory) t.metadata["profile_memory"] = "1";
    if (win_.with_stack) t.metadata["with_stack"] = "1";
    if (win_.with_flops) t.metadata["with_flops"] = "1";
    // Collectives' arguments, found by their record's correlation.
    std::unordered_map<uint64_t, int32_t> collective_of;
    for (const auto& [correlation, info] : c.collectives) {
      collective_of.emplace(correlation, static_cast<int32_t>(t.collectives.size()));
      t.collectives.push_back(info);
    }
    const std::string info = window_distributed_info(t.collectives);
    if (!info.empty()) t.metadata["distributedInfo"] = info;
    DetailTables tables{{}, symbolizer_, {}};
    std::vector<std::string_view> name_views(c.names.size());
    std::vector<bool> interned(c.names.size(), false);
    std::size_t total = 0;
    for (const auto& th : c.threads) total += th.records.size();
    t.events.reserve(total);
    for (const auto& th : c.threads) {
      t.threads.push_back(ThreadInfo{th.os_tid, th.logical_tid, th.name});
      for (const detail::RawRecord& r : th.records) {
        const int64_t start = c.clock.to_ns(r.start);
        // Something that starts at the very end has no time in the window (and, cut to zero
        // length there, would not even nest in its own parent, which is cut at the same point).
        if (start < window_start_ || start >= end) continue;
        if (r.scope == detail::kScopeMemory) {
          MemoryEvent m;
          m.time_ns = start + unix_offset_ns_;
          m.pid = pid_;
          m.tid = th.os_tid;
          m.address = r.correlation;
          m.bytes = static_cast<int64_t>(r.bytes);
          m.total_allocated = r.seq_nr;
          m.total_reserved = static_cast<int64_t>(r.fwd_tid);
          m.device_type = static_cast<int8_t>(r.name_id >> 8);
          m.device_index = static_cast<int8_t>(static_cast<int>(r.name_id & 0xff) - 1);
          t.memory_events.push_back(m);
          continue;
        }
        const bool step_range = r.name_id == detail::kStepNameId;
        if (!step_range && !interned[r.name_id]) {
          name_views[r.name_id] = t.intern(c.names[r.name_id]);
          interned[r.name_id] = true;
        }
        Event e;
        e.kind = r.scope == static_cast<uint8_t>(at::RecordScope::USER_SCOPE)
                     ? EventKind::UserAnnotation
                     : EventKind::CpuOp;
        e.name = step_range ? t.intern("ProfilerStep#" + std::to_string(r.seq_nr))
                            : name_views[r.name_id];
        e.start_ns = start + unix_offset_ns_;
        // An op still running when the window closed (or that ended while it was being
        // collected) is cut at the window's end and marked unfinished, as Kineto does.
        const int64_t stop_ns = r.end != 0 ? c.clock.to_ns(r.end) : end;
        e.finished = r.end != 0 && stop_ns <= end;
        e.duration_ns = std::max<int64_t>(0, std::min(stop_ns, end) - start);
        e.pid = pid_;
        e.tid = th.os_tid;
        e.external_id = r.correlation;
        // Unique per op in the process, as RecordFunction's handle is; asking libtorch for its
        // handles (needsIds) would add a shared atomic increment to every op of every thread.
        e.record_function_id = r.correlation;
        e.sequence_nr = step_range ? -1 : r.seq_nr;
        e.fwd_thread_id = r.fwd_tid;
        e.thread_id = th.logical_tid;
        e.is_async = (r.flags & detail::kFlagAsync) != 0;
        if (!collective_of.empty()) {
          auto it = collective_of.find(r.correlation);
          if (it != collective_of.end()) e.collective = it->second;
        }
        if (r.details != detail::kNoDetails && r.details < th.details.size())
          add_details(std::string_view(th.details).substr(r.details, r.details_len), e, t, tables);
        t.events.push_back(e);
      }
    }
    // Inputs decoded only for FLOPs are not the trace's to keep.
    if (!win_.record_shapes) std::vector<std::vector<OpInput>>().swap(t.op_inputs);
  }

  // distributedInfo of a window: the Options' (a group handed in, the launcher's environment),
  // its groups completed from those the window's collectives used, as Kineto does; without
  // either, the rank and world size of the default group's collectives. Empty: none.
  std::string window_distributed_info(const std::vector<CollectiveInfo>& collectives) const {
    if (collectives.empty() || (opts_.distributed && !opts_.distributed->groups.empty()))
      return distributed_info_;
    std::vector<ProcessGroupInfo> seen;
    const CollectiveInfo* world = nullptr;
    bool nccl = false;
    for (const CollectiveInfo& c : collectives) {
      // NCCL's record_param_comms names its global ranks; c10d ops of other backends do not.
      nccl |= c.global_rank_stride >= 0;
      if (c.pg_name.empty() ||
          std::any_of(seen.begin(), seen.end(),
                      [&](const ProcessGroupInfo& g) { return g.name == c.pg_name; }))
        continue;
      ProcessGroupInfo g;
      g.name = c.pg_name;
      g.desc = c.pg_desc;
      g.size = c.group_size;
      for (const char* p = c.pg_ranks.c_str(); *p != '\0';) {
        char* end = nullptr;
        const long long r = std::strtoll(p, &end, 10);
        if (end == p) {
          ++p;
          continue;
        }
        g.ranks.push_back(r);
        p = end;
      }
      seen.push_back(std::move(g));
      if (c.pg_desc == "default_pg" && world == nullptr) world = &c;
    }
    if (seen.empty()) return distributed_info_;
    DistributedInfo d;
    if (opts_.distributed) {
      d = *opts_.distributed;
    } else if (world != nullptr && world->rank >= 0 && world->group_size > 0) {
      d.rank = world->rank;
      d.world_size = world->group_size;
    } else {
      return distributed_info_;
    }
    if (nccl) {
      if (d.backend.empty()) d.backend = "nccl";
      for (ProcessGroupInfo& g : seen) g.backend_config = "cuda:nccl";
    }
    d.groups = std::move(seen);
    return distributed_info_json(d);
  }

  // Details of a trace. Stacks: each distinct address list once, each address symbolized
  // once. Inputs: each distinct recorded inputs section (the same shapes and scalars, byte
  // for byte) decoded once, its entry of Trace::op_inputs shared by the ops that had them,
  // and its FLOPs estimated once per op name.
  struct DetailTables {
    std::map<std::vector<uint64_t>, int32_t> stacks;  // Trace::stacks
    detail::Symbolizer& symbolizer;  // the session's: loading symbol tables is paid once
    struct Inputs {
      int32_t index = -1;                                        // Trace::op_inputs
      std::vector<std::pair<std::string_view, uint64_t>> flops;  // by op name
    };
    std::unordered_map<std::string_view, Inputs> inputs;  // keys view the Collected bytes
  };

  void add_details(std::string_view bytes, Event& e, Trace& t, DetailTables& tables) {
    detail::DecodedDetails d = detail::decode_details(bytes, /*keep_inputs=*/false);
    if (d.has_inputs) {
      auto [it, inserted] = tables.inputs.try_emplace(bytes.substr(0, d.inputs_bytes));
      DetailTables::Inputs& in = it->second;
      if (inserted) {
        in.index = static_cast<int32_t>(t.op_inputs.size());
        t.op_inputs.push_back(detail::decode_details(it->first).inputs);
      }
      if (win_.record_shapes) e.inputs = in.index;
      if (win_.with_flops) {
        auto f = std::find_if(in.flops.begin(), in.flops.end(),
                              [&](const auto& p) { return p.first == e.name; });
        if (f == in.flops.end()) {
          in.flops.emplace_back(e.name, detail::estimate_flops(e.name, t.op_inputs[in.index]));
          f = in.flops.end() - 1;
        }
        e.flops = f->second;
      }
    }
    if (!d.stack.empty()) {
      if (d.stack_truncated) d.stack.push_back(0);  // marks the cut (outermost side)
      // The innermost frames are libtorch's RecordFunction machinery calling ptprof: they are
      // the same on every op and only hide the caller.
      while (d.stack.size() > 1) {
        const std::string& f = tables.symbolizer.frame(d.stack.front());
        if (f.rfind("at::RecordFunction::", 0) != 0 &&
            f.rfind("c10::Dispatcher::runRecordFunction", 0) != 0)
          break;
        d.stack.erase(d.stack.begin());
      }
      auto [it, inserted] = tables.stacks.emplace(d.stack, static_cast<int32_t>(t.stacks.size()));
      if (inserted) {
        std::vector<std::string> frames;
        frames.reserve(d.stack.size());
        // Outermost first, as PyTorch writes stacks.
        for (auto a = d.stack.rbegin(); a != d.stack.rend(); ++a)
          frames.push_back(*a == 0 ? std::string("<truncated>") : tables.symbolizer.frame(*a));
        t.stacks.push_back(std::move(frames));
      }
      e.stack = it->second;
    }
  }

  void begin_step_range() {
    if (!opts_.schedule && !demand_) return;
    // Created after the transition, so the first step of a window is inside it.
    step_rf_ = std::make_unique<at::RecordFunction>(at::RecordScope::USER_SCOPE);
    if (step_rf_->isActive()) step_rf_->before("ProfilerStep#" + std::to_string(step_num_));
    if (window_open_) window_steps_.push_back(step_num_);
  }

  void end_step_range() { step_rf_.reset(); }

  void teardown() {
    stop_triggers();
    step_rf_.reset();
    if (installed_) uninstall();
  }

  void report_error(const std::string& msg) {
    std::fprintf(stderr, "[ptprof] error: %s\n", msg.c_str());
    status_.errors.push_back(msg);
  }
  void report_warning(const std::string& msg) {
    warn(msg);
    status_.warnings.push_back(msg);
  }

  Options opts_;
  mutable std::recursive_mutex mu_;
  int64_t pid_ = 0;
  std::string process_name_;
  std::string worker_name_;
  std::string distributed_info_;  // the trace's "distributedInfo" value; empty: none
  bool want_cuda_ = false;
  std::unique_ptr<detail::GpuBackend> gpu_;
  std::string gpu_reason_;

  int64_t step_num_ = 0;
  ProfilerAction action_ = ProfilerAction::NONE;
  bool installed_ = false;
  bool window_open_ = false;
  bool stopped_ = false;
  int64_t window_start_ = 0;
  int64_t unix_offset_ns_ = 0;
  int64_t window_index_ = 0;
  std::vector<int64_t> window_steps_;
  std::unique_ptr<at::RecordFunction> step_rf_;
  WindowOptions win_;  // of the window being captured, from its install to its close

  // On demand.
  struct TriggerKey {
    uint64_t dev = 0, ino = 0;
    int64_t size = 0, mtime_ns = 0;
    bool operator==(const TriggerKey& o) const {
      return dev == o.dev && ino == o.ino && size == o.size && mtime_ns == o.mtime_ns;
    }
  };
  TriggerKey trigger_key_;
  bool trigger_seen_ = false;
  int64_t next_trigger_check_ns_ = 0;
  std::optional<detail::Trigger> demand_;
  int64_t demand_start_ = 0;
  WindowOptions demand_window_;
  bool signal_taken_ = false;
  struct sigaction old_sigaction_ {};
  std::shared_ptr<Trace> last_trace_;
  mutable Status status_;  // const status() merges the writer's errors into it
  bool warned_drops_ = false;
  detail::Symbolizer symbolizer_;

  // The background writer (Options::write_in_background).
  std::thread writer_;
  mutable std::mutex writer_mu_;
  std::condition_variable writer_cv_;
  std::shared_ptr<Trace> pending_;  // a finished window waiting to be written
  WindowOptions pending_window_;    // where it goes
  bool writing_ = false;
  bool writer_quit_ = false;
  mutable std::vector<std::string> writer_errors_;
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
