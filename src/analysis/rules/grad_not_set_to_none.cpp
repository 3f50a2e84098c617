// torch.profiler's GradNotSetToNonePattern: zero_grad() writes zeros into the gradients
// instead of dropping them.
//
// torch's matcher, kept exactly: a call whose name ends in ": zero_grad" (the Python tracer's
// frame of Optimizer.zero_grad or Module.zero_grad) with an aten::zero_ anywhere below it whose
// parent is not aten::zeros. Where the trace has no Python calls, ptprof matches the same below
// torch.optim's "Optimizer.zero_grad#..." range, and, in a C++ program recorded with
// with_stack, aten::zero_ ops whose stack passes through torch::optim::Optimizer::zero_grad or
// torch::nn::Module::zero_grad (called with set_to_none = false).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/names.h"
#include "analysis/rules/registry.h"
#include "analysis/rules/torch_patterns.h"

namespace ptprof::detail {

namespace {

// The aten::zero_ ops below `n` that aten::zeros did not call.
std::vector<int32_t> zeroing_below(const HostTree& tree, int32_t n) {
  std::vector<int32_t> found;
  tree.below(n, [&](int32_t k) {
    if (tree.name(k) == "aten::zero_" &&
        (tree.parent(k) < 0 || tree.name(tree.parent(k)) != "aten::zeros"))
      found.push_back(k);
    return true;
  });
  return found;
}

bool zero_grad_frame(std::string_view frame) {
  for (std::string_view f : {"torch::optim::Optimizer::zero_grad", "torch::nn::Module::zero_grad"})
    if (starts_with(frame, f) &&
        (frame.size() == f.size() || frame[f.size()] == '(' || frame[f.size()] == ' '))
      return true;
  return false;
}

void evaluate(const RuleContext& c, RuleOutput& out) {
  bool any = !c.t.python_functions.empty();
  for (const Event& e : c.t.events)
    any |= is_host_range(e.kind) &&
           (e.name == "aten::zero_" || starts_with(e.name, "Optimizer.zero_grad#"));
  if (!any) return;
  const HostTree& tree = c.host_tree();
  MatchedEvidence matched;
  std::vector<int32_t> zeroing;  // what set_to_none saves
  auto match = [&](int32_t n) {
    const std::vector<int32_t> zeros = zeroing_below(tree, n);
    if (zeros.empty()) return;
    matched.add(c, std::string(tree.name(n)), n,
                std::to_string(zeros.size()) + " aten::zero_ calls");
    zeroing.insert(zeroing.end(), zeros.begin(), zeros.end());
  };
  if (!c.t.python_functions.empty()) {
    for (int32_t n = 0; n < tree.size(); ++n)
      if (ends_with(tree.name(n), ": zero_grad") && !tree.children(n).empty()) match(n);
  } else {
    std::vector<int8_t> in_zero_grad(c.t.stacks.size(), 0);
    for (std::size_t i = 0; i < c.t.stacks.size(); ++i)
      for (const std::string& frame : c.t.stacks[i]) in_zero_grad[i] |= zero_grad_frame(frame);
    for (int32_t n = 0; n < tree.size(); ++n) {
      const Event& e = c.t.events[static_cast<std::size_t>(tree.event(n))];
      if (starts_with(e.name, "Optimizer.zero_grad#")) {
        match(n);
      } else if (e.name == "aten::zero_" && e.stack >= 0 &&
                 static_cast<std::size_t>(e.stack) < in_zero_grad.size() &&
                 in_zero_grad[static_cast<std::size_t>(e.stack)] &&
                 (tree.parent(n) < 0 || tree.name(tree.parent(n)) != "aten::zeros")) {
        // Unless the range above already holds it.
        bool under_range = false;
        for (int32_t p = tree.parent(n); p >= 0 && !under_range; p = tree.parent(p))
          under_range = starts_with(tree.name(p), "Optimizer.zero_grad#");
        if (under_range) continue;
        matched.add(c, "zero_grad(): aten::zero_ on the gradients", n);
        zeroing.push_back(n);
      }
    }
  }
  if (matched.empty()) return;
  Report::Finding f;
  f.title = "zero_grad() fills the gradients with zeros instead of dropping them";
  f.saving_ns_per_step = cost_per_step(c, zeroing);
  f.evidence = matched.take(c);
  f.recommendation =
      "Each step writes zeros into every gradient (one fill per parameter) and backward then "
      "adds to them. Set them to none instead, so backward writes them: "
      "optimizer.zero_grad(/*set_to_none=*/true) (and module->zero_grad(true)), the default "
      "in libtorch; zero_grad(set_to_none=True) in Python.";
  out.add(std::move(f));
}

}  // namespace

const Rule grad_not_set_to_none_rule = {
    "grad_not_set_to_none",
    "torch",
    "GradNotSetToNonePattern: an aten::zero_ (not called by aten::zeros) below a Python call "
    "ending in \": zero_grad\"; without Python calls, below an Optimizer.zero_grad# range or "
    "with libtorch's Optimizer::zero_grad / Module::zero_grad on its stack",
    "the time of those aten::zero_ calls (host, or their GPU work if longer)",
    {},
    evaluate,
};

}  // namespace ptprof::detail
