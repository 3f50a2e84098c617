// torch.profiler's MatMulDimInFP16Pattern: half or bfloat16 matmuls whose dimensions are not
// multiples of 8, which Tensor Cores run less efficiently.
//
// torch's matcher, kept exactly: an aten::mm, aten::bmm or aten::addmm whose first input is a
// float16 or bfloat16 tensor and where some input's last two dimensions are not all multiples
// of 8 (fp16_matmul_dim_multiple). Like torch, on any device.
#include <string>
#include <string_view>
#include <vector>

#include "analysis/rules/registry.h"
#include "analysis/rules/torch_patterns.h"

namespace ptprof::detail {

namespace {

bool half_precision(std::string_view dtype) {
  return dtype == "c10::Half" || dtype == "c10::BFloat16" || dtype == "Half" ||
         dtype == "BFloat16" || dtype == "half" || dtype == "bfloat16";
}

bool matched_op(std::string_view n) {
  return n == "aten::mm" || n == "aten::bmm" || n == "aten::addmm";
}

void evaluate(const RuleContext& c, RuleOutput& out) {
  const int64_t multiple = c.th.fp16_matmul_dim_multiple;
  MatchedEvidence matched;
  bool without_inputs = false;
  for (std::size_t i = 0; i < c.t.events.size(); ++i) {
    const Event& e = c.t.events[i];
    if (e.kind != EventKind::CpuOp || !matched_op(e.name)) continue;
    if (!has_inputs(e)) {
      without_inputs = true;
      continue;
    }
    const auto& inputs = c.t.op_inputs[static_cast<std::size_t>(e.inputs)];
    // input_dtypes(event)[0]: the first input's, when it is a tensor.
    if (inputs.empty() || inputs[0].kind != OpInput::Kind::Tensor ||
        !half_precision(inputs[0].dtype))
      continue;
    bool aligned = true;
    for (const auto& shape : input_shapes(c.t, e))
      for (std::size_t d = shape.size() >= 2 ? shape.size() - 2 : 0; d < shape.size(); ++d)
        aligned &= multiple > 0 && shape[d] % multiple == 0;
    if (aligned) continue;
    matched.add(c, op_with_inputs(c.t, e), c.host_tree().node_of_event(static_cast<int64_t>(i)));
  }
  if (matched.empty()) {
    if (without_inputs) out.needs_input_types();
    return;
  }
  Report::Finding f;
  f.title = std::to_string(matched.nodes().size()) +
            " half-precision matmuls have dimensions that are not multiples of " +
            std::to_string(multiple);
  f.saving_ns_per_step = matched.cost(c);
  f.evidence = matched.take(c);
  f.recommendation =
      "Tensor Cores work on tiles whose sides are multiples of 8 for float16/bfloat16; other "
      "sizes take slower paths. Pad the dimensions that set them (hidden sizes, vocabulary, "
      "batch, sequence length) to multiples of 8 (64 is better on recent GPUs), e.g. with "
      "torch::nn::functional::pad, or choose sizes that divide.";
  out.add(std::move(f));
}

}  // namespace

const Rule fp16_matmul_dims_rule = {
    "fp16_matmul_dims",
    "torch",
    "MatMulDimInFP16Pattern: an aten::mm, bmm or addmm whose first input is float16 or "
    "bfloat16 and where some input's last two dimensions are not all multiples of "
    "`fp16_matmul_dim_multiple`; needs record_shapes",
    "the time of those matmuls (host, or their GPU work if longer)",
    {"fp16_matmul_dim_multiple"},
    evaluate,
};

}  // namespace ptprof::detail
