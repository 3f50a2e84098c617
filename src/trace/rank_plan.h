// rank_plan.h: the ranks of a distributed job's log directory, learnt one trace at a time:
// which file is which rank, its host, steps and collectives, and the offset that aligns its
// clock with the lowest rank's. Shared by merge_ranks (ptprof/merge.h) and the cross-rank
// report (ptprof/cross_rank.h).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ptprof/merge.h"
#include "ptprof/trace.h"
#include "trace/json_writer.h"

namespace ptprof::detail {

// One collective as the rank saw it, in its own clock.
struct RankCollective {
  std::string name;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int64_t step = -1;  // the ProfilerStep#N it started in; -1: none
};

// Which events stand for a rank's collectives, most telling first: NCCL kernels (they start
// when the rank arrives and end together on every rank), Gloo's work on its own thread
// ("gloo:all_reduce", the same), NCCL's CPU ops, then the c10d ops as the caller sees them
// (they end when the work is queued, not done).
enum class CollectiveKind { None = -1, NcclKernel, Gloo, NcclCpu, C10d };
const char* collective_kind_name(CollectiveKind k);

// The collectives of the most telling kind `t` has, in start order.
std::vector<RankCollective> collectives_of(const Trace& t, CollectiveKind* kind);

struct RankPlan {
  MergedRank info;
  CollectiveKind collective_kind = CollectiveKind::None;
  std::vector<RankCollective> collectives;
  int64_t earliest_ns = 0;
  int64_t pid = 0;
};

struct RankPlans {
  std::map<int64_t, RankPlan> ranks;  // by rank
  int64_t world_size = 0;
  std::vector<int64_t> missing_ranks;
  std::vector<std::string> notes;
};

// Reads each worker's chosen window of `dir` once. `command` names the caller in errors
// ("ptprof merge"). Throws ptprof::Error for a directory without rank traces, a trace whose
// rank cannot be told, or two traces of one rank.
RankPlans plan_ranks(const std::string& dir, const MergeOptions& options, const char* command);

// Into an open JSON object: "world_size", "ranks" (rank, file, host, offset_ns, alignment) and
// "missing_ranks", as merge's metadata and the cross-rank report's JSON both have them.
void write_ranks(JsonWriter& w, int64_t world_size, const std::vector<MergedRank>& ranks,
                 const std::vector<int64_t>& missing_ranks);

// "<worker>.<time>.pt.trace.json[.gz]" -> "<worker>" (tensorboard_trace_handler's names).
std::string worker_of(const std::string& file);

}  // namespace ptprof::detail
