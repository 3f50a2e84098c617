// cross_rank_report (ptprof/cross_rank.h): the ranks' collectives side by side. The ranks are
// planned as merge_ranks plans them (one trace in memory at a time, clocks aligned); only the
// stragglers' traces are read a second time, to see what they did while the others waited.
#include "ptprof/cross_rank.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <set>
#include <tuple>

#include "ptprof/trace.h"
#include "render/format.h"
#include "trace/json_writer.h"
#include "trace/rank_plan.h"
#include "trace/trace_reader.h"

namespace ptprof {
namespace {

using detail::format_c;
using detail::format_fixed;

int64_t overlap(const Event& e, int64_t lo, int64_t hi) {
  return std::max<int64_t>(0, std::min(hi, e.start_ns + e.duration_ns) - std::max(lo, e.start_ns));
}

// What `t`'s host was doing in [lo, hi): on the thread whose ops cover most of it, the innermost
// op or range that covers at least half of what its parent covers (step ranges are looked
// through). Empty when nothing was recorded then (the thread was idle or outside any range).
std::pair<std::string, int64_t> busy_with(const Trace& t, int64_t lo, int64_t hi,
                                          const std::vector<std::vector<int32_t>>& children,
                                          const std::vector<int32_t>& roots) {
  // Top-level candidates per thread: roots, with step ranges replaced by their children.
  std::map<int64_t, std::pair<int64_t, int32_t>> best_by_thread;  // tid -> (covered, best)
  std::map<int64_t, int64_t> covered_by_thread;
  auto consider = [&](int32_t i, auto&& self) -> void {
    const Event& e = t.events[static_cast<std::size_t>(i)];
    const int64_t o = overlap(e, lo, hi);
    if (o == 0) return;
    if (e.kind == EventKind::UserAnnotation && is_step_name(e.name)) {
      for (int32_t c : children[static_cast<std::size_t>(i)]) self(c, self);
      return;
    }
    covered_by_thread[e.tid] += o;
    auto& best = best_by_thread[e.tid];
    if (o > best.first) best = {o, i};
  };
  for (int32_t r : roots) consider(r, consider);
  int64_t best_tid = 0, best_cover = 0;
  for (const auto& [tid, cover] : covered_by_thread)
    if (cover > best_cover) best_cover = cover, best_tid = tid;
  if (best_cover == 0) return {"", 0};
  int32_t at = best_by_thread[best_tid].second;
  int64_t at_cover = best_by_thread[best_tid].first;
  for (;;) {
    int32_t next = -1;
    int64_t next_cover = 0;
    for (int32_t c : children[static_cast<std::size_t>(at)]) {
      const int64_t o = overlap(t.events[static_cast<std::size_t>(c)], lo, hi);
      if (o > next_cover) next_cover = o, next = c;
    }
    if (next < 0 || next_cover * 2 < at_cover) break;
    at = next;
    at_cover = next_cover;
  }
  return {std::string(t.events[static_cast<std::size_t>(at)].name), at_cover};
}

// Milliseconds without the unit, for the table's columns.
std::string ms_digits(int64_t ns) {
  return format_fixed(static_cast<double>(ns) / 1e6, 3);
}
std::string ms(int64_t ns) {
  return detail::ms(static_cast<double>(ns));
}

}  // namespace

CrossRankReport cross_rank_report(const std::string& dir, const MergeOptions& options,
                                  const CrossRankThresholds& thresholds) {
  detail::RankPlans planned = detail::plan_ranks(dir, options, "ptprof report");
  CrossRankReport out;
  out.world_size = planned.world_size;
  out.missing_ranks = planned.missing_ranks;
  out.notes = planned.notes;
  for (const auto& [rank, p] : planned.ranks) out.ranks.push_back(p.info);
  const auto& plans = planned.ranks;

  // Steps every rank recorded.
  std::set<int64_t> steps;
  bool first = true;
  for (const auto& [rank, p] : plans) {
    std::set<int64_t> mine(p.info.steps.begin(), p.info.steps.end());
    if (first) {
      steps = mine;
    } else {
      std::set<int64_t> both;
      std::set_intersection(steps.begin(), steps.end(), mine.begin(), mine.end(),
                            std::inserter(both, both.end()));
      steps = both;
    }
    first = false;
  }
  out.steps = static_cast<int64_t>(steps.size());

  detail::CollectiveKind kind = plans.begin()->second.collective_kind;
  for (const auto& [rank, p] : plans) {
    if (p.collective_kind != kind) {
      out.notes.push_back("rank " + std::to_string(rank) + "'s collectives are " +
                          detail::collective_kind_name(p.collective_kind) + ", rank " +
                          std::to_string(plans.begin()->first) + "'s " +
                          detail::collective_kind_name(kind) + ": not compared");
      kind = detail::CollectiveKind::None;
    }
  }
  out.collective_kind = detail::collective_kind_name(kind);
  if (plans.size() < 2) {
    out.notes.push_back("one rank's trace: nothing to compare it with");
    return out;
  }
  if (kind == detail::CollectiveKind::None) {
    out.notes.push_back("no collectives to compare in the ranks' traces");
    return out;
  }
  if (kind == detail::CollectiveKind::C10d)
    out.notes.push_back(
        "only the c10d ops mark the collectives: they end when the work is queued, so arrivals "
        "are when each rank asked, and waits cannot be told from the traces");

  // The n-th collective of a name in a step, on each rank: (start, end) in the reference clock.
  using Key = std::tuple<int64_t, std::string, int64_t>;
  std::map<Key, std::map<int64_t, std::pair<int64_t, int64_t>>> seen;
  std::map<Key, int64_t> order;  // earliest start, for listing in time order
  for (const auto& [rank, p] : plans) {
    std::map<std::pair<int64_t, std::string>, int64_t> count;
    for (const detail::RankCollective& c : p.collectives) {
      if (c.step < 0 || !steps.count(c.step)) continue;
      const Key k{c.step, c.name, count[{c.step, c.name}]++};
      seen[k][rank] = {c.start_ns + p.info.offset_ns, c.end_ns + p.info.offset_ns};
      auto [it, fresh] = order.emplace(k, c.start_ns + p.info.offset_ns);
      if (!fresh) it->second = std::min(it->second, c.start_ns + p.info.offset_ns);
    }
  }
  int64_t partial = 0;
  std::vector<std::pair<int64_t, Key>> listed;
  for (const auto& [k, by_rank] : seen) {
    if (by_rank.size() != plans.size()) {
      ++partial;
      continue;
    }
    listed.emplace_back(order[k], k);
  }
  if (partial > 0)
    out.notes.push_back(std::to_string(partial) +
                        " collective(s) not on every rank's trace (left out)");
  std::sort(listed.begin(), listed.end());

  // Which straggler windows to explain, per rank: (collective index, own-clock interval).
  std::map<int64_t, std::vector<std::tuple<std::size_t, int64_t, int64_t>>> to_explain;
  for (const auto& [start, k] : listed) {
    const auto& by_rank = seen[k];
    CollectiveWait w;
    w.step = std::get<0>(k);
    w.name = std::get<1>(k);
    w.index = std::get<2>(k);
    std::vector<std::pair<int64_t, int64_t>> arrivals;  // (arrival, rank)
    for (const auto& [rank, se] : by_rank) arrivals.emplace_back(se.first, rank);
    std::sort(arrivals.begin(), arrivals.end());
    const int64_t first_arrival = arrivals.front().first;
    const int64_t last_arrival = arrivals.back().first;
    for (const auto& [rank, se] : by_rank) {
      RankArrival a;
      a.rank = rank;
      a.arrival_ns = se.first - first_arrival;
      a.wait_ns = last_arrival - se.first;
      w.ranks.push_back(a);
    }
    const int64_t before_last = arrivals[arrivals.size() - 2].first;
    if (last_arrival - before_last >= thresholds.min_late_ns) {
      w.straggler = arrivals.back().second;
      w.late_ns = last_arrival - before_last;
      for (const RankArrival& a : w.ranks)
        if (a.rank != w.straggler) w.lost_ns += a.wait_ns;
      const int64_t off = plans.at(w.straggler).info.offset_ns;
      to_explain[w.straggler].emplace_back(out.collectives.size(), before_last - off,
                                           last_arrival - off);
    }
    out.collectives.push_back(std::move(w));
  }

  // What each straggler did instead: its own trace, read again.
  for (const auto& [rank, items] : to_explain) {
    const Trace t = detail::read_trace(plans.at(rank).info.file);
    std::vector<std::vector<int32_t>> children(t.events.size());
    std::vector<int32_t> roots;
    for (std::size_t i = 0; i < t.events.size(); ++i) {
      const Event& e = t.events[i];
      if (is_gpu(e.kind)) continue;
      if (e.parent >= 0)
        children[static_cast<std::size_t>(e.parent)].push_back(static_cast<int32_t>(i));
      else
        roots.push_back(static_cast<int32_t>(i));
    }
    for (const auto& [index, lo, hi] : items) {
      auto [cause, covered] = busy_with(t, lo, hi, children, roots);
      out.collectives[index].cause = cause;
      out.collectives[index].cause_ns = covered;
    }
  }

  std::map<int64_t, Straggler> by_rank;
  std::map<int64_t, std::map<std::string, int64_t>> causes;
  for (const CollectiveWait& w : out.collectives) {
    if (w.straggler < 0) continue;
    Straggler& s = by_rank[w.straggler];
    s.rank = w.straggler;
    ++s.collectives;
    s.lost_ns += w.lost_ns;
    if (!w.cause.empty()) causes[w.straggler][w.cause] += w.cause_ns;
  }
  for (auto& [rank, s] : by_rank) {
    for (const auto& [name, ns] : causes[rank])
      if (ns > s.cause_ns) s.cause = name, s.cause_ns = ns;
    out.stragglers.push_back(s);
  }
  std::sort(out.stragglers.begin(), out.stragglers.end(),
            [](const Straggler& a, const Straggler& b) { return a.lost_ns > b.lost_ns; });
  return out;
}

std::string CrossRankReport::summary() const {
  std::string s = "Across ranks: " + std::to_string(ranks.size()) + " of " +
                  std::to_string(world_size) + " ranks, " + std::to_string(steps) +
                  " step(s) in common, collectives from " + collective_kind + "\n";
  for (const MergedRank& r : ranks)
    s += "  rank " + std::to_string(r.rank) + ": " + r.file + " (host " + r.host + ", clock " +
         r.alignment + (r.offset_ns ? ", offset " + ms(r.offset_ns) : "") + ")\n";
  if (!missing_ranks.empty()) {
    std::string m;
    for (int64_t r : missing_ranks) m += (m.empty() ? "" : ", ") + std::to_string(r);
    s += "  missing: rank(s) " + m + " (no trace)\n";
  }
  s += "\nStragglers (the others' time lost waiting for them, summed over ranks: what evening "
       "them out could save at most)\n";
  if (stragglers.empty()) s += "  none: every rank arrived within the threshold of the last\n";
  for (const Straggler& g : stragglers) {
    s += "  rank " + std::to_string(g.rank) + ": last at " + std::to_string(g.collectives) +
         " of " + std::to_string(collectives.size()) + " collective(s); the others lost " +
         ms(g.lost_ns) + (steps > 0 ? " (" + ms(g.lost_ns / steps) + " per step)" : "");
    s += g.cause.empty() ? "; what it did meanwhile is not in its trace\n"
                         : "; meanwhile it ran " + g.cause + " (" + ms(g.cause_ns) + ")\n";
  }
  if (!collectives.empty()) {
    s += "\nCollectives (arrival after the first rank's, ms, by rank)\n";
    s += format_c("  %-6s %-32s %-10s %-24s %-9s %-11s %s\n", "step", "collective", "straggler",
                  "arrivals", "late by", "others lost", "meanwhile");
    // The costliest ones, in time order: a long run lists many.
    std::vector<std::size_t> pick(collectives.size());
    for (std::size_t i = 0; i < pick.size(); ++i) pick[i] = i;
    constexpr std::size_t kMaxRows = 20;
    if (pick.size() > kMaxRows) {
      std::partial_sort(pick.begin(), pick.begin() + kMaxRows, pick.end(),
                        [&](std::size_t a, std::size_t b) {
                          return collectives[a].lost_ns > collectives[b].lost_ns;
                        });
      pick.resize(kMaxRows);
      std::sort(pick.begin(), pick.end());
    }
    for (std::size_t i : pick) {
      const CollectiveWait& w = collectives[i];
      std::string arr;
      for (const RankArrival& a : w.ranks)
        arr += (arr.empty() ? "" : " ") + ms_digits(a.arrival_ns);
      std::string name = detail::shorten(w.name, 28);
      name += " #" + std::to_string(w.index);
      s += format_c("  %-6lld %-32s %-10s %-24s %-9s %-11s %s\n", static_cast<long long>(w.step),
                    name.c_str(),
                    w.straggler < 0 ? "-" : ("rank " + std::to_string(w.straggler)).c_str(),
                    arr.c_str(), w.straggler < 0 ? "-" : ms_digits(w.late_ns).c_str(),
                    w.straggler < 0 ? "-" : ms_digits(w.lost_ns).c_str(),
                    w.cause.empty() ? "-" : w.cause.c_str());
    }
    if (pick.size() < collectives.size())
      s += "  (" + std::to_string(collectives.size() - pick.size()) +
           " more; --json lists them all)\n";
  }
  for (const std::string& n : notes) s += "note: " + n + "\n";
  return s;
}

std::string CrossRankReport::to_json() const {
  detail::JsonWriter w;
  w.begin_object();
  detail::write_ranks(w, world_size, ranks, missing_ranks);
  w.key("collective_kind").value(collective_kind);
  w.key("steps").value(steps);
  w.key("stragglers").begin_array();
  for (const Straggler& g : stragglers) {
    w.begin_object();
    w.key("rank").value(g.rank);
    w.key("collectives").value(g.collectives);
    w.key("lost_ns").value(g.lost_ns);
    w.key("cause").value(g.cause);
    w.key("cause_ns").value(g.cause_ns);
    w.end_object();
  }
  w.end_array();
  w.key("collectives").begin_array();
  for (const CollectiveWait& c : collectives) {
    w.begin_object();
    w.key("step").value(c.step);
    w.key("name").value(c.name);
    w.key("index").value(c.index);
    w.key("straggler").value(c.straggler);
    w.key("late_ns").value(c.late_ns);
    w.key("lost_ns").value(c.lost_ns);
    w.key("cause").value(c.cause);
    w.key("cause_ns").value(c.cause_ns);
    w.key("ranks").begin_array();
    for (const RankArrival& a : c.ranks) {
      w.begin_object();
      w.key("rank").value(a.rank);
      w.key("arrival_ns").value(a.arrival_ns);
      w.key("wait_ns").value(a.wait_ns);
      w.end_object();
    }
    w.end_array();
    w.end_object();
  }
  w.end_array();
  w.key("notes").begin_array();
  for (const std::string& n : notes) w.value(n);
  w.end_array();
  w.end_object();
  w.finish();
  return w.buffer();
}

}  // namespace ptprof
