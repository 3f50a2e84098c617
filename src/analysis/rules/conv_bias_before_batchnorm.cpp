// torch.profiler's Conv2dBiasFollowedByBatchNorm2dPattern: a convolution's bias that the batch
// norm right after it cancels.
//
// torch's matcher, kept exactly: an aten::conv2d whose third input (the bias) is a tensor; from
// it up to the first "nn.Module: Conv2d..." call (or, without one, to its top-level ancestor),
// the next sibling of that is an "nn.Module: BatchNorm2d..." call. The module calls are the
// Python tracer's (with_stack in Python). Where the trace has no Python calls, ptprof asks the
// operators themselves: the aten::conv2d's next sibling is an aten::batch_norm (as when a C++
// program calls bn->forward(conv->forward(x))).
#include <string>
#include <vector>

#include "analysis/names.h"
#include "analysis/rules/registry.h"
#include "analysis/rules/torch_patterns.h"

namespace ptprof::detail {

namespace {

// The bias additions ATen runs as ops of their own inside the convolution (cuDNN's path adds
// the bias after the convolution); elsewhere it is fused into the convolution's kernel.
std::vector<int32_t> bias_adds(const HostTree& tree, int32_t conv) {
  std::vector<int32_t> found;
  tree.below(conv, [&](int32_t k) {
    const bool add = tree.name(k) == "aten::add_" || tree.name(k) == "aten::add";
    if (add) found.push_back(k);
    return !add;
  });
  return found;
}

void evaluate(const RuleContext& c, RuleOutput& out) {
  bool any = false, without_inputs = false;
  for (const Event& e : c.t.events) {
    if (e.kind != EventKind::CpuOp || e.name != "aten::conv2d") continue;
    any = true;
    without_inputs |= !has_inputs(e);
  }
  if (!any) return;
  const bool python = !c.t.python_functions.empty();
  const HostTree& tree = c.host_tree();
  MatchedEvidence matched;
  std::vector<int32_t> adds;
  for (std::size_t i = 0; i < c.t.events.size(); ++i) {
    const Event& e = c.t.events[i];
    if (e.kind != EventKind::CpuOp || e.name != "aten::conv2d") continue;
    const auto dtypes = input_dtypes(c.t, e);
    if (dtypes.size() < 3 || !dtypes[2]) continue;
    const int32_t conv = tree.node_of_event(static_cast<int64_t>(i));
    bool match = false;
    if (python) {
      int32_t n = conv;
      while (tree.parent(n) >= 0 && !starts_with(tree.name(n), "nn.Module: Conv2d"))
        n = tree.parent(n);
      const int32_t next = tree.next_sibling(n);
      match = next >= 0 && starts_with(tree.name(next), "nn.Module: BatchNorm2d");
    } else {
      const int32_t next = tree.next_sibling(conv);
      match = next >= 0 && tree.name(next) == "aten::batch_norm";
    }
    if (!match) continue;
    matched.add(c, op_with_inputs(c.t, e) + ", then batch norm", conv);
    const std::vector<int32_t> a = bias_adds(tree, conv);
    adds.insert(adds.end(), a.begin(), a.end());
  }
  if (matched.empty()) {
    if (without_inputs) out.needs_input_types();
    return;
  }
  Report::Finding f;
  f.title = std::to_string(matched.nodes().size()) +
            " convolutions add a bias that the batch norm after them cancels";
  // The bias addition where it is an op of its own; where it is fused, the trace shows no time.
  if (!adds.empty()) f.saving_ns_per_step = cost_per_step(c, adds);
  f.evidence = matched.take(c);
  f.recommendation =
      "Batch norm subtracts each channel's mean, so a bias added just before it has no effect: "
      "it costs an addition per output element and a parameter to train. Create the convolution "
      "without one: torch::nn::Conv2dOptions(in, out, k).bias(false) in C++, nn.Conv2d(..., "
      "bias=False) in Python.";
  out.add(std::move(f));
}

}  // namespace

const Rule conv_bias_before_batchnorm_rule = {
    "conv_bias_before_batchnorm",
    "torch",
    "Conv2dBiasFollowedByBatchNorm2dPattern: an aten::conv2d with a bias whose nn.Module: Conv2d "
    "call is followed by an nn.Module: BatchNorm2d call; without Python calls, whose next "
    "sibling op is aten::batch_norm; needs record_shapes",
    "the time of the bias additions ATen runs as ops of their own inside those convolutions "
    "(none shown where the bias is fused into the convolution)",
    {},
    evaluate,
};

}  // namespace ptprof::detail
