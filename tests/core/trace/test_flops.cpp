// estimate_flops: each formula on shapes whose count is worked out by hand in the comments.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "trace/flops.h"

using ptprof::OpInput;
using ptprof::detail::estimate_flops;
using ptprof::detail::has_flops_formula;

namespace {

OpInput T(std::vector<int64_t> sizes) {
  OpInput x;
  x.kind = OpInput::Kind::Tensor;
  x.dtype = "float";
  x.sizes = std::move(sizes);
  return x;
}
OpInput L(std::vector<int64_t> values) {
  OpInput x;
  x.kind = OpInput::Kind::ScalarList;
  x.dtype = "ScalarList";
  x.sizes = std::move(values);
  return x;
}
OpInput S(double v) {
  OpInput x;
  x.kind = OpInput::Kind::Scalar;
  x.dtype = "Scalar";
  x.scalar = v;
  x.concrete = std::to_string(v);
  return x;
}
OpInput B(bool v) {
  OpInput x = S(v ? 1 : 0);
  x.concrete = v ? "True" : "False";
  return x;
}
OpInput Str(const std::string& s) {
  OpInput x;
  x.kind = OpInput::Kind::Other;
  x.dtype = "str";
  x.concrete = s;
  return x;
}
OpInput None() {
  return OpInput{};
}

TEST(Flops, Mm) {
  // 2 * M * K * N = 2 * 64 * 128 * 32
  EXPECT_EQ(estimate_flops("aten::mm", {T({64, 128}), T({128, 32})}), 524288u);
  EXPECT_EQ(estimate_flops("aten::mm", {T({64, 128}), T({127, 32})}), 0u);  // K mismatch
}

TEST(Flops, AddmmUsesMat1AndMat2) {
  // addmm(self, mat1, mat2, beta, alpha): the bias add is not counted, as in PyTorch.
  EXPECT_EQ(estimate_flops("aten::addmm", {T({32}), T({64, 128}), T({128, 32}), S(1), S(1)}),
            524288u);
}

TEST(Flops, BmmAndBaddbmm) {
  // 2 * B * M * K * N = 2 * 4 * 8 * 16 * 10
  EXPECT_EQ(estimate_flops("aten::bmm", {T({4, 8, 16}), T({4, 16, 10})}), 10240u);
  EXPECT_EQ(estimate_flops("aten::baddbmm", {T({4, 8, 10}), T({4, 8, 16}), T({4, 16, 10})}),
            10240u);
  EXPECT_EQ(estimate_flops("aten::bmm", {T({4, 8, 16}), T({3, 16, 10})}), 0u);  // batch mismatch
}

TEST(Flops, MatmulCases) {
  EXPECT_EQ(estimate_flops("aten::matmul", {T({5}), T({5})}), 10u);         // dot: 2 * 5
  EXPECT_EQ(estimate_flops("aten::matmul", {T({3, 5}), T({5})}), 30u);      // mv: 2 * 3 * 5
  EXPECT_EQ(estimate_flops("aten::matmul", {T({5}), T({5, 7})}), 70u);      // vm: 2 * 5 * 7
  EXPECT_EQ(estimate_flops("aten::matmul", {T({3, 5}), T({5, 7})}), 210u);  // mm: 2 * 3 * 5 * 7
  // Batch dims (2, 1) and (4) broadcast to (2, 4): 2 * 8 * 3 * 5 * 7
  EXPECT_EQ(estimate_flops("aten::matmul", {T({2, 1, 3, 5}), T({4, 5, 7})}), 1680u);
  EXPECT_EQ(estimate_flops("aten::matmul", {T({2, 3, 5}), T({5})}), 60u);  // 2 * 2 * 3 * 5
  EXPECT_EQ(estimate_flops("aten::matmul", {T({3, 5}), T({4, 7})}), 0u);
  EXPECT_EQ(estimate_flops("aten::matmul", {T({2, 3, 5}), T({3, 5, 7})}), 0u);  // batch 2 vs 3
}

TEST(Flops, Linear) {
  // input (8, 10, 16), weight (32, 16): 2 * 80 * 16 * 32
  EXPECT_EQ(estimate_flops("aten::linear", {T({8, 10, 16}), T({32, 16}), T({32})}), 81920u);
  EXPECT_EQ(estimate_flops("aten::linear", {T({16}), T({32, 16}), None()}), 1024u);  // 2*16*32
  EXPECT_EQ(estimate_flops("aten::linear", {T({8, 15}), T({32, 16})}), 0u);
}

TEST(Flops, Conv2d) {
  // input (2, 3, 32, 32), weight (16, 3, 3, 3), padding 1: output 32x32.
  // 2 * N * Cout * Hout * Wout * Cin * Kh * Kw = 2 * 2 * 16 * 1024 * 3 * 9
  const auto x = T({2, 3, 32, 32}), w = T({16, 3, 3, 3});
  EXPECT_EQ(estimate_flops("aten::conv2d", {x, w, T({16}), L({1, 1}), L({1, 1}), L({1, 1}), S(1)}),
            1769472u);
  // stride 2, no padding: (32 - 2 - 1) / 2 + 1 = 15 -> 2 * 2 * 16 * 225 * 27
  EXPECT_EQ(estimate_flops("aten::conv2d", {x, w, None(), L({2, 2}), L({0, 0}), L({1, 1}), S(1)}),
            388800u);
  // A one-element list applies to every spatial dim, as in ATen.
  EXPECT_EQ(estimate_flops("aten::conv2d", {x, w, None(), L({2}), L({0}), L({1}), S(1)}), 388800u);
  // Dilation 2: 32 - 2 * 2 = 28 -> 2 * 2 * 16 * 784 * 27
  EXPECT_EQ(estimate_flops("aten::conv2d", {x, w, None(), L({1, 1}), L({0, 0}), L({2, 2}), S(1)}),
            1354752u);
  // Omitted trailing arguments take the schema defaults (stride 1, padding 0): 30x30.
  EXPECT_EQ(estimate_flops("aten::conv2d", {x, w}), 1555200u);
  // Unbatched input (C, H, W): N = 1.
  EXPECT_EQ(estimate_flops("aten::conv2d",
                           {T({3, 32, 32}), w, None(), L({1, 1}), L({1, 1}), L({1, 1}), S(1)}),
            884736u);
}

TEST(Flops, Conv2dGroupsAndStringPadding) {
  // input (2, 8, 16, 16), weight (8, 2, 3, 3), groups 4, padding 1: Cin/groups = 2.
  // 2 * 2 * 8 * 256 * 2 * 9
  EXPECT_EQ(estimate_flops("aten::conv2d", {T({2, 8, 16, 16}), T({8, 2, 3, 3}), None(), L({1, 1}),
                                            L({1, 1}), L({1, 1}), S(4)}),
            147456u);
  // Channels that do not fit weight * groups: not a shape this op can have.
  EXPECT_EQ(estimate_flops("aten::conv2d", {T({2, 8, 16, 16}), T({8, 2, 3, 3}), None(), L({1, 1}),
                                            L({1, 1}), L({1, 1}), S(1)}),
            0u);
  const auto x = T({2, 3, 32, 32}), w = T({16, 3, 3, 3});
  EXPECT_EQ(estimate_flops("aten::conv2d", {x, w, None(), L({1, 1}), Str("same"), L({1, 1}), S(1)}),
            1769472u);
  EXPECT_EQ(
      estimate_flops("aten::conv2d", {x, w, None(), L({1, 1}), Str("valid"), L({1, 1}), S(1)}),
      1555200u);  // 30x30: 2 * 2 * 16 * 900 * 27
}

TEST(Flops, Conv1dAndConv3d) {
  // input (4, 6, 100), weight (12, 6, 5): Lout 96 -> 2 * 4 * 12 * 96 * 6 * 5
  EXPECT_EQ(estimate_flops("aten::conv1d",
                           {T({4, 6, 100}), T({12, 6, 5}), None(), L({1}), L({0}), L({1}), S(1)}),
            276480u);
  // input (1, 2, 8, 8, 8), weight (4, 2, 3, 3, 3), padding 1: 8^3 -> 2 * 1 * 4 * 512 * 2 * 27
  EXPECT_EQ(estimate_flops("aten::conv3d", {T({1, 2, 8, 8, 8}), T({4, 2, 3, 3, 3}), None(),
                                            L({1, 1, 1}), L({1, 1, 1}), L({1, 1, 1}), S(1)}),
            221184u);
}

TEST(Flops, ConvTransposedUsesInputSpatial) {
  // input (2, 16, 8, 8), weight (Cin 16, Cout/groups 8, 4, 4), stride 2:
  // 2 * N * Hin * Win * Kh * Kw * Cin * Cout = 2 * 2 * 64 * 16 * 16 * 8
  const auto x = T({2, 16, 8, 8}), w = T({16, 8, 4, 4});
  // conv_transpose2d(input, weight, bias, stride, padding, output_padding, groups, dilation)
  EXPECT_EQ(estimate_flops("aten::conv_transpose2d",
                           {x, w, None(), L({2, 2}), L({1, 1}), L({0, 0}), S(1), L({1, 1})}),
            524288u);
  // convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
  // groups)
  EXPECT_EQ(estimate_flops("aten::convolution", {x, w, None(), L({2, 2}), L({1, 1}), L({1, 1}),
                                                 B(true), L({0, 0}), S(1)}),
            524288u);
  EXPECT_EQ(
      estimate_flops("aten::_convolution", {x, w, None(), L({2, 2}), L({1, 1}), L({1, 1}), B(true),
                                            L({0, 0}), S(1), B(false), B(false), B(true), B(true)}),
      524288u);
  // conv_transpose1d: input (1, 4, 10), weight (4, 2, 3): 2 * 1 * 10 * 3 * 4 * 2
  EXPECT_EQ(estimate_flops("aten::conv_transpose1d", {T({1, 4, 10}), T({4, 2, 3})}), 480u);
}

TEST(Flops, ConvolutionNotTransposed) {
  const auto x = T({2, 3, 32, 32}), w = T({16, 3, 3, 3});
  EXPECT_EQ(estimate_flops("aten::convolution", {x, w, None(), L({1, 1}), L({1, 1}), L({1, 1}),
                                                 B(false), L({0, 0}), S(1)}),
            1769472u);
  EXPECT_EQ(
      estimate_flops("aten::_convolution", {x, w, None(), L({2, 2}), L({0, 0}), L({1, 1}), B(false),
                                            L({0, 0}), S(1), B(false), B(false), B(true), B(true)}),
      388800u);
}

TEST(Flops, ConvolutionBackward) {
  // grad_input and grad_weight each cost the forward's 1769472.
  const auto gy = T({2, 16, 32, 32}), x = T({2, 3, 32, 32}), w = T({16, 3, 3, 3});
  auto args = [&](OpInput mask) {
    return std::vector<OpInput>{gy,        x,        w,         L({16}), L({1, 1}), L({1, 1}),
                                L({1, 1}), B(false), L({0, 0}), S(1),    mask};
  };
  EXPECT_EQ(estimate_flops("aten::convolution_backward", args(L({1, 1, 1}))), 3538944u);
  EXPECT_EQ(estimate_flops("aten::convolution_backward", args(L({1, 0, 1}))), 1769472u);
  OpInput text;
  text.kind = OpInput::Kind::Other;
  text.concrete = "[False, True, False]";
  EXPECT_EQ(estimate_flops("aten::convolution_backward", args(text)), 1769472u);
}

TEST(Flops, ScaledDotProductAttention) {
  // q (2, 4, 128, 64), k and v (2, 4, 256, 64): 2 matmuls of 2 * B*H * Lq * Lk * E each,
  // 4 * 8 * 128 * 256 * 64.
  const auto q = T({2, 4, 128, 64}), k = T({2, 4, 256, 64}), v = T({2, 4, 256, 64});
  EXPECT_EQ(estimate_flops("aten::scaled_dot_product_attention", {q, k, v, None(), S(0), B(false)}),
            67108864u);
  EXPECT_EQ(estimate_flops("aten::_scaled_dot_product_flash_attention", {q, k, v, S(0)}),
            67108864u);
  EXPECT_EQ(
      estimate_flops("aten::_scaled_dot_product_efficient_attention", {q, k, v, None(), B(true)}),
      67108864u);
  EXPECT_EQ(estimate_flops("aten::_scaled_dot_product_flash_attention_for_cpu", {q, k, v}),
            67108864u);
  EXPECT_EQ(estimate_flops("aten::_scaled_dot_product_cudnn_attention", {q, k, v, None()}),
            67108864u);
  // Value head dim 32: 2 * 8 * 128 * 256 * (64 + 32)
  EXPECT_EQ(estimate_flops("aten::scaled_dot_product_attention", {q, k, T({2, 4, 256, 32})}),
            50331648u);
  EXPECT_EQ(estimate_flops("aten::scaled_dot_product_attention", {q, T({2, 4, 256, 32}), v}), 0u);
}

TEST(Flops, ScaledDotProductAttentionBackward) {
  // (grad_out, q, k, v, ...): 2 * B*H * Lq * Lk * (3E + 2Ev) = 2 * 8 * 128 * 256 * 320
  const auto go = T({2, 4, 128, 64}), q = T({2, 4, 128, 64}), k = T({2, 4, 256, 64});
  EXPECT_EQ(estimate_flops("aten::_scaled_dot_product_flash_attention_backward", {go, q, k, k}),
            167772160u);
  EXPECT_EQ(estimate_flops("aten::_scaled_dot_product_efficient_attention_backward", {go, q, k, k}),
            167772160u);
}

TEST(Flops, ElementwiseIsNumelOfTheBroadcastOutput) {
  // (4, 1, 8) with (3, 1) -> (4, 3, 8)
  EXPECT_EQ(estimate_flops("aten::add", {T({4, 1, 8}), T({3, 1}), S(1)}), 96u);
  EXPECT_EQ(estimate_flops("aten::add_", {T({5, 6}), T({6}), S(1)}), 30u);
  EXPECT_EQ(estimate_flops("aten::mul", {T({5, 6}), S(2)}), 30u);  // tensor * scalar
  EXPECT_EQ(estimate_flops("aten::mul_", {T({2, 3}), T({2, 3})}), 6u);
  EXPECT_EQ(estimate_flops("aten::sub", {T({7}), T({1})}), 7u);
  EXPECT_EQ(estimate_flops("aten::div", {T({}), T({})}), 1u);  // 0-dim tensors
  EXPECT_EQ(estimate_flops("aten::div_", {T({3, 4}), T({4})}), 12u);
  EXPECT_EQ(estimate_flops("aten::add", {T({3}), T({4})}), 0u);  // not broadcastable
  EXPECT_EQ(estimate_flops("aten::add.Tensor", {T({3}), T({3})}), 3u);
}

TEST(Flops, UnknownOpsAndMissingShapesAreZero) {
  EXPECT_EQ(estimate_flops("aten::relu", {T({1024})}), 0u);
  EXPECT_EQ(estimate_flops("my::mm", {T({2, 2}), T({2, 2})}), 0u);
  EXPECT_EQ(estimate_flops("aten::mm", {}), 0u);
  EXPECT_EQ(estimate_flops("aten::mm", {None(), None()}), 0u);
  EXPECT_EQ(estimate_flops("aten::mm", {T({2, 2})}), 0u);
  EXPECT_EQ(estimate_flops("aten::addmm", {T({2, 2}), T({2, 2})}), 0u);
  EXPECT_EQ(estimate_flops("aten::conv2d", {T({2, 3, 32, 32})}), 0u);
  EXPECT_EQ(estimate_flops("aten::scaled_dot_product_attention", {T({4, 8}), T({4, 8})}), 0u);
  // A stride that record_shapes could not read: unknown rather than a guess.
  EXPECT_EQ(estimate_flops("aten::conv2d", {T({2, 3, 32, 32}), T({16, 3, 3, 3}), None(), Str("?")}),
            0u);
}

TEST(Flops, NegativeAndOverflowingSizesAreZero) {
  EXPECT_EQ(estimate_flops("aten::mm", {T({-1, 4}), T({4, 4})}), 0u);
  const int64_t big = int64_t{1} << 31;
  EXPECT_EQ(estimate_flops("aten::mm", {T({big, big}), T({big, big})}), 0u);  // 2^94
}

}  // namespace

// The recorder keeps inputs for with_flops alone by has_flops_formula: it must name exactly the
// ops estimate_flops has a formula for.
TEST(Flops, FormulaNamesAreTheEstimatedOnes) {
  for (const char* name :
       {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::matmul", "aten::linear",
        "aten::convolution", "aten::_convolution", "aten::conv2d", "aten::conv_transpose3d",
        "aten::convolution_backward", "aten::scaled_dot_product_attention",
        "aten::_scaled_dot_product_flash_attention_backward", "aten::add", "aten::mul_",
        "aten::true_divide", "aten::add.Tensor"})
    EXPECT_TRUE(has_flops_formula(name)) << name;
  for (const char* name : {"aten::relu", "aten::empty", "mm", "aten::", "", "aten::addcmul",
                           "aten::mmx", "c10d::allreduce_", "ProfilerStep#3"})
    EXPECT_FALSE(has_flops_formula(name)) << name;
  EXPECT_EQ(estimate_flops("aten::relu", {T({4, 4})}), 0u);
  EXPECT_GT(estimate_flops("aten::mm", {T({4, 4}), T({4, 4})}), 0u);
}

