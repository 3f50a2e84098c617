#include "trace/fwd_bwd.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <utility>

namespace ptprof::detail {

namespace {

bool is_cpu_op(const Event& e) {
  return e.kind == EventKind::CpuOp || e.kind == EventKind::UserAnnotation;
}

bool is_evaluate_function(const Event& e) {
  return e.name.substr(0, kEvaluateFunctionPrefix.size()) == kEvaluateFunctionPrefix;
}

}  // namespace

std::vector<FwdBwdLink> fwd_bwd_links(const std::vector<Event>& events) {
  // Only ops that can take part, and none at all without both sides (inference, or a trace
  // read with no links in it): writing such a trace pays one pass for this.
  std::vector<std::size_t> ops;
  bool backward = false, forward = false;
  for (std::size_t i = 0; i < events.size(); ++i) {
    const Event& e = events[i];
    if (!is_cpu_op(e) || e.sequence_nr < 0 || (e.thread_id == 0 && e.fwd_thread_id == 0))
      continue;
    ops.push_back(i);
    backward = backward || e.fwd_thread_id != 0;
    forward = forward || e.fwd_thread_id == 0;
  }
  if (!backward || !forward) return {};
  std::stable_sort(ops.begin(), ops.end(), [&](std::size_t a, std::size_t b) {
    return events[a].start_ns < events[b].start_ns;
  });
  std::map<std::pair<uint64_t, int64_t>, std::size_t> latest;  // (thread, seq) -> forward op
  std::vector<FwdBwdLink> links;
  for (std::size_t i : ops) {
    const Event& e = events[i];
    if (e.fwd_thread_id != 0) {
      if (is_evaluate_function(e)) continue;  // its node links, not it
      auto it = latest.find({e.fwd_thread_id, e.sequence_nr});
      if (it != latest.end()) links.push_back({it->second, i});
    } else if (e.thread_id != 0) {
      latest[{e.thread_id, e.sequence_nr}] = i;
    }
  }
  return links;
}

void number_evaluate_functions(std::vector<Event>& events) {
  // Each evaluate_function op's earliest child.
  std::map<std::size_t, std::size_t> first_child;
  for (std::size_t i = 0; i < events.size(); ++i) {
    const Event& e = events[i];
    if (!is_cpu_op(e) || e.parent < 0 || static_cast<std::size_t>(e.parent) >= events.size())
      continue;
    const auto p = static_cast<std::size_t>(e.parent);
    if (!is_evaluate_function(events[p])) continue;
    auto [it, added] = first_child.emplace(p, i);
    if (!added && e.start_ns < events[it->second].start_ns) it->second = i;
  }
  for (const auto& [p, c] : first_child) {
    const Event& node = events[c];
    if (node.fwd_thread_id == 0 || node.sequence_nr < 0) continue;  // not a backward node
    Event& eval = events[p];
    if (eval.sequence_nr >= 0) continue;  // recorded with its own
    eval.sequence_nr = node.sequence_nr;
    eval.fwd_thread_id = node.fwd_thread_id;
  }
}

}  // namespace ptprof::detail
