// merge_ranks: several ranks' traces into one file (ptprof/merge.h). Two passes over the rank
// traces, each loaded one at a time: the first learns each rank (its number, host, steps and
// collectives' ends, to align clocks), the second writes it. Memory is one rank's trace.
#include "ptprof/merge.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

#include "ptprof/error.h"
#include "ptprof/trace.h"
#include "trace/chrome_trace.h"
#include "trace/clock.h"
#include "trace/json_writer.h"
#include "trace/trace_reader.h"

namespace ptprof {
namespace {

namespace fs = std::filesystem;

// The integer after "key": in a distributedInfo value, as torch.profiler and ptprof write it.
std::optional<int64_t> int_field(const std::string& json, const std::string& key) {
  const std::string quoted = "\"" + key + "\"";
  std::size_t at = json.find(quoted);
  if (at == std::string::npos) return std::nullopt;
  at += quoted.size();
  while (at < json.size() &&
         (std::isspace(static_cast<unsigned char>(json[at])) || json[at] == ':'))
    ++at;
  std::size_t end = at;
  while (end < json.size() && std::isdigit(static_cast<unsigned char>(json[end]))) ++end;
  if (end == at || end - at > 12) return std::nullopt;
  return std::stoll(json.substr(at, end - at));
}

// "<worker>.<time>.pt.trace.json[.gz]" -> "<worker>" (tensorboard_trace_handler's names).
std::string worker_of(const std::string& file) {
  const std::string name = fs::path(file).filename().string();
  return name.substr(0, name.find('.'));
}

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

// The ends of the trace's collectives of the most telling kind it has: NCCL kernels (they end
// together on every rank), then Gloo's work on its own thread ("gloo:all_reduce"), then the
// c10d ops as the caller sees them. Each as (name, end), in end order.
std::vector<std::pair<std::string, int64_t>> collective_ends(const Trace& t, int* kind) {
  std::vector<std::pair<std::string, int64_t>> by_kind[4];
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
    }
    if (k >= 0) by_kind[k].emplace_back(std::string(n), e.start_ns + e.duration_ns);
  }
  for (int k = 0; k < 4; ++k) {
    if (by_kind[k].empty()) continue;
    std::sort(by_kind[k].begin(), by_kind[k].end(),
              [](const auto& a, const auto& b) { return a.second < b.second; });
    *kind = k;
    return by_kind[k];
  }
  *kind = -1;
  return {};
}

struct RankPlan {
  MergedRank info;
  int collective_kind = -1;
  std::vector<std::pair<std::string, int64_t>> collectives;
  int64_t earliest_ns = 0;
  int64_t pid = 0;
};

