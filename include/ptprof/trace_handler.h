// ptprof/trace_handler.h: what happens to a finished trace.
//
// A handler receives each finished trace on the thread that called ProfileSession::step()
// or stop(). It reports failure by throwing; the session catches it, reports it, and the
// training run goes on.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "ptprof/log.h"

namespace ptprof {

class Trace;

class TraceHandler {
 public:
  virtual ~TraceHandler() = default;
  virtual void handle(const Trace& trace) = 0;
};

using TraceHandlerPtr = std::shared_ptr<TraceHandler>;

// torch.profiler.tensorboard_trace_handler: writes
// <dir>/<worker_name>.<time in ns>.pt.trace.json[.gz], creating <dir> if needed.
// An empty worker_name means "<hostname>_<pid>". The files are written so that TensorBoard's
// PyTorch Profiler plugin shows them right, the release on PyPI included, which PyTorch's
// current schema does not give (see Trace::SaveOptions::tensorboard); Holistic Trace Analysis,
// Perfetto and chrome://tracing read them as well. exact_schema writes PyTorch's schema as is,
// as chrome_trace_handler does.
TraceHandlerPtr tensorboard_trace_handler(std::string dir, std::string worker_name = "",
                                          bool use_gzip = false, bool exact_schema = false);

// Writes each finished trace to `path` (gzip-compressed if it ends in ".gz"), replacing
// the previous one. As every ptprof writer, it writes a temporary file and renames it.
TraceHandlerPtr chrome_trace_handler(std::string path);

// Any callable receiving the finished trace.
TraceHandlerPtr callback_handler(std::function<void(const Trace&)> fn);

// ptprof's report of each trace (ptprof/report.h: the step breakdown, why the GPU sat idle,
// ranked findings), saved as <name>.report.json and <name>.report.html. With `dir`, in it, named
// <worker_name>.<time in ns> as tensorboard_trace_handler names traces. Without, beside each
// trace file that the handlers before it (tensorboard_trace_handler, chrome_trace_handler) wrote
// for this trace, in a "reports" folder next to it, named after it: not in the trace's own
// folder, where Holistic Trace Analysis takes every .json for a trace. `summary`, if given,
// also receives the report's summary (LogLevel::kInfo). Options::report adds
// report_handler("", Options::log) after the session's handlers.
TraceHandlerPtr report_handler(std::string dir = "", LogSink summary = nullptr);

}  // namespace ptprof
