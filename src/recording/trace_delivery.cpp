#include "recording/trace_delivery.h"

#include <exception>
#include <string>
#include <utility>

#include "trace/handlers.h"

namespace ptprof::detail {

void TraceDelivery::wait_for_room() {
  if (!background_) return;
  std::unique_lock<std::mutex> lock(mu_);
  if (!writer_.joinable()) writer_ = std::thread([this] { writer_loop(); });
  cv_.wait(lock, [this] { return pending_ == nullptr; });
}

void TraceDelivery::deliver(std::shared_ptr<const Trace> trace,
                            std::vector<TraceHandlerPtr> handlers) {
  if (!background_) {
    run(*trace, handlers);
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  pending_ = std::move(trace);  // empty after wait_for_room(): only the session's thread fills it
  pending_handlers_ = std::move(handlers);
  cv_.notify_all();
}

void TraceDelivery::finish() {
  std::unique_lock<std::mutex> lock(mu_);
  if (!writer_.joinable()) return;
  cv_.wait(lock, [this] { return pending_ == nullptr && !writing_; });
  quit_ = true;
  cv_.notify_all();
  lock.unlock();
  writer_.join();
}

void TraceDelivery::run(const Trace& trace, const std::vector<TraceHandlerPtr>& handlers) {
  forget_trace_files();  // what earlier traces' handlers wrote is not this one's
  for (std::size_t i = 0; i < handlers.size(); ++i) {
    try {
      handlers[i]->handle(trace);
    } catch (const std::exception& e) {
      log_.error(Status(StatusCode::kAborted,
                        "trace handler " + std::to_string(i) + " failed: " + e.what()));
    } catch (...) {
      log_.error(Status(StatusCode::kAborted, "trace handler " + std::to_string(i) +
                                                  " failed with an unknown exception"));
    }
  }
  forget_trace_files();
}

void TraceDelivery::writer_loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return pending_ != nullptr || quit_; });
    if (!pending_) return;  // quit with nothing left to write
    std::shared_ptr<const Trace> trace = std::move(pending_);
    pending_ = nullptr;
    const std::vector<TraceHandlerPtr> handlers = std::move(pending_handlers_);
    writing_ = true;
    cv_.notify_all();
    lock.unlock();
    run(*trace, handlers);
    trace.reset();  // the window's memory goes as soon as it is written
    lock.lock();
    writing_ = false;
    cv_.notify_all();
  }
}

}  // namespace ptprof::detail
