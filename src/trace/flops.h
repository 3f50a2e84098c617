// flops.h: estimated floating point operations of an op from its recorded inputs (with_flops).
//
// The formulas are those of PyTorch's FLOP counter (torch/utils/flop_counter.py) and of the
// legacy profiler's computeFlops (torch/csrc/profiler/util.cpp): a multiply-add counts as 2.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "ptprof/event.h"

namespace ptprof::detail {

// `inputs` are the op's schema arguments in order, as record_shapes captured them. Returns 0
// for an op without a formula, or when a shape the formula needs is missing or inconsistent.
//
// Covered: mm, addmm, bmm, baddbmm, matmul, linear; convolution, _convolution, conv1d/2d/3d,
// conv_transpose1d/2d/3d, convolution_backward; scaled_dot_product_attention and the fused
// _scaled_dot_product_*_attention kernels (and their _backward); add, sub, mul, div (and
// in-place, rsub, true_divide). Nested ops each get their own count (aten::linear and the
// aten::addmm it calls both have one), so a sum over all ops counts such work twice.
uint64_t estimate_flops(std::string_view op_name, const std::vector<OpInput>& inputs);

// Whether estimate_flops has a formula for `op_name` (a count of 0 may still come out of one,
// where the shapes are missing). With with_flops and no record_shapes the recorder keeps the
// inputs of these ops only.
bool has_flops_formula(std::string_view op_name);

}  // namespace ptprof::detail
