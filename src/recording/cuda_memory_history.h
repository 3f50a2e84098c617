// cuda_memory_history.h: the session's CUDA memory snapshots (Options::cuda_memory_history,
// the trigger's CUDA_MEMORY=1): when the allocator's history is on, which snapshot is taken
// when, and the OOM path. The allocator itself is behind CudaAllocatorApi
// (cuda_allocator_api.h), so this logic is tested with a fake.
//
//   session start   enabled: history on (for the session's life), the OOM observer attached
//   window install  a window that asks for it (CUDA_MEMORY=1) and history off: on, for it
//   window close    saved and asked for: the snapshot, handed to snapshot_handler() (written
//                   beside the trace files); history off again if only the window wanted it
//   OOM             the allocator's observer: a snapshot written at once (at most
//                   max_oom_dumps), its path through the log
//   stop            history off; later OOMs write nothing
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "ptprof/cuda_memory_history.h"
#include "ptprof/trace_handler.h"
#include "recording/cuda_allocator_api.h"
#include "recording/session_log.h"

namespace ptprof::detail {

class CudaMemoryHistory {
 public:
  CudaMemoryHistory(CudaMemoryHistoryOptions options, std::string worker, SessionLog& log,
                    std::unique_ptr<CudaAllocatorApi> api);
  ~CudaMemoryHistory();
  CudaMemoryHistory(const CudaMemoryHistory&) = delete;
  CudaMemoryHistory& operator=(const CudaMemoryHistory&) = delete;

  void start();
  void window_installed(bool wanted);
  // The window's snapshot when it was saved and asked for one (else nullptr).
  std::shared_ptr<const std::string> window_closed(bool wanted, bool saved);
  void stop();

  bool recording() const { return recording_; }

  // A trace handler that writes `pickle` beside each trace file the handlers before it wrote
  // (ptprof::memory_snapshot_path_for_trace), or into options.dir when set; it notes the
  // directory for OOM snapshots. Throws ptprof::Error (the delivery reports it) when there is
  // nowhere to write.
  TraceHandlerPtr snapshot_handler(std::shared_ptr<const std::string> pickle);

  // The allocator's OOM observer, for the active session's history (none: nothing happens).
  static void on_oom(int64_t device, std::size_t allocated, std::size_t device_total,
                     std::size_t device_free);

 private:
  bool available();  // warns once when not
  bool turn_on();
  void turn_off();
  void oom(int64_t device, std::size_t allocated, std::size_t device_free);
  std::string oom_dir();

  const CudaMemoryHistoryOptions options_;
  const std::string worker_;
  SessionLog& log_;
  std::unique_ptr<CudaAllocatorApi> api_;
  bool checked_ = false, usable_ = false;
  bool recording_ = false;
  bool for_window_only_ = false;  // on for a window that asked, not for the session

  // The directory of the last snapshot written beside a trace: written by the handlers (on
  // the background writer, which may outlive nothing of the session but this), read by the
  // OOM path (any allocating thread).
  struct LastDir {
    std::mutex mu;
    std::string dir;
  };
  std::shared_ptr<LastDir> last_dir_ = std::make_shared<LastDir>();
  int oom_dumps_ = 0;  // under the OOM registry's lock
};

// Tests replace the allocator api the session makes (nullptr: the real one again).
using CudaAllocatorApiFactory = std::unique_ptr<CudaAllocatorApi> (*)();
void set_cuda_allocator_api_factory(CudaAllocatorApiFactory factory);
std::unique_ptr<CudaAllocatorApi> make_session_cuda_allocator_api();

}  // namespace ptprof::detail
