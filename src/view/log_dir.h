// log_dir.h: the traces `ptprof view` serves: the runs, workers and windows (TensorBoard's
// spans) of a log directory, or one trace file, listed again on each scan() so traces a
// running job writes appear without a restart.
//
// Runs are the directories holding traces (named by their path under the root, TensorBoard's
// way); in each, trace_files_in's files (TensorBoard's names and HTA's, and flight recorder
// dumps with no trace written beside them), split into worker and
// span by parse_trace_file_name, spans numbered from 1 in time order per worker.
//
// Only files under the root are listed: links are followed only where they end inside it, and
// no directory link is walked. A file still being written (modified within the last
// `settle_ns`, and not seen unchanged for that long) waits for a later scan: torch.profiler's
// handler writes the final name in place. Writers' hidden temporary files are never listed. Files are named to the pages by an opaque id, never by their path,
// and a request can name nothing else.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace ptprof::view {

struct TraceFile {
  std::string id;      // "t<N>", stable for the file's path while the server runs
  std::string run;     // the directory, relative to the root ("." style: the root's name)
  std::string worker;  // TensorBoard's worker name
  std::string span;    // the time digits of the name; "" when it has none
  int span_index = 0;  // 1-based, in the worker's time order
  std::string path;    // absolute, inside the root
  std::string rel;     // relative to the root's directory
  uint64_t size = 0;
  int64_t mtime_ns = 0;
};

class LogDir {
 public:
  // `root`: a directory, or one trace file. Throws ptprof::Error when it does not exist.
  explicit LogDir(const std::string& root, int64_t settle_ns = 1000000000);
  // Lists the root again (thread-safe); returns whether anything changed.
  bool scan();
  std::vector<TraceFile> files() const;  // in run, worker, span order
  std::optional<TraceFile> find(const std::string& id) const;
  // The run's directory, absolute (for the ranks of a run); nothing for an unknown run.
  std::optional<std::string> run_dir(const std::string& run) const;
  const std::string& root_name() const { return root_name_; }

 private:
  struct Seen {
    uint64_t size = 0;
    int64_t mtime_ns = 0;
    bool trace = false;  // holds_trace's answer for this size and time
    int64_t since_ns = 0;  // when this size and time were first seen
  };
  std::string root_;       // canonical
  bool root_is_file_ = false;
  std::string root_name_;
  int64_t settle_ns_;
  mutable std::mutex mu_;
  std::vector<TraceFile> files_;
  std::map<std::string, std::string> run_dirs_;
  std::map<std::string, std::string> ids_;  // rel path -> id
  std::map<std::string, Seen> seen_;        // rel path -> what the last scan saw
};

}  // namespace ptprof::view
