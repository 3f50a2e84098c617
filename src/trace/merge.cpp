// merge_ranks: several ranks' traces into one file (ptprof/merge.h). Two passes over the rank
// traces, each loaded one at a time: the first learns each rank (plan_ranks: its number, host,
// steps and collectives, to align clocks), the second writes it. Memory is one rank's trace.
#include "ptprof/merge.h"

#include <algorithm>
#include <set>

#include "ptprof/error.h"
#include "ptprof/trace.h"
#include "trace/chrome_trace.h"
#include "trace/clock.h"
#include "trace/json_writer.h"
#include "trace/rank_plan.h"
#include "trace/trace_reader.h"

namespace ptprof {

MergeResult merge_ranks(const std::string& dir, const std::string& out,
                        const MergeOptions& options) {
  detail::RankPlans planned = detail::plan_ranks(dir, options, "ptprof merge");
  MergeResult result;
  result.world_size = planned.world_size;
  result.missing_ranks = planned.missing_ranks;
  result.notes = planned.notes;
  const auto& plans = planned.ranks;
  std::set<int64_t> pids;
  bool pids_unique = true;
  int64_t earliest = 0;
  bool first = true;
  for (const auto& [rank, p] : plans) {
    pids_unique &= pids.insert(p.pid).second;
    const int64_t e = p.earliest_ns + p.info.offset_ns;
    earliest = first ? e : std::min(earliest, e);
    first = false;
    result.ranks.push_back(p.info);
  }

  // What was done, for whoever opens the merged trace.
  detail::JsonWriter meta;
  meta.begin_object();
  detail::write_ranks(meta, result.world_size, result.ranks, result.missing_ranks);
  meta.end_object();
  meta.finish();
  const std::string meta_text = meta.buffer();

  const int64_t base = detail::trace_base_time_ns(earliest);
  detail::write_file_atomically(out, [&](detail::Sink& sink) {
    detail::JsonWriter w(&sink);
    detail::write_trace_header(w, {}, {{"ptprof_merge", meta_text}}, std::nullopt, base);
    for (const auto& [rank, plan] : plans) {
      const Trace t = detail::read_trace(plan.info.file);
      detail::EventPlacement p;
      p.shift_ns = plan.info.offset_ns;
      // Pids of one host are unique; across hosts they may not be.
      p.cpu_pid = pids_unique ? t.pid : (rank + 1) * 10000000 + t.pid % 10000000;
      p.gpu_pid_base = 1000000000 + rank * 1000;
      p.flow_id_base = static_cast<uint64_t>(rank) << 32;
      p.process_name = "rank " + std::to_string(rank) + ": " + detail::worker_of(plan.info.file);
      p.sort_index = rank * 1000;
      p.span_name = "rank " + std::to_string(rank) + ": PyTorch Profiler (" +
                    std::to_string(t.window_index) + ")";
      detail::write_trace_events(t, w, base, p);
      result.events += t.events.size() + t.memory_events.size();
    }
    detail::write_spans_sort_index(w, static_cast<uint64_t>(earliest - base));
    detail::write_trace_trailer(w, out);
  });
  return result;
}

std::string MergeResult::summary() const {
  std::string s;
  for (const MergedRank& r : ranks) {
    s += "rank " + std::to_string(r.rank) + ": " + r.file + " (host " + r.host + ", " +
         std::to_string(r.steps.size()) + " steps, offset " + std::to_string(r.offset_ns) +
         " ns: " + r.alignment + ")\n";
  }
  s += std::to_string(ranks.size()) + " of " + std::to_string(world_size) + " ranks, " +
       std::to_string(events) + " events\n";
  for (const std::string& n : notes) s += "note: " + n + "\n";
  return s;
}

}  // namespace ptprof