// The offset that makes `other`'s collectives end when `ref`'s do: the median of the
// differences over the n-th collective of each name both have. Sets *pairs.
std::optional<int64_t> collective_offset(const RankPlan& ref, const RankPlan& other,
                                         std::size_t* pairs) {
  *pairs = 0;
  if (ref.collective_kind < 0 || ref.collective_kind != other.collective_kind) return std::nullopt;
  std::map<std::string, std::vector<int64_t>> a, b;
  for (const auto& [n, end] : ref.collectives) a[n].push_back(end);
  for (const auto& [n, end] : other.collectives) b[n].push_back(end);
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

MergeResult merge_ranks(const std::string& dir, const std::string& out,
                        const MergeOptions& options) {
  // Each worker (process) is one rank; of its windows, the one asked for.
  std::map<std::string, std::vector<std::string>> by_worker;
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw Error("ptprof merge: " + dir + " is not a directory (give the ranks' log directory)");
  for (const std::string& f : detail::trace_files_in(dir)) by_worker[worker_of(f)].push_back(f);

  MergeResult result;
  std::map<int64_t, RankPlan> plans;
  int64_t world_size = 0;
  for (const auto& [worker, files] : by_worker) {
    const int64_t n = static_cast<int64_t>(files.size());
    const int64_t w = options.window < 0 ? n + options.window : options.window;
    if (w < 0 || w >= n) {
      result.notes.push_back(worker + " has " + std::to_string(n) + " window(s), not window " +
                             std::to_string(options.window) + "; left out");
      continue;
    }
    RankPlan plan;
    plan.info.file = files[static_cast<std::size_t>(w)];
    const Trace t = detail::read_trace(plan.info.file);
    std::string host = worker;
    int64_t name_rank = -1;
    strip_number_suffix(&host, "rank", &name_rank);
    strip_number_suffix(&host, "");  // the pid
    plan.info.host = host;
    auto info = t.metadata.find("distributedInfo");
    std::optional<int64_t> rank;
    if (info != t.metadata.end()) {
      rank = int_field(info->second, "rank");
      if (auto ws = int_field(info->second, "world_size")) world_size = std::max(world_size, *ws);
    }
    if (!rank && name_rank >= 0) rank = name_rank;
    if (!rank)
      throw Error("ptprof merge: cannot tell the rank of " + plan.info.file +
                  ": no \"rank\" in its distributedInfo and no _rank<N> in its name");
    plan.info.rank = *rank;
    for (const Event& e : t.events) {
      if (e.kind == EventKind::UserAnnotation && is_step_name(e.name))
        plan.info.steps.push_back(
            std::strtoll(std::string(e.name.substr(e.name.find('#') + 1)).c_str(), nullptr, 10));
    }
    std::sort(plan.info.steps.begin(), plan.info.steps.end());
    plan.collectives = collective_ends(t, &plan.collective_kind);
    plan.earliest_ns = detail::earliest_time_ns(t);
    plan.pid = t.pid;
    auto [it, inserted] = plans.emplace(*rank, std::move(plan));
    if (!inserted)
      throw Error("ptprof merge: rank " + std::to_string(*rank) + " has two traces, " +
                  it->second.info.file + " and " + files[static_cast<std::size_t>(w)] +
                  " (two runs in one directory?); give one run's directory");
  }
  if (plans.empty()) throw Error("ptprof merge: no rank's trace to merge in " + dir);

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
        result.notes.push_back("rank " + std::to_string(rank) +
                               "'s clock is not aligned: it has no collectives in common with "
                               "rank " +
                               std::to_string(ref.info.rank));
      }
    }
  }

  result.world_size = std::max<int64_t>(world_size, static_cast<int64_t>(plans.size()));
  for (int64_t r = 0; r < result.world_size; ++r)
    if (!plans.count(r)) result.missing_ranks.push_back(r);
  std::set<int64_t> pids;
  bool pids_unique = true;
  int64_t earliest = 0;
  bool first = true;
  std::vector<int64_t> ref_steps = ref.info.steps;
  for (auto& [rank, plan] : plans) {
    pids_unique &= pids.insert(plan.pid).second;
    const int64_t e = plan.earliest_ns + plan.info.offset_ns;
    earliest = first ? e : std::min(earliest, e);
    first = false;
    if (plan.info.steps != ref_steps)
      result.notes.push_back("rank " + std::to_string(rank) + " recorded other steps than rank " +
                             std::to_string(ref.info.rank));
    result.ranks.push_back(plan.info);
  }
  if (!result.missing_ranks.empty()) {
    std::string m;
    for (int64_t r : result.missing_ranks) m += (m.empty() ? "" : ", ") + std::to_string(r);
    result.notes.push_back("no trace from rank(s) " + m + " of " +
                           std::to_string(result.world_size) + " (killed, or not yet written?)");
  }

  // What was done, for whoever opens the merged trace.
  detail::JsonWriter meta;
  meta.begin_object();
  meta.key("world_size").value(result.world_size);
  meta.key("ranks").begin_array();
  for (const MergedRank& r : result.ranks) {
    meta.begin_object();
    meta.key("rank").value(r.rank);
    meta.key("file").value(r.file);
    meta.key("host").value(r.host);
    meta.key("offset_ns").value(r.offset_ns);
    meta.key("alignment").value(r.alignment);
    meta.end_object();
  }
  meta.end_array();
  meta.key("missing_ranks").begin_array();
  for (int64_t r : result.missing_ranks) meta.value(r);
  meta.end_array();
  meta.end_object();
  meta.finish();
  const std::string meta_text = meta.buffer();

  const int64_t base = detail::trace_base_time_ns(earliest);
  detail::write_file_atomically(out, [&](detail::Sink& sink) {
    detail::JsonWriter w(&sink);
    detail::write_trace_header(w, {}, {{"ptprof_merge", meta_text}}, base);
    for (const auto& [rank, plan] : plans) {
      const Trace t = detail::read_trace(plan.info.file);
      detail::EventPlacement p;
      p.shift_ns = plan.info.offset_ns;
      // Pids of one host are unique; across hosts they may not be.
      p.cpu_pid = pids_unique ? t.pid : (rank + 1) * 10000000 + t.pid % 10000000;
      p.gpu_pid_base = 1000000000 + rank * 1000;
      p.flow_id_base = static_cast<uint64_t>(rank) << 32;
      p.process_name = "rank " + std::to_string(rank) + ": " + worker_of(plan.info.file);
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
