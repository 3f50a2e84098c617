#include "test_util.h"

#include <set>

#include <torch/csrc/autograd/profiler_kineto.h>

namespace ptprof::test {

Mlp::Mlp() {
  fc1 = register_module("fc1", torch::nn::Linear(16, 32));
  fc2 = register_module("fc2", torch::nn::Linear(32, 4));
}

torch::Tensor Mlp::forward(torch::Tensor x) { return fc2(torch::relu(fc1(x))); }

void train_step(Mlp& model) {
  auto x = torch::randn({8, 16});
  auto loss = model.forward(x).sum();
  loss.backward();
}

std::map<std::string, int> libtorch_profiler_counts(const std::function<void()>& fn) {
  namespace tap = torch::autograd::profiler;
  namespace tpi = torch::profiler::impl;
  const tpi::ProfilerConfig config(tpi::ProfilerState::KINETO);
  const std::set<tpi::ActivityType> activities{tpi::ActivityType::CPU};
  tap::prepareProfiler(config, activities);
  tap::enableProfiler(config, activities);
  fn();
  auto result = tap::disableProfiler();
  std::map<std::string, int> counts;
  for (const auto& e : result->events()) ++counts[e.name()];
  return counts;
}

}  // namespace ptprof::test
