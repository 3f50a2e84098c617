#include "test_util.h"

#include <fstream>
#include <memory>
#include <set>
#include <sstream>

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

namespace {

// `fn` under libtorch's own profiler (Kineto, CPU activities).
std::unique_ptr<torch::autograd::profiler::ProfilerResult> libtorch_profile(
    const std::function<void()>& fn) {
  namespace tap = torch::autograd::profiler;
  namespace tpi = torch::profiler::impl;
  const tpi::ProfilerConfig config(tpi::ProfilerState::KINETO);
  const std::set<tpi::ActivityType> activities{tpi::ActivityType::CPU};
  tap::prepareProfiler(config, activities);
  tap::enableProfiler(config, activities);
  fn();
  return tap::disableProfiler();
}

}  // namespace

std::map<std::string, int> libtorch_profiler_counts(const std::function<void()>& fn) {
  const auto result = libtorch_profile(fn);
  std::map<std::string, int> counts;
  for (const auto& e : result->events()) ++counts[e.name()];
  return counts;
}

std::string libtorch_profiler_trace(const std::function<void()>& fn, const std::string& path) {
  libtorch_profile(fn)->save(path);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace ptprof::test
