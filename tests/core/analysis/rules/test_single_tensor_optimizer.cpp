// single_tensor_optimizer (torch.profiler's OptimizerSingleTensorPattern).
#include "torch_traces.h"

namespace ptprof::test {
namespace {

TEST(SingleTensorOptimizer, FiresOnTorchOptimsSingleTensorFrames) {
  TorchTraceBuilder t;
  t.b.step(1, 0, 1000);
  t.py("torch/optim/optimizer.py(500): wrapper", 100, 400);
  t.py("torch/optim/adam.py(347): _single_tensor_adam", 110, 390);
  t.op("aten::mul_", 120, 150);
  t.op("aten::addcdiv_", 160, 200);
  const auto f = finding(t.finish(), "single_tensor_optimizer");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->source, "torch");
  EXPECT_EQ(f->saving_ns_per_step, 280000);  // the frame's 280 us
  EXPECT_EQ(f->evidence.at(0).what, "torch/optim/adam.py(347): _single_tensor_adam");

  TorchTraceBuilder multi;
  multi.b.step(1, 0, 1000);
  multi.py("torch/optim/adam.py(520): _multi_tensor_adam", 110, 390);
  multi.op("aten::_foreach_mul_", 120, 150);
  EXPECT_FALSE(finding(multi.finish(), "single_tensor_optimizer"));
}

TEST(SingleTensorOptimizer, WithoutPythonTheStepRangeOrLibtorchsStack) {
  for (const char* op : {"aten::mul_", "aten::_foreach_mul_", "aten::_fused_adamw_"}) {
    TorchTraceBuilder t;
    t.b.step(1, 0, 1000);
    t.range("Optimizer.step#AdamW.step", 100, 400);
    t.op(op, 120, 150);
    EXPECT_EQ(static_cast<bool>(finding(t.finish(), "single_tensor_optimizer")),
              std::string(op) == "aten::mul_")
        << op;
  }
  TorchTraceBuilder cpp;
  cpp.b.step(1, 0, 1000);
  for (int i = 0; i < 3; ++i) {
    const std::size_t op = cpp.op("aten::addcdiv_", 100 + i * 50, 140 + i * 50);
    cpp.stack(op,
              {"main", "Trainer::step", "torch::optim::Adam::step", "at::_ops::addcdiv_::call"});
  }
  const std::size_t other = cpp.op("aten::mul_", 300, 340);
  cpp.stack(other, {"main", "Trainer::step", "torch::optim::AdamWOptions::weight_decay"});
  const auto f = finding(cpp.finish(), "single_tensor_optimizer");
  ASSERT_TRUE(f);
  ASSERT_EQ(f->evidence.size(), 1u);
  EXPECT_EQ(f->evidence[0].what, "torch::optim::Adam::step: one op per parameter");
  EXPECT_DOUBLE_EQ(f->evidence[0].per_step, 3);
  EXPECT_EQ(f->evidence[0].note, "Trainer::step");
  EXPECT_EQ(f->saving_ns_per_step, 120000);
}

}  // namespace
}  // namespace ptprof::test
