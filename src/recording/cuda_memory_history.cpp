#include "recording/cuda_memory_history.h"

#include <chrono>
#include <functional>
#include <utility>
#include <vector>

#include "ptprof/error.h"
#include "ptprof/memory_snapshot.h"
#include "ptprof/trace.h"
#include "trace/chrome_trace.h"
#include "trace/handlers.h"

namespace ptprof::detail {

namespace {

// The session whose history an OOM belongs to. The allocator's observer stays attached for
// the process's life, so it finds the session here; stop() waits for a dump in progress.
std::mutex g_oom_mu;
CudaMemoryHistory* g_oom_target = nullptr;

CudaAllocatorApiFactory g_factory = nullptr;

int64_t unix_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void write_pickle(const std::string& path, const std::string& bytes) {
  write_file_atomically(path, [&](Sink& sink) { sink.write(bytes.data(), bytes.size()); });
}

class SnapshotHandler final : public TraceHandler {
 public:
  SnapshotHandler(std::shared_ptr<const std::string> pickle, std::string dir, std::string worker,
                  std::function<void(const std::string&)> note_dir)
      : pickle_(std::move(pickle)),
        dir_(std::move(dir)),
        worker_(std::move(worker)),
        note_dir_(std::move(note_dir)) {}

  void handle(const Trace& trace) override {
    if (!dir_.empty()) {
      make_dirs(dir_, "CUDA memory snapshot");
      write_pickle(dir_ + "/" + worker_ + "." + std::to_string(unix_ns()) +
                       ".memory_snapshot.pickle",
                   *pickle_);
      return;
    }
    const std::vector<std::string> files = trace_files_of(trace);
    if (files.empty())
      throw Error(
          "ptprof: no trace file was written for this window to put its CUDA memory snapshot "
          "beside; set Options.cuda_memory_history.dir");
    for (const std::string& f : files) {
      write_pickle(memory_snapshot_path_for_trace(f), *pickle_);
      const auto slash = f.rfind('/');
      note_dir_(slash == std::string::npos ? "." : f.substr(0, slash));
    }
  }

 private:
  std::shared_ptr<const std::string> pickle_;
  std::string dir_, worker_;
  std::function<void(const std::string&)> note_dir_;
};

}  // namespace

void set_cuda_allocator_api_factory(CudaAllocatorApiFactory factory) {
  g_factory = factory;
}

std::unique_ptr<CudaAllocatorApi> make_session_cuda_allocator_api() {
  return g_factory ? g_factory() : make_cuda_allocator_api();
}

CudaMemoryHistory::CudaMemoryHistory(CudaMemoryHistoryOptions options, std::string worker,
                                     SessionLog& log, std::unique_ptr<CudaAllocatorApi> api)
    : options_(std::move(options)), worker_(std::move(worker)), log_(log), api_(std::move(api)) {}

CudaMemoryHistory::~CudaMemoryHistory() {
  stop();
}

bool CudaMemoryHistory::available() {
  if (!checked_) {
    checked_ = true;
    const std::string why = api_->unavailable_reason();
    usable_ = why.empty();
    if (!usable_)
      log_.warning(Status(StatusCode::kUnavailable,
                          "CUDA memory snapshots requested but not available: " + why +
                              "; the traces are written without them"));
  }
  return usable_;
}

bool CudaMemoryHistory::turn_on() {
  if (recording_) return true;
  if (!available()) return false;
  const Status st = api_->record_history(true, options_.max_entries, options_.cpp_stacks);
  if (!st.ok()) {
    log_.warning(st);
    return false;
  }
  recording_ = true;
  // After the history call, which initialises CUDA: the allocator attaches observers to the
  // devices it has, and has none before.
  if (options_.dump_on_oom && options_.max_oom_dumps > 0) {
    const Status attached = api_->attach_oom_observer(&CudaMemoryHistory::on_oom);
    if (!attached.ok()) {
      log_.warning(attached);
    } else {
      std::lock_guard<std::mutex> lock(g_oom_mu);
      g_oom_target = this;
    }
  }
  return true;
}

void CudaMemoryHistory::turn_off() {
  {
    std::lock_guard<std::mutex> lock(g_oom_mu);  // waits for an OOM dump in progress
    if (g_oom_target == this) g_oom_target = nullptr;
  }
  if (!recording_) return;
  recording_ = false;
  const Status st = api_->record_history(false, options_.max_entries, options_.cpp_stacks);
  if (!st.ok()) log_.warning(st);
}

void CudaMemoryHistory::start() {
  if (options_.enabled) turn_on();
}

void CudaMemoryHistory::window_installed(bool wanted) {
  if (!wanted || recording_) return;
  for_window_only_ = turn_on();
}

std::shared_ptr<const std::string> CudaMemoryHistory::window_closed(bool wanted, bool saved) {
  std::shared_ptr<const std::string> out;
  if (wanted && saved && recording_) {
    auto pickle = api_->snapshot_pickle();
    if (pickle.ok()) {
      out = std::make_shared<const std::string>(std::move(*pickle));
    } else {
      log_.warning(pickle.status());
    }
  }
  if (for_window_only_) {
    for_window_only_ = false;
    turn_off();
  }
  return out;
}

void CudaMemoryHistory::stop() {
  for_window_only_ = false;
  turn_off();
}

TraceHandlerPtr CudaMemoryHistory::snapshot_handler(std::shared_ptr<const std::string> pickle) {
  return std::make_shared<SnapshotHandler>(
      std::move(pickle), options_.dir, worker_, [last = last_dir_](const std::string& dir) {
        std::lock_guard<std::mutex> lock(last->mu);
        last->dir = dir;
      });
}

std::string CudaMemoryHistory::oom_dir() {
  if (!options_.dir.empty()) return options_.dir;
  std::lock_guard<std::mutex> lock(last_dir_->mu);
  return last_dir_->dir.empty() ? "." : last_dir_->dir;
}

void CudaMemoryHistory::on_oom(int64_t device, std::size_t allocated, std::size_t device_total,
                               std::size_t device_free) {
  std::lock_guard<std::mutex> lock(g_oom_mu);
  if (g_oom_target) g_oom_target->oom(device, allocated, device_free);
}

// On the allocating thread, inside the failed allocation (the allocator's lock released):
// nothing here may throw into it.
void CudaMemoryHistory::oom(int64_t device, std::size_t allocated, std::size_t device_free) {
  if (oom_dumps_ >= options_.max_oom_dumps) return;
  ++oom_dumps_;
  const std::string what = "CUDA out of memory on device " + std::to_string(device) + " (" +
                           std::to_string(allocated) + " bytes allocated, " +
                           std::to_string(device_free) + " free)";
  try {
    auto pickle = api_->snapshot_pickle();
    if (!pickle.ok()) {
      log_.warning(Status(StatusCode::kAborted, what + ": no snapshot: " + pickle.status().message()));
      return;
    }
    const std::string dir = oom_dir();
    make_dirs(dir, "CUDA memory snapshot");
    const std::string path =
        dir + "/" + worker_ + "." + std::to_string(unix_ns()) + ".oom.memory_snapshot.pickle";
    write_pickle(path, *pickle);
    log_.warning(Status(StatusCode::kResourceExhausted,
                        what + ": its memory snapshot is " + path + " (ptprof memory " + path + ")"));
  } catch (const std::exception& e) {
    log_.warning(Status(StatusCode::kAborted, what + ": the snapshot was not written: " + e.what()));
  }
}

}  // namespace ptprof::detail
