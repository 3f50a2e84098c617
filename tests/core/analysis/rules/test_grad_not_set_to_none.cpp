// grad_not_set_to_none (torch.profiler's GradNotSetToNonePattern).
#include "torch_traces.h"

namespace ptprof::test {
namespace {

TEST(GradNotSetToNone, FiresOnZeroGradFillingGradients) {
  TorchTraceBuilder t;
  t.b.step(1, 0, 1000);
  t.py("torch/optim/optimizer.py(1027): zero_grad", 10, 200);
  t.range("Optimizer.zero_grad#SGD.zero_grad", 11, 199);
  t.op("aten::zero_", 20, 60);
  t.op("aten::zero_", 70, 110);
  const auto f = finding(t.finish(), "grad_not_set_to_none");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->source, "torch");
  EXPECT_EQ(f->saving_ns_per_step, 80000);
  ASSERT_EQ(f->evidence.size(), 1u);  // the frame; the range inside it is not a second match
  EXPECT_EQ(f->evidence[0].what, "torch/optim/optimizer.py(1027): zero_grad");
  EXPECT_EQ(f->evidence[0].note, "2 aten::zero_ calls");
}

TEST(GradNotSetToNone, WithoutPythonTheRangeOrLibtorchsStack) {
  TorchTraceBuilder range;
  range.b.step(1, 0, 1000);
  range.range("Optimizer.zero_grad#SGD.zero_grad", 11, 199);
  range.op("aten::zero_", 20, 60);
  EXPECT_TRUE(finding(range.finish(), "grad_not_set_to_none"));

  TorchTraceBuilder cpp;
  cpp.b.step(1, 0, 1000);
  const std::size_t z = cpp.op("aten::zero_", 20, 60);
  cpp.stack(z, {"main", "Trainer::step", "torch::optim::Optimizer::zero_grad(bool)",
                "at::Tensor::zero_"});
  const auto f = finding(cpp.finish(), "grad_not_set_to_none");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->saving_ns_per_step, 40000);
}

TEST(GradNotSetToNone, NotWhenGradientsAreSetToNoneOrZerosAreNew) {
  TorchTraceBuilder t;
  t.b.step(1, 0, 1000);
  t.py("torch/optim/optimizer.py(1027): zero_grad", 10, 200);
  t.op("aten::zeros", 20, 60);  // a new tensor of zeros, not a gradient zeroed
  t.op("aten::zero_", 30, 50);
  t.op("aten::zero_", 300, 340);  // outside zero_grad
  EXPECT_FALSE(finding(t.finish(), "grad_not_set_to_none"));
  TorchTraceBuilder cpp;
  cpp.b.step(1, 0, 1000);
  const std::size_t z = cpp.op("aten::zero_", 20, 60);
  cpp.stack(z, {"main", "torch::autograd::generated::NllLossBackward0::apply"});
  EXPECT_FALSE(finding(cpp.finish(), "grad_not_set_to_none"));
}

}  // namespace
}  // namespace ptprof::test
