// torch_patterns.h: what the rules made from torch.profiler's pattern matchers
// (torch/profiler/_pattern_matcher.py) share: the inputs as the matcher reads them, what a
// matched op costs per step, where in the program it ran, and evidence grouped by what matched.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "analysis/report/host_tree.h"
#include "analysis/rules/rule.h"

namespace ptprof::detail {

// input_dtypes(event): the dtype of each input that is a tensor ("float", "c10::Half"), none
// for any other input (scalars, lists, None). Empty without record_shapes.
std::vector<std::optional<std::string_view>> input_dtypes(const Trace& t, const Event& e);
// input_shapes(event): each input's sizes, () for anything but a tensor.
std::vector<std::vector<int64_t>> input_shapes(const Trace& t, const Event& e);
bool has_inputs(const Event& e);
// "aten::mm [64, 10] [10, 512] float": an op with its tensor inputs' sizes and first dtype.
std::string op_with_inputs(const Trace& t, const Event& e);

// The GEMMs that cuBLAS runs (and that allow_tf32 and Tensor Cores concern).
bool is_gemm_op(std::string_view name);

// Where the program was when a node ran: the innermost Python call outside torch's own files
// (torch.profiler's source_code_location), else the innermost native frame of the op's stack
// outside libtorch, c10 and the standard library; "" when the trace has neither.
std::string where(const RuleContext& c, int32_t node);

// What matched nodes cost per step: the host time of their spans inside the steps, or the GPU
// time their subtrees launched inside the steps, whichever is larger (the step could be bound
// by either: removing the work saves at most the larger).
int64_t cost_per_step(const RuleContext& c, const std::vector<int32_t>& nodes);
// The same for one node.
int64_t cost_per_step(const RuleContext& c, int32_t node);

// Evidence grouped by what matched: count and cost per step, the note of its first match.
class MatchedEvidence {
 public:
  void add(const RuleContext& c, const std::string& what, int32_t node, std::string note = {});
  // The groups with the largest cost first (then the most frequent), at most `limit`.
  std::vector<Report::Evidence> take(const RuleContext& c, std::size_t limit = 5);
  // Every matched node.
  const std::vector<int32_t>& nodes() const { return nodes_; }
  // cost_per_step of every matched node: the finding's saving.
  int64_t cost(const RuleContext& c);
  bool empty() const { return nodes_.empty(); }

 private:
  struct Group {
    std::vector<int32_t> nodes;
    std::string note;
    std::size_t order = 0;
  };
  std::map<std::string, Group> groups_;
  std::vector<int32_t> nodes_;
  std::optional<int64_t> cost_;
};

}  // namespace ptprof::detail
