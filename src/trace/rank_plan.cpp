#include "trace/rank_plan.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string_view>

#include "ptprof/error.h"
#include "trace/chrome_trace.h"
#include "trace/trace_files.h"
#include "trace/trace_reader.h"

namespace ptprof::detail {
namespace {

namespace fs = std::filesystem;

// Strips a trailing "_<digits>" (after `prefix`) from s; returns whether it did, and the digits.
bool strip_number_suffix(std::string* s, const std::string& prefix, int64_t* n = nullptr) {
  const std::size_t us = s->rfind('_' + prefix);
  if (us == std::string::npos) return false;
  const std::string digits = s->substr(us + 1 + prefix.size());
  if (digits.empty() || digits.size() > 12 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return false;
  if (n != nullptr) *n = std::stoll(digits);
  s->resize(us);
  return true;
}

int64_t step_number(std::string_view step_name) {
  return std::strtoll(std::string(step_name.substr(step_name.find('#') + 1)).c_str(), nullptr, 10);
}

// The offset that makes `other`'s collectives end when `ref`'s do: the median of the
// differences over the n-th collective of each name both have. Sets *pairs.
std::optional<int64_t> collective_offset(const RankPlan& ref, const RankPlan& other,
                                         std::size_t* pairs) {
  *pairs = 0;
  if (ref.collective_kind == CollectiveKind::None || ref.collective_kind != other.collective_kind)
    return std::nullopt;
  std::map<std::string, std::vector<int64_t>> a, b;
  for (const RankCollective& c : ref.collectives) a[c.name].push_back(c.end_ns);
  for (const RankCollective& c : other.collectives) b[c.name].push_back(c.end_ns);
  std::vector<int64_t> diffs;
  for (const auto& [n, ends] : a) {
    auto it = b.find(n);
    if (it == b.end()) continue;
    for (std::size_t i = 0; i < std::min(ends.size(), it->second.size()); ++i)
      diffs.push_back(ends[i] - it->second[i]);
  }
  if (diffs.empty()) return std::nullopt;
  *pairs = diffs.size();
  std::nth_element(diffs.begin(), diffs.begin() + diffs.size() / 2, diffs.end());
  return diffs[diffs.size() / 2];
}

}  // namespace

const char* collective_kind_name(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::NcclKernel:
      return "NCCL kernels";
    case CollectiveKind::Gloo:
      return "Gloo's collectives (gloo:*)";
    case CollectiveKind::NcclCpu:
      return "NCCL's CPU ops";
    case CollectiveKind::C10d:
      return "c10d ops (queued, not done)";
    case CollectiveKind::None:
      break;
  }
  return "none";
}

std::vector<RankCollective> collectives_of(const Trace& t, CollectiveKind* kind) {
  std::vector<RankCollective> by_kind[4];
  std::vector<std::pair<int64_t, int64_t>> steps;  // (start, number)
  for (const Event& e : t.events) {
    const std::string_view n = e.name;
    int k = -1;
    if (e.kind == EventKind::Kernel && n.find("nccl") != std::string_view::npos) {
      k = 0;
    } else if (!is_gpu(e.kind) && n.rfind("gloo:", 0) == 0) {
      k = 1;
    } else if (!is_gpu(e.kind) && (n.rfind("nccl:", 0) == 0 || n == "record_param_comms")) {
      k = 2;
    } else if (!is_gpu(e.kind) && n.rfind("c10d::", 0) == 0) {
      k = 3;
    } else if (e.kind == EventKind::UserAnnotation && is_step_name(n)) {
      steps.emplace_back(e.start_ns, step_number(n));
    }
    if (k >= 0)
      by_kind[k].push_back(RankCollective{std::string(n), e.start_ns, e.start_ns + e.duration_ns});
  }
  std::sort(steps.begin(), steps.end());
  for (int k = 0; k < 4; ++k) {
    if (by_kind[k].empty()) continue;
    auto& cs = by_kind[k];
    std::sort(cs.begin(), cs.end(), [](const RankCollective& a, const RankCollective& b) {
      return a.start_ns < b.start_ns;
    });
    // The step a collective started in: the last step begun by then (a GPU collective may run
    // past its step's CPU range, and still belongs to it).
    for (RankCollective& c : cs) {
      auto it = std::upper_bound(steps.begin(), steps.end(), std::make_pair(c.start_ns, INT64_MAX));
      if (it != steps.begin()) c.step = std::prev(it)->second;
    }
    *kind = static_cast<CollectiveKind>(k);
    return cs;
  }
  *kind = CollectiveKind::None;
  return {};
}

void write_ranks(JsonWriter& w, int64_t world_size, const std::vector<MergedRank>& ranks,
                 const std::vector<int64_t>& missing_ranks) {
  w.key("world_size").value(world_size);
  w.key("ranks").begin_array();
  for (const MergedRank& r : ranks) {
    w.begin_object();
    w.key("rank").value(r.rank);
    w.key("file").value(r.file);
    w.key("host").value(r.host);
    w.key("offset_ns").value(r.offset_ns);
    w.key("alignment").value(r.alignment);
    w.end_object();
  }
  w.end_array();
  w.key("missing_ranks").begin_array();
  for (int64_t r : missing_ranks) w.value(r);
  w.end_array();
}

std::string worker_of(const std::string& file) {
  return parse_trace_file_name(fs::path(file).filename().string()).worker;
}

RankPlans plan_ranks(const std::string& dir, const MergeOptions& options, const char* command) {
  const std::string cmd = command;
  // Each worker (process) is one rank; of its windows, the one asked for.
  std::map<std::string, std::vector<std::string>> by_worker;
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw Error(cmd + ": " + dir + " is not a directory (give the ranks' log directory)");
  for (const std::string& f : trace_files_in(dir)) by_worker[worker_of(f)].push_back(f);

  RankPlans out;
  auto& plans = out.ranks;
  int64_t world_size = 0;
  for (const auto& [worker, files] : by_worker) {
    const int64_t n = static_cast<int64_t>(files.size());
    const int64_t w = options.window < 0 ? n + options.window : options.window;
    if (w < 0 || w >= n) {
      out.notes.push_back(worker + " has " + std::to_string(n) + " window(s), not window " +
                          std::to_string(options.window) + "; left out");
      continue;
    }
    RankPlan plan;
    plan.info.file = files[static_cast<std::size_t>(w)];
    const Trace t = read_trace(plan.info.file);
    std::string host = worker;
    int64_t name_rank = -1;
    strip_number_suffix(&host, "rank", &name_rank);
    strip_number_suffix(&host, "");  // the pid
    plan.info.host = host;
    std::optional<int64_t> rank;
    if (t.distributed) {
      if (t.distributed->rank >= 0) rank = t.distributed->rank;
      world_size = std::max(world_size, t.distributed->world_size);
    }
    if (!rank && name_rank >= 0) rank = name_rank;
    if (!rank)
      throw Error(cmd + ": cannot tell the rank of " + plan.info.file +
                  ": no \"rank\" in its distributedInfo and no _rank<N> in its name");
    plan.info.rank = *rank;
    for (const Event& e : t.events)
      if (e.kind == EventKind::UserAnnotation && is_step_name(e.name))
        plan.info.steps.push_back(step_number(e.name));
    std::sort(plan.info.steps.begin(), plan.info.steps.end());
    plan.collectives = collectives_of(t, &plan.collective_kind);
    plan.earliest_ns = earliest_time_ns(t);
    plan.pid = t.pid;
    auto [it, inserted] = plans.emplace(*rank, std::move(plan));
    if (!inserted)
      throw Error(cmd + ": rank " + std::to_string(*rank) + " has two traces, " +
                  it->second.info.file + " and " + files[static_cast<std::size_t>(w)] +
                  " (two runs in one directory?); give one run's directory");
  }
  if (plans.empty()) throw Error(cmd + ": no rank's trace in " + dir);

  // Clocks: the lowest rank is the reference.
  const RankPlan& ref = plans.begin()->second;
  for (auto& [rank, plan] : plans) {
    if (&plan == &ref) {
      plan.info.alignment = "reference";
      continue;
    }
    const bool by_collectives =
        options.align == MergeOptions::Align::Collectives ||
        (options.align == MergeOptions::Align::Auto && plan.info.host != ref.info.host);
    if (options.align == MergeOptions::Align::None) {
      plan.info.alignment = "none: as written";
    } else if (!by_collectives) {
      plan.info.alignment = "same host";
    } else {
      std::size_t pairs = 0;
      if (auto off = collective_offset(ref, plan, &pairs)) {
        plan.info.offset_ns = *off;
        plan.info.alignment = "collectives (" + std::to_string(pairs) + ")";
      } else {
        plan.info.alignment =
            "none: no collectives in common with rank " + std::to_string(ref.info.rank);
        out.notes.push_back("rank " + std::to_string(rank) +
                            "'s clock is not aligned: it has no collectives in common with "
                            "rank " +
                            std::to_string(ref.info.rank));
      }
    }
  }

  out.world_size = std::max<int64_t>(world_size, static_cast<int64_t>(plans.size()));
  for (int64_t r = 0; r < out.world_size; ++r)
    if (!plans.count(r)) out.missing_ranks.push_back(r);
  for (const auto& [rank, plan] : plans)
    if (plan.info.steps != ref.info.steps)
      out.notes.push_back("rank " + std::to_string(rank) + " recorded other steps than rank " +
                          std::to_string(ref.info.rank));
  if (!out.missing_ranks.empty()) {
    std::string m;
    for (int64_t r : out.missing_ranks) m += (m.empty() ? "" : ", ") + std::to_string(r);
    out.notes.push_back("no trace from rank(s) " + m + " of " + std::to_string(out.world_size) +
                        " (killed, or not yet written?)");
  }
  return out;
}

}  // namespace ptprof::detail
