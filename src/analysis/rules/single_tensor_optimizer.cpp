// torch.profiler's OptimizerSingleTensorPattern: an optimizer that updates each parameter with
// its own small ops instead of all of them at once (foreach or fused).
//
// torch's matcher, kept exactly: a call whose name ends in _single_tensor_adam, _sgd or _adamw
// (the Python tracer's frames of torch.optim, so with_stack in Python). Where the trace has no
// Python calls, ptprof finds the same two ways torch cannot: the optimizer's step range
// (torch.optim's "Optimizer.step#Adam.step", also "AdamW" and "SGD") holding no aten::_foreach_
// or aten::_fused_ op; and in a C++ program recorded with with_stack, the ops whose stack passes
// through torch::optim::Adam::step, AdamW::step or SGD::step, which update one parameter at a
// time in libtorch.
#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/names.h"
#include "analysis/rules/registry.h"
#include "analysis/rules/torch_patterns.h"

namespace ptprof::detail {

namespace {

constexpr std::string_view kOptimizers[] = {"adam", "sgd", "adamw"};
constexpr std::string_view kSteps[] = {"Optimizer.step#Adam.step", "Optimizer.step#AdamW.step",
                                       "Optimizer.step#SGD.step"};
constexpr std::string_view kCppSteps[] = {"torch::optim::Adam::step", "torch::optim::AdamW::step",
                                          "torch::optim::SGD::step"};

bool single_tensor_frame(std::string_view name) {
  for (std::string_view o : kOptimizers)
    if (ends_with(name, "_single_tensor_" + std::string(o))) return true;
  return false;
}

// Whether any op under `n` is a multi-tensor one.
bool multi_tensor_below(const HostTree& tree, int32_t n) {
  bool found = false;
  tree.below(n, [&](int32_t k) {
    found |=
        starts_with(tree.name(k), "aten::_foreach_") || starts_with(tree.name(k), "aten::_fused_");
    return !found;
  });
  return found;
}

// The libtorch optimizer step each stack passes through (an index into kCppSteps), or -1.
std::vector<int8_t> cpp_steps(const Trace& t) {
  std::vector<int8_t> out(t.stacks.size(), -1);
  for (std::size_t i = 0; i < t.stacks.size(); ++i)
    for (const std::string& frame : t.stacks[i])
      for (std::size_t k = 0; k < std::size(kCppSteps); ++k) {
        const std::string_view s = kCppSteps[k];
        if (starts_with(frame, s) &&
            (frame.size() == s.size() || frame[s.size()] == '(' || frame[s.size()] == ' '))
          out[i] = static_cast<int8_t>(k);
      }
  return out;
}

void evaluate(const RuleContext& c, RuleOutput& out) {
  MatchedEvidence matched;
  if (!c.t.python_functions.empty()) {
    const HostTree& tree = c.host_tree();
    for (int32_t n = 0; n < tree.size(); ++n)
      if (tree.is_python(n) && single_tensor_frame(tree.name(n)))
        matched.add(c, std::string(tree.name(n)), n);
  } else {
    bool any = false;
    for (const Event& e : c.t.events) {
      if (!is_host_range(e.kind)) continue;
      for (std::string_view s : kSteps) any |= e.name == s;
      any |= e.stack >= 0;
    }
    if (!any) return;
    const HostTree& tree = c.host_tree();
    const std::vector<int8_t> steps = cpp_steps(c.t);
    std::string what[std::size(kCppSteps)];
    for (std::size_t k = 0; k < std::size(kCppSteps); ++k)
      what[k] = std::string(kCppSteps[k]) + ": one op per parameter";
    auto cpp_step = [&](const Event& e) {
      return e.stack >= 0 && static_cast<std::size_t>(e.stack) < steps.size()
                 ? steps[static_cast<std::size_t>(e.stack)]
                 : int8_t{-1};
    };
    for (int32_t n = 0; n < tree.size(); ++n) {
      const Event& e = c.t.events[static_cast<std::size_t>(tree.event(n))];
      bool step_range = false;
      for (std::string_view s : kSteps) step_range |= e.name == s;
      if (step_range) {
        if (!tree.children(n).empty() && !multi_tensor_below(tree, n))
          matched.add(c, std::string(e.name), n);
        continue;
      }
      // The topmost ops of a libtorch optimizer's step: their parent is not in it.
      const int8_t step = cpp_step(e);
      if (step < 0 || e.kind != EventKind::CpuOp) continue;
      const int32_t parent = tree.parent(n);
      if (parent >= 0 && cpp_step(c.t.events[static_cast<std::size_t>(tree.event(parent))]) >= 0)
        continue;
      matched.add(c, what[step], n);
    }
  }
  if (matched.empty()) return;
  Report::Finding f;
  f.title = "The optimizer updates each parameter with its own ops";
  f.saving_ns_per_step = matched.cost(c);
  f.evidence = matched.take(c);
  f.recommendation =
      "Each parameter's update is a handful of small ops, each dispatched and launched on its "
      "own. Update all parameters at once: foreach=True or fused=True in Python's torch.optim; "
      "libtorch's torch::optim optimizers have no such option, but the multi-tensor kernels are "
      "ATen ops you can call on the lists of parameters, gradients and states: "
      "at::_fused_adam_ / at::_fused_adamw_ / at::_fused_sgd_ (CUDA), or the at::_foreach_* "
      "ops (at::_foreach_mul_, at::_foreach_add_, at::_foreach_addcdiv_, ...).";
  out.add(std::move(f));
}

}  // namespace

const Rule single_tensor_optimizer_rule = {
    "single_tensor_optimizer",
    "torch",
    "OptimizerSingleTensorPattern: a Python call ending in _single_tensor_adam, _sgd or _adamw; "
    "without Python calls, an Optimizer.step#Adam.step (AdamW, SGD) range with no "
    "aten::_foreach_ or aten::_fused_ op in it, or ops whose stack passes through libtorch's "
    "torch::optim::Adam::step (AdamW, SGD)",
    "the optimizer step's time (host, or the GPU work it launched if longer)",
    {},
    evaluate,
};

}  // namespace ptprof::detail
