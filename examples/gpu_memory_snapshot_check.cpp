// CUDA memory snapshots on a GPU (scripts/gpu-check, issue 28 section 5): a small MLP trained on
// CUDA, first with no session (the step's baseline), then under a session with
// Options::cuda_memory_history on (one saved window: its snapshot beside its trace), then an
// allocation far beyond the device's memory while the session runs (the allocator's OOM
// observer: an OOM snapshot). Each snapshot is read back with ptprof's own reader.
//
//   gpu_memory_snapshot_check --out DIR [--steps N]
//
// Writes DIR/memory/ (the trace, its .memory_snapshot.pickle, the OOM's), DIR/memory.json
// (paths, what each snapshot holds, step times with and without the history, the session's
// warnings), and the window snapshot's page, DIR/memory_snapshot.html, as 'ptprof memory
// SNAPSHOT OUT.html' writes it. Exit status: 0 done (scripts/gpu_trace_check.py judges), 2 bad usage, 3 no CUDA
// device.
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "ptprof/ptprof.h"

namespace {

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) out += c;
  }
  return out + "\"";
}

// One training step of the MLP; its time in ms (synchronized).
double train_step(torch::nn::Sequential& net, torch::optim::SGD& opt, const torch::Tensor& x,
                  const torch::Tensor& y) {
  const auto start = std::chrono::steady_clock::now();
  opt.zero_grad();
  torch::Tensor loss = torch::mse_loss(net->forward(x), y);
  loss.backward();
  opt.step();
  torch::cuda::synchronize();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

// What a snapshot holds, as JSON, read by ptprof's reader.
std::string snapshot_json(const std::string& path, const std::string& html = "") {
  std::string out = "{\"path\": " + json_string(path);
  try {
    const ptprof::MemorySnapshot s = ptprof::MemorySnapshot::load(path);
    const ptprof::MemorySnapshotSummary sum = ptprof::summarize(s);
    if (!html.empty()) sum.save_html(s, html, std::filesystem::path(path).filename().string());
    std::size_t entries = 0, ooms = 0, frames = 0;
    int64_t peak = 0, oom_requested = 0;
    for (const auto& d : sum.devices) {
      entries += d.trace_entries;
      peak = std::max(peak, d.peak_bytes);
      for (const auto& o : d.ooms) {
        ++ooms;
        oom_requested = std::max(oom_requested, o.requested);
      }
    }
    for (const auto& st : s.stacks) frames += st.size();
    out += ", \"bytes\": " + std::to_string(std::filesystem::file_size(path)) +
           ", \"segments\": " + std::to_string(s.segments.size()) +
           ", \"trace_entries\": " + std::to_string(entries) +
           ", \"stacks\": " + std::to_string(s.stacks.size()) +
           ", \"frames\": " + std::to_string(frames) + ", \"peak_bytes\": " + std::to_string(peak) +
           ", \"ooms\": " + std::to_string(ooms) +
           ", \"oom_requested\": " + std::to_string(oom_requested);
  } catch (const std::exception& e) {
    out += ", \"read_error\": " + json_string(e.what());
  }
  return out + "}";
}

std::vector<std::string> files_ending(const std::string& dir, const std::string& suffix) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string p = e.path().string();
    if (p.size() >= suffix.size() && p.compare(p.size() - suffix.size(), suffix.size(), suffix) == 0)
      out.push_back(p);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string out;
  int steps = 6;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--out" && i + 1 < argc) {
      out = argv[++i];
    } else if (a == "--steps" && i + 1 < argc) {
      steps = std::atoi(argv[++i]);
    } else {
      out.clear();
      break;
    }
  }
  if (out.empty() || steps < 4) {
    std::fprintf(stderr, "usage: %s --out DIR [--steps N>=4]\n", argv[0]);
    return 2;
  }
  if (!torch::cuda::is_available()) {
    std::fprintf(stderr, "no CUDA device\n");
    return 3;
  }
  const std::string dir = out + "/memory";
  std::filesystem::remove_all(dir);
  const auto cuda = torch::TensorOptions().device(torch::kCUDA);
  torch::manual_seed(0);
  torch::nn::Sequential net(torch::nn::Linear(512, 1024), torch::nn::ReLU(),
                            torch::nn::Linear(1024, 512));
  net->to(torch::kCUDA);
  torch::optim::SGD opt(net->parameters(), 0.01);
  const torch::Tensor x = torch::randn({256, 512}, cuda), y = torch::randn({256, 512}, cuda);
  for (int i = 0; i < 3; ++i) train_step(net, opt, x, y);  // warm up CUDA and cuBLAS

  double baseline_ms = 0;
  for (int i = 0; i < steps; ++i) baseline_ms += train_step(net, opt, x, y);

  std::vector<std::string> warnings;
  ptprof::Options o;
  o.activities = {ptprof::Activity::CPU};  // the history alone: its cost, not CUPTI's
  o.schedule = ptprof::Schedule{/*wait=*/0, /*warmup=*/1, /*active=*/steps - 2, /*repeat=*/1};
  o.on_trace_ready = {ptprof::tensorboard_trace_handler(dir)};
  o.write_in_background = false;
  o.cuda_memory_history.enabled = true;
  o.log = [&](ptprof::LogLevel, const std::string& m) { warnings.push_back(m); };
  double history_ms = 0;
  bool oom_thrown = false;
  const int64_t oom_elements = int64_t{1} << 42;  // 16 TiB of floats
  ptprof::Status status;
  {
    ptprof::ProfileSession session(o);
    for (int i = 0; i < steps; ++i) {
      history_ms += train_step(net, opt, x, y);
      session.step();
    }
    try {
      torch::Tensor t = torch::empty({oom_elements}, cuda);
    } catch (const c10::OutOfMemoryError&) {
      oom_thrown = true;
    }
    status = session.stop();
  }

  std::string json = "{\"steps\": " + std::to_string(steps) +
                     ", \"baseline_step_ms\": " + std::to_string(baseline_ms / steps) +
                     ", \"history_step_ms\": " + std::to_string(history_ms / steps) +
                     ", \"oom_bytes\": " + std::to_string(oom_elements * 4) +
                     ", \"oom_thrown\": " + (oom_thrown ? "true" : "false") +
                     ", \"traces\": " + std::to_string(files_ending(dir, ".pt.trace.json").size());
  json += ", \"window_snapshots\": [";
  bool first = true;
  for (const std::string& p : files_ending(dir, ".memory_snapshot.pickle")) {
    if (p.find(".oom.") != std::string::npos) continue;
    json += (first ? "" : ", ") + snapshot_json(p, first ? out + "/memory_snapshot.html" : "");
    first = false;
  }
  json += "], \"oom_snapshots\": [";
  first = true;
  for (const std::string& p : files_ending(dir, ".oom.memory_snapshot.pickle")) {
    json += (first ? "" : ", ") + snapshot_json(p);
    first = false;
  }
  json += "], \"messages\": [";
  for (std::size_t i = 0; i < warnings.size(); ++i) json += (i ? ", " : "") + json_string(warnings[i]);
  json += "]}\n";
  std::ofstream(out + "/memory.json") << json;
  std::printf("gpu_memory_snapshot_check: %s", json.c_str());
  return 0;
}
