// report_handler(): ptprof's report as an ordinary trace handler (ptprof/trace_handler.h).
#include <chrono>
#include <string>
#include <utility>

#include "ptprof/error.h"
#include "ptprof/report.h"
#include "ptprof/trace.h"
#include "ptprof/trace_handler.h"
#include "trace/handlers.h"
#include "trace/process_info.h"

namespace ptprof {

namespace {

class ReportHandler final : public TraceHandler {
 public:
  ReportHandler(std::string dir, LogSink summary)
      : dir_(std::move(dir)), summary_(std::move(summary)) {}

  void handle(const Trace& trace) override {
    const Report report(trace);
    if (summary_) summary_(LogLevel::kInfo, report.summary());
    if (!dir_.empty()) {
      detail::make_dirs(dir_, "report");
      const std::string worker =
          trace.worker_name.empty() ? detail::default_worker_name() : trace.worker_name;
      const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
      save(report, dir_ + "/" + worker + "." + std::to_string(ns));
      return;
    }
    for (const std::string& path : detail::trace_files_of(trace)) {
      const auto slash = path.rfind('/');
      const std::string dir =
          slash == std::string::npos ? "reports" : path.substr(0, slash) + "/reports";
      detail::make_dirs(dir, "report");
      save(report, dir + "/" + path.substr(slash == std::string::npos ? 0 : slash + 1));
    }
  }

 private:
  static void save(const Report& report, const std::string& base) {
    report.save_json(base + ".report.json");
    report.save_html(base + ".report.html");
  }

  std::string dir_;
  LogSink summary_;
};

}  // namespace

TraceHandlerPtr report_handler(std::string dir, LogSink summary) {
  return std::make_shared<ReportHandler>(std::move(dir), std::move(summary));
}

}  // namespace ptprof
