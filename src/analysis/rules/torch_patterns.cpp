// What the torch.profiler pattern rules share (torch_patterns.h).
#include "analysis/rules/torch_patterns.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "analysis/names.h"

namespace ptprof::detail {

namespace {

const std::vector<OpInput>* inputs_of(const Trace& t, const Event& e) {
  if (e.inputs < 0 || static_cast<std::size_t>(e.inputs) >= t.op_inputs.size()) return nullptr;
  return &t.op_inputs[static_cast<std::size_t>(e.inputs)];
}

// Frames of libtorch, c10, the standard library and the loader: not the program's own code.
bool library_frame(std::string_view f) {
  for (std::string_view p : {"at::", "c10::", "torch::", "std::", "caffe2::", "decltype(", "void ",
                             "__", "_start", "lib", "<", "pybind11::"})
    if (starts_with(f, p)) return true;
  return contains(f, ".so+0x") || contains(f, ".so.");
}

}  // namespace

bool has_inputs(const Event& e) {
  return e.inputs >= 0;
}

std::vector<std::optional<std::string_view>> input_dtypes(const Trace& t, const Event& e) {
  std::vector<std::optional<std::string_view>> out;
  if (const auto* in = inputs_of(t, e)) {
    for (const OpInput& i : *in) {
      if (i.kind == OpInput::Kind::Tensor) {
        out.emplace_back(i.dtype);
      } else {
        out.emplace_back(std::nullopt);
      }
    }
  }
  return out;
}

std::vector<std::vector<int64_t>> input_shapes(const Trace& t, const Event& e) {
  std::vector<std::vector<int64_t>> out;
  if (const auto* in = inputs_of(t, e))
    for (const OpInput& i : *in)
      out.push_back(i.kind == OpInput::Kind::Tensor ? i.sizes : std::vector<int64_t>{});
  return out;
}

std::string op_with_inputs(const Trace& t, const Event& e) {
  std::string s(e.name);
  std::string dtype;
  if (const auto* in = inputs_of(t, e)) {
    for (const OpInput& i : *in) {
      if (i.kind != OpInput::Kind::Tensor) continue;
      s += " [";
      for (std::size_t k = 0; k < i.sizes.size(); ++k)
        s += (k ? ", " : "") + std::to_string(i.sizes[k]);
      s += "]";
      if (dtype.empty()) dtype = i.dtype;
    }
  }
  if (!dtype.empty()) s += " " + dtype;
  return s;
}

bool is_gemm_op(std::string_view n) {
  return n == "aten::mm" || n == "aten::addmm" || n == "aten::bmm" || n == "aten::baddbmm";
}

std::string where(const RuleContext& c, int32_t node) {
  const HostTree& tree = c.host_tree();
  for (int32_t n = tree.parent(node); n >= 0; n = tree.parent(n)) {
    if (!tree.is_python(n)) continue;
    const std::string_view name = tree.name(n);
    if (!starts_with(name, "torch/") && !starts_with(name, "nn.Module:") &&
        !starts_with(name, "<built-in") && !starts_with(name, "<"))
      return std::string(name);
  }
  for (int32_t n = node; n >= 0; n = tree.parent(n)) {
    if (tree.is_python(n)) continue;
    const Event& e = c.t.events[static_cast<std::size_t>(tree.event(n))];
    if (e.stack < 0 || static_cast<std::size_t>(e.stack) >= c.t.stacks.size()) continue;
    const auto& frames = c.t.stacks[static_cast<std::size_t>(e.stack)];
    for (auto f = frames.rbegin(); f != frames.rend(); ++f)
      if (!library_frame(*f)) return *f;
    return "";
  }
  return "";
}

int64_t cost_per_step(const RuleContext& c, const std::vector<int32_t>& nodes) {
  const HostTree& tree = c.host_tree();
  // The subtrees' operators: the GPU work of each is keyed by its External id. A node below
  // another of the list is walked twice; its External ids are counted once.
  std::vector<uint64_t> ops;
  std::vector<int32_t> todo(nodes.begin(), nodes.end());
  while (!todo.empty()) {
    const int32_t n = todo.back();
    todo.pop_back();
    if (!tree.is_python(n)) {
      const uint64_t ext = c.t.events[static_cast<std::size_t>(tree.event(n))].external_id;
      if (ext != 0) ops.push_back(ext);
    }
    for (int32_t child : tree.children(n)) todo.push_back(child);
  }
  std::sort(ops.begin(), ops.end());
  ops.erase(std::unique(ops.begin(), ops.end()), ops.end());
  Intervals spans;
  spans.reserve(nodes.size());
  for (int32_t n : nodes) spans.push_back({tree.start(n), tree.end(n)});
  const int64_t host_ns = total(intersect(merge(std::move(spans)), c.facts.step_set));
  int64_t device_ns = 0;
  const auto& by_op = c.device_ns_by_op();
  if (!by_op.empty()) {
    for (uint64_t ext : ops) {
      auto it = by_op.find(ext);
      if (it != by_op.end()) device_ns += it->second;
    }
  }
  return static_cast<int64_t>(static_cast<double>(std::max(host_ns, device_ns)) / c.steps);
}

int64_t cost_per_step(const RuleContext& c, int32_t node) {
  return cost_per_step(c, std::vector<int32_t>{node});
}

void MatchedEvidence::add(const RuleContext& c, const std::string& what, int32_t node,
                          std::string note) {
  auto [it, fresh] = groups_.try_emplace(what);
  if (fresh) {
    it->second.order = groups_.size();
    it->second.note = note.empty() ? where(c, node) : std::move(note);
  }
  it->second.nodes.push_back(node);
  nodes_.push_back(node);
  cost_.reset();
}

int64_t MatchedEvidence::cost(const RuleContext& c) {
  if (!cost_) cost_ = cost_per_step(c, nodes_);
  return *cost_;
}

std::vector<Report::Evidence> MatchedEvidence::take(const RuleContext& c, std::size_t limit) {
  struct Row {
    int64_t ns;
    double per_step;
    std::size_t order;
    Report::Evidence evidence;
  };
  std::vector<Row> rows;
  const HostTree& tree = c.host_tree();
  for (auto& [what, g] : groups_) {
    int64_t inside = 0;
    for (int32_t n : g.nodes) inside += c.in_steps(tree.start(n), tree.start(n)) > 0;
    const double per_step = static_cast<double>(inside) / c.steps;
    // One group is every match: its cost is the finding's, computed once.
    const int64_t ns = groups_.size() == 1 ? cost(c) : cost_per_step(c, g.nodes);
    rows.push_back({ns, per_step, g.order, c.evidence(what, per_step, ns, g.note)});
  }
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    return std::tie(b.ns, b.per_step, a.order) < std::tie(a.ns, a.per_step, b.order);
  });
  std::vector<Report::Evidence> out;
  for (std::size_t i = 0; i < rows.size() && i < limit; ++i)
    out.push_back(std::move(rows[i].evidence));
  return out;
}

}  // namespace ptprof::detail
