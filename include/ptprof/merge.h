// ptprof/merge.h: the traces of a distributed job's ranks as one timeline.
//
// Each rank writes its own trace (tensorboard_trace_handler into one log directory), which is
// what TensorBoard and Holistic Trace Analysis read. To see the ranks against each other in
// Perfetto or chrome://tracing, merge_ranks writes one trace of all of them: one process per
// rank (named "rank R: <worker>" and ordered by rank, its GPUs just after it), pids and flow ids
// made unique per rank, and the ranks' clocks aligned.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ptprof {

struct MergeOptions {
  // Which of each rank's traces: its files in name order, that is its windows in time order
  // (tensorboard_trace_handler names them <worker>.<time>). -1: the last.
  int64_t window = -1;
  // How ranks' clocks are aligned. Auto: ranks on the host of the lowest rank share its clock
  // (offset 0); a rank on another host is moved so that its collectives end when the lowest
  // rank's do (the median over the collectives both have). Collectives: every rank that way.
  // None: times as written.
  enum class Align { Auto, Collectives, None };
  Align align = Align::Auto;
};

struct MergedRank {
  int64_t rank = -1;
  std::string file;
  std::string host;       // from the worker name, "<host>_<pid>[_rank<R>]"
  int64_t offset_ns = 0;  // added to this rank's times in the merged trace
  std::string alignment;  // "reference", "same host", "collectives (N)", "none: <why>"
  std::vector<int64_t> steps;
};

struct MergeResult {
  std::vector<MergedRank> ranks;       // by rank
  int64_t world_size = 0;              // from distributedInfo; else the number of ranks found
  std::vector<int64_t> missing_ranks;  // below world_size, with no trace in the directory
  std::vector<std::string> notes;      // what a reader of the merged trace should know
  uint64_t events = 0;
  // Human-readable: one line per rank, then the missing ranks and the notes.
  std::string summary() const;
};

// Reads the rank traces (*.pt.trace.json[.gz]) in `dir` and writes the merged trace to `out`
// (".gz" compresses; written to a temporary file and renamed). A trace's rank comes from its
// distributedInfo, else from "_rank<R>" in its file name. The merged trace records what was
// done in its "ptprof_merge" metadata (ranks, files, offsets applied, missing ranks).
// Throws ptprof::Error naming the file for an unreadable trace, one whose rank cannot be told,
// or a directory with none.
MergeResult merge_ranks(const std::string& dir, const std::string& out,
                        const MergeOptions& options = {});

}  // namespace ptprof
