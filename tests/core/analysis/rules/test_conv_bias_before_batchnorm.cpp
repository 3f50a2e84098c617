// conv_bias_before_batchnorm (torch.profiler's Conv2dBiasFollowedByBatchNorm2dPattern).
#include "torch_traces.h"

namespace ptprof::test {
namespace {

// aten::conv2d (with a bias when `bias`, adding it as an aten::add_ of 20 us when `add`), then
// `next` after it; the module calls around them when `modules`.
Trace conv(bool bias, const std::string& next, bool modules = false, bool add = false) {
  TorchTraceBuilder t;
  t.b.step(1, 0, 1000);
  if (modules) t.py("nn.Module: Conv2d_0", 9, 201);
  t.op("aten::conv2d", 10, 200,
       {{"float", {64, 3, 32, 32}},
        {"float", {16, 3, 3, 3}},
        {bias ? "float" : "", {16}},
        {"ScalarList", {}}});
  t.op("aten::convolution", 11, 199);
  if (add) t.op("aten::add_", 170, 190);
  if (modules)
    t.py(next == "aten::batch_norm" ? "nn.Module: BatchNorm2d_0" : "nn.Module: ReLU_0", 209, 301);
  t.op(next, 210, 300);
  return t.finish();
}

TEST(ConvBiasBeforeBatchnorm, FiresOnABiasTheBatchNormCancels) {
  for (bool modules : {false, true}) {
    const auto f = finding(conv(true, "aten::batch_norm", modules), "conv_bias_before_batchnorm");
    ASSERT_TRUE(f) << modules;
    EXPECT_EQ(f->source, "torch");
    EXPECT_FALSE(f->saving_ns_per_step);  // fused into the convolution: no time of its own
    EXPECT_EQ(f->evidence.at(0).what,
              "aten::conv2d [64, 3, 32, 32] [16, 3, 3, 3] [16] float, then batch norm");
    EXPECT_NE(f->recommendation.find(".bias(false)"), std::string::npos);
  }
  const auto f = finding(conv(true, "aten::batch_norm", false, true), "conv_bias_before_batchnorm");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->saving_ns_per_step, 20000);  // the bias addition cuDNN's path runs after it
}

TEST(ConvBiasBeforeBatchnorm, NotWithoutABiasOrABatchNorm) {
  EXPECT_FALSE(finding(conv(false, "aten::batch_norm"), "conv_bias_before_batchnorm"));
  EXPECT_FALSE(finding(conv(true, "aten::relu"), "conv_bias_before_batchnorm"));
  EXPECT_FALSE(finding(conv(true, "aten::relu", true), "conv_bias_before_batchnorm"));
}

}  // namespace
}  // namespace ptprof::test
