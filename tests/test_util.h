// Helpers shared by ptprof's tests: temp dirs, reading traces back, small models.
#pragma once

#include <torch/torch.h>

#include <nlohmann/json.hpp>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ptprof/ptprof.h"

namespace ptprof::test {

// A fresh empty directory under the system temp dir, removed by the destructor.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }
  std::vector<std::string> files() const;  // full paths, sorted

 private:
  std::string path_;
};

nlohmann::json read_json_file(const std::string& path);  // .gz aware

// Names of X events with cat in `cats` (empty: any), in file order.
std::vector<std::string> event_names(const nlohmann::json& trace, const std::string& cat = "");
int count_events(const Trace& t, const std::string& name);
int count_events(const nlohmann::json& trace, const std::string& name);

struct Mlp : torch::nn::Module {
  Mlp();
  torch::Tensor forward(torch::Tensor x);
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
};

// One forward + backward of a 2-layer MLP on a batch of 8.
void train_step(Mlp& model);

// Event name -> count as libtorch's own profiler (Kineto, CPU activities) records `fn`.
std::map<std::string, int> libtorch_profiler_counts(const std::function<void()>& fn);
// Event name -> count of a ptprof trace (raw events, not key_averages' folded calls).
std::map<std::string, int> event_counts(const Trace& t);

}  // namespace ptprof::test
