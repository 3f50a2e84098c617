// Helpers of the tests that record with libtorch: small models, libtorch's own profiler as a
// reference. The torch-free helpers are tests/support/test_support.h.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <map>
#include <string>

#include "ptprof/ptprof.h"
#include "test_support.h"

namespace ptprof::test {

struct Mlp : torch::nn::Module {
  Mlp();
  torch::Tensor forward(torch::Tensor x);
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
};

// One forward + backward of a 2-layer MLP on a batch of 8.
void train_step(Mlp& model);

// Event name -> count as libtorch's own profiler (Kineto, CPU activities) records `fn`.
std::map<std::string, int> libtorch_profiler_counts(const std::function<void()>& fn);

// libtorch's own profiler's Chrome trace of `fn` (Kineto, CPU activities), as its save()
// writes it to `path`; the file's text.
std::string libtorch_profiler_trace(const std::function<void()>& fn, const std::string& path);

}  // namespace ptprof::test
