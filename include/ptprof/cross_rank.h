// ptprof/cross_rank.h: who waits for whom in a distributed job, from its ranks' traces.
//
// For each step and collective: when each rank arrived (its part of the collective began), how
// long it then waited for the last one, which rank that was (the straggler), what the straggler
// was doing while the others waited (from its own trace), and the time the others lost to it.
// 'ptprof report DIR' prints it after the ranks' own reports.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ptprof/merge.h"

namespace ptprof {

struct CrossRankThresholds {
  // A collective has a straggler when its last rank arrives this much after the one before it.
  int64_t min_late_ns = 100000;  // 100 us
};

struct RankArrival {
  int64_t rank = -1;
  int64_t arrival_ns = 0;  // after the first rank's arrival at this collective
  int64_t wait_ns = 0;     // until the last rank arrived
};

struct CollectiveWait {
  int64_t step = -1;               // ProfilerStep#N it ran in; -1: outside the steps
  std::string name;                // "gloo:all_reduce", "ncclDevKernel_AllReduce_...", ...
  int64_t index = 0;               // n-th of this name in the step, from 0
  std::vector<RankArrival> ranks;  // by rank
  int64_t straggler = -1;          // -1: none (every rank within min_late_ns of the last)
  int64_t late_ns = 0;             // the straggler's arrival after the rank before it
  int64_t lost_ns = 0;             // the other ranks' waits, summed
  std::string cause;               // on the straggler's own trace, the innermost op or range that
                                   // covers most of its lateness; empty: not known
  int64_t cause_ns = 0;            // how much of the lateness `cause` covers
};

struct Straggler {
  int64_t rank = -1;
  int64_t collectives = 0;  // how many it held up
  int64_t lost_ns = 0;      // the others' waits for it, summed
  std::string cause;        // what it most often did instead (by time)
  int64_t cause_ns = 0;
};

struct CrossRankReport {
  std::vector<MergedRank> ranks;  // by rank, with the clock offsets applied (as merge_ranks)
  int64_t world_size = 0;
  std::vector<int64_t> missing_ranks;
  std::string collective_kind;              // which events stood for the collectives
  std::vector<CollectiveWait> collectives;  // in step and start order
  std::vector<Straggler> stragglers;        // by time lost, most first
  int64_t steps = 0;                        // steps every rank recorded
  std::vector<std::string> notes;           // what could not be determined, and why

  std::string summary() const;  // plain text
  std::string to_json() const;  // keys as the fields' names
};

// Reads the ranks' traces in `dir` (one at a time; the stragglers' twice) and compares their
// collectives: the n-th collective of a name in step S on every rank is one collective. Clocks
// are aligned as merge_ranks aligns them (`options`). Throws ptprof::Error as merge_ranks does.
CrossRankReport cross_rank_report(const std::string& dir, const MergeOptions& options = {},
                                  const CrossRankThresholds& thresholds = {});

}  // namespace ptprof
