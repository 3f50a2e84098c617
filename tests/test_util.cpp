#include "test_util.h"

#include <dirent.h>
#include <ftw.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include <torch/csrc/autograd/profiler_kineto.h>

#include "trace/trace_reader.h"

namespace ptprof::test {

TempDir::TempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "ptprof_test_XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

namespace {
int remove_entry(const char* path, const struct stat*, int, struct FTW*) {
  return ::remove(path);
}
}  // namespace

// Not std::filesystem::remove_all: libtorch.so exports a broken copy of it that wins symbol
// resolution (it crashes through a null pointer).
TempDir::~TempDir() {
  ::chmod(path_.c_str(), 0755);
  ::nftw(path_.c_str(), remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

std::vector<std::string> TempDir::files() const {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(path_)) out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

nlohmann::json read_json_file(const std::string& path) {
  return nlohmann::json::parse(detail::read_trace_file(path));
}

std::vector<std::string> event_names(const nlohmann::json& trace, const std::string& cat) {
  std::vector<std::string> out;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.value("ph", "") != "X") continue;
    if (!cat.empty() && e.value("cat", "") != cat) continue;
    out.push_back(e.at("name").get<std::string>());
  }
  return out;
}

int count_events(const Trace& t, const std::string& name) {
  return static_cast<int>(std::count_if(t.events.begin(), t.events.end(),
                                        [&](const Event& e) { return e.name == name; }));
}

int count_events(const nlohmann::json& trace, const std::string& name) {
  auto names = event_names(trace);
  return static_cast<int>(std::count(names.begin(), names.end(), name));
}

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

std::map<std::string, int> event_counts(const Trace& t) {
  std::map<std::string, int> counts;
  for (const Event& e : t.events) ++counts[std::string(e.name)];
  return counts;
}

}  // namespace ptprof::test
