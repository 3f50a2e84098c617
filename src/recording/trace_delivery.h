// trace_delivery.h: finished traces to their handlers (Options::on_trace_ready), in order, on
// ptprof's background writer thread (Options::write_in_background) or at once on the session's.
// A handler that throws is an error in the session's log (kAborted, naming the handler), and the
// handlers after it still run.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "ptprof/trace.h"
#include "ptprof/trace_handler.h"
#include "recording/session_log.h"

namespace ptprof::detail {

class TraceDelivery {
 public:
  TraceDelivery(bool background, SessionLog& log) : background_(background), log_(log) {}
  ~TraceDelivery() { finish(); }
  TraceDelivery(const TraceDelivery&) = delete;
  TraceDelivery& operator=(const TraceDelivery&) = delete;

  // Back-pressure, before the next trace is built: waits until the writer holds no trace but
  // the one it is writing, however slow the disk is. At once without a background writer.
  void wait_for_room();
  // Hands `trace` to `handlers`: queued for the writer (after wait_for_room()), or run now.
  void deliver(std::shared_ptr<const Trace> trace, std::vector<TraceHandlerPtr> handlers);
  // Waits until every trace handed over is written, and ends the writer thread.
  void finish();

 private:
  void run(const Trace& trace, const std::vector<TraceHandlerPtr>& handlers);
  void writer_loop();

  const bool background_;
  SessionLog& log_;
  std::thread writer_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::shared_ptr<const Trace> pending_;  // a finished window waiting to be written
  std::vector<TraceHandlerPtr> pending_handlers_;
  bool writing_ = false;
  bool quit_ = false;
};

}  // namespace ptprof::detail
