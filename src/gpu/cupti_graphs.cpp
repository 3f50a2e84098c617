#include "gpu/cupti_graphs.h"

#include "ptprof/event.h"

namespace ptprof::detail {
namespace {

// A step range names the step the capture happened in, which says nothing of the replays.
bool is_capture_range(bool user_range, std::string_view name) {
  return user_range && !is_step_name(name);
}

}  // namespace

GraphCaptures& GraphCaptures::get() {
  static GraphCaptures* g = new GraphCaptures();  // leaked: CUPTI may call back during exit
  return *g;
}

void GraphCaptures::created(uint64_t node, uint32_t graph, const OpenOp* open, std::size_t n) {
  if (n == 0) return;  // nothing to attribute it to (instantiation's own nodes, for one)
  GraphCapture c;
  c.graph_id = graph;
  c.ops.reserve(n);
  for (std::size_t i = 0; i < n; ++i) c.ops.push_back(open[i].id);
  if (open[n - 1].name != nullptr) {
    c.named = true;
    c.captured_by = open[n - 1].name;
    for (std::size_t i = 0; i < n; ++i) {
      if (open[i].name != nullptr && is_capture_range(open[i].user_range, open[i].name))
        c.ranges.emplace_back(open[i].name);
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  nodes_.emplace(node, std::move(c));
}

void GraphCaptures::cloned(uint64_t node, uint32_t graph, uint64_t original) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = nodes_.find(original);
  if (it == nodes_.end()) return;
  GraphCapture copy = it->second;
  copy.graph_id = graph;
  copy.destroyed = false;
  nodes_[node] = std::move(copy);  // over what its creation, reported first, may have put
}

void GraphCaptures::destroyed(uint64_t node) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = nodes_.find(node);
  if (it != nodes_.end()) it->second.destroyed = true;
}

void GraphCaptures::name_from(const Trace& trace) {
  std::lock_guard<std::mutex> lock(mu_);
  bool any = false;
  for (const auto& [node, c] : nodes_) any |= !c.named;
  if (!any) return;
  std::unordered_map<uint64_t, const Event*> by_id;
  for (const Event& e : trace.events) {
    if ((e.kind == EventKind::CpuOp || e.kind == EventKind::UserAnnotation) && e.external_id != 0)
      by_id.emplace(e.external_id, &e);
  }
  for (auto& [node, c] : nodes_) {
    if (c.named || c.ops.empty()) continue;
    auto inner = by_id.find(c.ops.back());
    if (inner == by_id.end()) continue;
    c.named = true;
    c.captured_by = std::string(inner->second->name);
    for (uint64_t id : c.ops) {
      auto it = by_id.find(id);
      if (it == by_id.end()) continue;
      const Event& e = *it->second;
      if (is_capture_range(e.kind == EventKind::UserAnnotation, e.name))
        c.ranges.emplace_back(e.name);
    }
  }
}

GraphCaptureMap GraphCaptures::snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return nodes_;
}

void GraphCaptures::forget_destroyed() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = nodes_.begin(); it != nodes_.end();) {
    if (it->second.destroyed) {
      it = nodes_.erase(it);
    } else {
      ++it;
    }
  }
}

void GraphCaptures::clear() {
  std::lock_guard<std::mutex> lock(mu_);
  nodes_.clear();
}

std::size_t GraphCaptures::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return nodes_.size();
}

}  // namespace ptprof::detail
