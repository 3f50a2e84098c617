// trace_store.h: the traces the server has opened: each one's index (built on a background
// thread, one trace at a time, or found on disk), its Timeline and MemoryTable over it, and
// the Reports diffs need. A trace rewritten on disk is indexed again; one deleted is gone.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "ptprof/report.h"
#include "view/index_file.h"
#include "view/log_dir.h"
#include "view/timeline.h"

namespace ptprof::view {

struct IndexedTrace {
  TraceFile file;
  IndexKey key;
  std::shared_ptr<const IndexFile> index;   // overview and timeline
  std::shared_ptr<const IndexFile> tables;  // the other views' tables; null while built
  std::unique_ptr<Timeline> timeline;
};

class TraceStore {
 public:
  // `cache_dir`: where indexes go when a trace's own directory is not writable ("": nowhere).
  explicit TraceStore(std::string cache_dir);
  ~TraceStore();
  TraceStore(const TraceStore&) = delete;
  TraceStore& operator=(const TraceStore&) = delete;

  enum class State { Queued, Indexing, Ready, Failed };
  struct Lookup {
    State state = State::Queued;
    std::shared_ptr<const IndexedTrace> trace;  // when Ready
    std::string error;                          // when Failed: what, naming the file
  };
  // The trace's index when it is ready; otherwise it is queued (first in line) and the state
  // says how far it is.
  Lookup get(const TraceFile& f);
  // Where it stands, without queueing it: its state, the indexing phase (build_index's, ""
  // when idle) and, once indexed here, the seconds each phase took.
  struct Progress {
    State state = State::Queued;
    std::string error;
    std::string phase;
    std::vector<std::pair<std::string, double>> seconds;
  };
  Progress progress(const TraceFile& f) const;
  // The trace's Report: the one computed when it was indexed, else computed now by reading
  // the trace again (one trace in memory at a time, with the indexer). Throws ptprof::Error.
  std::shared_ptr<const Report> report(const TraceFile& f);
  // Runs `fn` while no trace is being read by the store (it reads traces itself).
  template <class Fn>
  auto exclusive(Fn&& fn) {
    std::lock_guard<std::mutex> heavy(heavy_);
    return fn();
  }

 private:
  struct Entry {
    TraceFile file;  // as last seen (size, mtime)
    State state = State::Queued;
    std::string error;
    std::shared_ptr<const IndexedTrace> trace;
    std::shared_ptr<const Report> report;
    uint64_t wanted = 0;  // when last asked for: the newest is built first
    std::string phase;
    std::vector<std::pair<std::string, double>> seconds;
  };
  void work();
  Entry& entry_locked(const TraceFile& f);
  // The entry of `f` if it is still that file (not rewritten or gone meanwhile), else null.
  Entry* same_locked(const TraceFile& f);

  const std::string cache_dir_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::mutex heavy_;  // held while a trace is in memory
  std::map<std::string, Entry> entries_;  // by TraceFile::id
  uint64_t clock_ = 0;
  bool stop_ = false;
  std::thread worker_;
};

}  // namespace ptprof::view
