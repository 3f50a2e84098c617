// libFuzzer target: the decoder of an op's recorded details (src/details.h) on arbitrary
// bytes, and the FLOP estimates computed from what it decodes. The decoder promises to
// decode malformed bytes "as far as they are valid"; the estimates must never overflow.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "recording/details.h"
#include "trace/flops.h"

namespace {
// Every op with a formula, and one without.
constexpr std::string_view kOps[] = {
    "aten::mm",
    "aten::addmm",
    "aten::bmm",
    "aten::baddbmm",
    "aten::matmul",
    "aten::linear",
    "aten::convolution",
    "aten::_convolution",
    "aten::conv1d",
    "aten::conv2d",
    "aten::conv3d",
    "aten::conv_transpose2d",
    "aten::convolution_backward",
    "aten::scaled_dot_product_attention",
    "aten::_scaled_dot_product_flash_attention",
    "aten::_scaled_dot_product_efficient_attention_backward",
    "aten::add",
    "aten::mul_",
    "aten::div",
    "aten::relu",
};
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view op = kOps[data[0] % (sizeof(kOps) / sizeof(kOps[0]))];
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  const ptprof::detail::DecodedDetails d = ptprof::detail::decode_details(bytes);
  for (const ptprof::OpInput& in : d.inputs) {
    if (in.kind == ptprof::OpInput::Kind::Tensor && !in.strides.empty() &&
        in.strides.size() != in.sizes.size())
      __builtin_trap();  // strides are per dimension
  }
  // The length-only walk the session uses must stop exactly where the decoder does.
  const ptprof::detail::DecodedDetails walked =
      ptprof::detail::decode_details(bytes, /*keep_inputs=*/false);
  if (walked.inputs_bytes != d.inputs_bytes || walked.has_inputs != d.has_inputs ||
      walked.stack != d.stack)
    __builtin_trap();
  (void)ptprof::detail::estimate_flops(op, d.inputs);
  return 0;
}
