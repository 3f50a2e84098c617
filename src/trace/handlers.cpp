#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <utility>

#include "ptprof/error.h"
#include "ptprof/trace.h"
#include "ptprof/trace_handler.h"
#include "trace/handlers.h"
#include "trace/process_info.h"

namespace ptprof {

namespace {

class TensorBoardHandler final : public TraceHandler {
 public:
  TensorBoardHandler(std::string dir, std::string worker, bool gzip, bool exact_schema)
      : dir_(std::move(dir)), worker_(std::move(worker)), gzip_(gzip) {
    save_.tensorboard = !exact_schema;
    if (dir_.empty()) throw Error("ptprof: tensorboard_trace_handler: dir is empty");
  }
  void handle(const Trace& trace) override {
    detail::make_dirs(dir_, "trace");
    const std::string worker = !worker_.empty()             ? worker_
                               : !trace.worker_name.empty() ? trace.worker_name
                                                            : detail::default_worker_name();
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                        std::chrono::system_clock::now().time_since_epoch())
                        .count();
    std::string path = dir_ + "/" + worker + "." + std::to_string(ns) + ".pt.trace.json";
    if (gzip_) path += ".gz";
    trace.save(path, save_);
    detail::note_trace_file(trace, path);
  }

 private:
  std::string dir_;
  std::string worker_;
  bool gzip_;
  Trace::SaveOptions save_;
};

class ChromeTraceHandler final : public TraceHandler {
 public:
  explicit ChromeTraceHandler(std::string path) : path_(std::move(path)) {
    if (path_.empty()) throw Error("ptprof: chrome_trace_handler: path is empty");
  }
  void handle(const Trace& trace) override {
    trace.save(path_);
    detail::note_trace_file(trace, path_);
  }

 private:
  std::string path_;
};

class CallbackHandler final : public TraceHandler {
 public:
  explicit CallbackHandler(std::function<void(const Trace&)> fn) : fn_(std::move(fn)) {
    if (!fn_) throw Error("ptprof: callback_handler: the callable is empty");
  }
  void handle(const Trace& trace) override { fn_(trace); }

 private:
  std::function<void(const Trace&)> fn_;
};

}  // namespace

namespace detail {

namespace {
// One trace's files (handlers.h): the trace they were written for, and their paths.
struct WrittenFiles {
  const Trace* trace = nullptr;
  std::vector<std::string> paths;
};
thread_local WrittenFiles t_written;
}  // namespace

void note_trace_file(const Trace& trace, const std::string& path) {
  if (t_written.trace != &trace) forget_trace_files();
  t_written.trace = &trace;
  t_written.paths.push_back(path);
}

std::vector<std::string> trace_files_of(const Trace& trace) {
  return t_written.trace == &trace ? t_written.paths : std::vector<std::string>{};
}

void forget_trace_files() {
  t_written.trace = nullptr;
  t_written.paths.clear();
}

void make_dirs(const std::string& dir, const char* what) {
  std::string partial;
  std::size_t pos = 0;
  while (pos != std::string::npos) {
    pos = dir.find('/', pos + 1);
    partial = dir.substr(0, pos);
    if (partial.empty()) continue;
    if (::mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST) {
      throw Error(std::string("ptprof: cannot create ") + what + " directory " + partial + ": " +
                  std::strerror(errno));
    }
  }
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw Error(std::string("ptprof: ") + what + " directory " + dir + " is not a directory");
}

}  // namespace detail

TraceHandlerPtr tensorboard_trace_handler(std::string dir, std::string worker_name, bool use_gzip,
                                          bool exact_schema) {
  return std::make_shared<TensorBoardHandler>(std::move(dir), std::move(worker_name), use_gzip,
                                              exact_schema);
}

TraceHandlerPtr chrome_trace_handler(std::string path) {
  return std::make_shared<ChromeTraceHandler>(std::move(path));
}

TraceHandlerPtr callback_handler(std::function<void(const Trace&)> fn) {
  return std::make_shared<CallbackHandler>(std::move(fn));
}

}  // namespace ptprof
