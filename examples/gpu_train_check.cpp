// The training side of scripts/gpu-check: trains a small model on CUDA for the same number of
// steps three times, without a profiler, under ptprof (activities CPU + CUDA) and under
// libtorch's own profiler (Kineto), one after the other, and writes both traces and the step
// times. Then it checks the conflict case: a ptprof session asking for CUDA while libtorch's
// profiler runs must warn and still record the CPU side.
//
//   gpu_train_check --out DIR [--steps N] [--warmup N]
//
// Writes DIR/ptprof.pt.trace.json, DIR/kineto.pt.trace.json and DIR/run.json. Exit status:
// 0 done (verification is scripts/gpu_trace_check.py's job), 2 bad usage, 3 no CUDA device.
#include <torch/csrc/autograd/profiler_kineto.h>
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "ptprof/ptprof.h"

namespace {

struct NetImpl : torch::nn::Module {
  NetImpl()
      : conv(register_module("conv",
                             torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 16, 3).padding(1)))),
        fc1(register_module("fc1", torch::nn::Linear(16 * 16 * 16, 512))),
        fc2(register_module("fc2", torch::nn::Linear(512, 10))) {}
  torch::Tensor forward(torch::Tensor x) {
    x = torch::relu(conv(x));
    x = torch::max_pool2d(x, 2).flatten(1);
    return fc2(torch::relu(fc1(x)));
  }
  torch::nn::Conv2d conv;
  torch::nn::Linear fc1, fc2;
};
TORCH_MODULE(Net);

Net make_net(torch::Device device) {
  torch::manual_seed(0);
  Net net;
  net->to(device);
  return net;
}

struct Trainer {
  torch::Device device;
  Net net;
  torch::optim::Adam opt;
  torch::Tensor inputs, labels;  // pinned host memory: each step copies its batch in
  int64_t batch = 0;

  explicit Trainer(torch::Device d)
      : device(d), net(make_net(d)), opt(net->parameters(), torch::optim::AdamOptions(1e-3)) {
    inputs = torch::randn({8, 64, 3, 32, 32}).pin_memory();
    labels = torch::randint(0, 10, {8, 64}).pin_memory();
  }

  void step() {
    torch::Tensor x, y;
    {
      PTPROF_RANGE("data");
      x = inputs[batch % 8].to(device, /*non_blocking=*/true);
      y = labels[batch % 8].to(device, /*non_blocking=*/true);
      ++batch;
    }
    opt.zero_grad();
    torch::Tensor loss;
    {
      PTPROF_RANGE("forward");
      loss = torch::nn::functional::cross_entropy(net->forward(x), y);
    }
    {
      PTPROF_RANGE("backward");
      loss.backward();
    }
    {
      PTPROF_RANGE("optimizer_step");
      opt.step();
    }
    torch::cuda::synchronize();  // so each step's time is its GPU time too
  }
};

double now_ms() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') {
      o += '\\';
      o += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      o += buf;
    } else {
      o += c;
    }
  }
  return o;
}

std::string json_strings(const std::vector<std::string>& v) {
  std::string o = "[";
  for (std::size_t i = 0; i < v.size(); ++i) o += (i ? ", \"" : "\"") + json_escape(v[i]) + "\"";
  return o + "]";
}

}  // namespace

int main(int argc, char** argv) {
  std::string out;
  int steps = 5;
  int warmup = 5;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--out" && i + 1 < argc) {
      out = argv[++i];
    } else if (a == "--steps" && i + 1 < argc) {
      steps = std::atoi(argv[++i]);
    } else if (a == "--warmup" && i + 1 < argc) {
      warmup = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: %s --out DIR [--steps N] [--warmup N]\n", argv[0]);
      return 2;
    }
  }
  if (out.empty() || steps < 1 || warmup < 0) {
    std::fprintf(stderr, "usage: %s --out DIR [--steps N>=1] [--warmup N>=0]\n", argv[0]);
    return 2;
  }
  if (!torch::cuda::is_available()) {
    std::fprintf(stderr, "gpu_train_check: no CUDA device\n");
    return 3;
  }
  torch::set_num_threads(4);
  Trainer t(torch::Device(torch::kCUDA, 0));
  // cuBLAS/cuDNN handles, allocator pools and lazy module loading settle here, outside every
  // measured and profiled step, so all three runs execute the same kernels.
  for (int i = 0; i < warmup; ++i) t.step();

  double t0 = now_ms();
  for (int i = 0; i < steps; ++i) t.step();
  const double baseline_ms = (now_ms() - t0) / steps;

  // ptprof: one warmup step (CUPTI starts there), then `steps` recorded steps.
  ptprof::Options opts;
  opts.activities = {ptprof::Activity::CPU, ptprof::Activity::CUDA};
  opts.schedule = ptprof::Schedule{/*wait=*/0, /*warmup=*/1, /*active=*/steps, /*repeat=*/1};
  const std::string ptprof_path = out + "/ptprof.pt.trace.json";
  opts.on_trace_ready = {ptprof::chrome_trace_handler(ptprof_path)};
  double ptprof_ms = 0;
  ptprof::Status ptprof_status;
  {
    ptprof::ProfileSession session(opts);
    t.step();
    session.step();
    t0 = now_ms();
    for (int i = 0; i < steps; ++i) {
      t.step();
      if (i + 1 < steps) session.step();
    }
    ptprof_ms = (now_ms() - t0) / steps;
    session.step();  // closes the window: the trace is written here
    ptprof_status = session.stop();
  }

  // libtorch's own profiler over the same number of steps.
  using torch::profiler::impl::ActivityType;
  using torch::profiler::impl::ProfilerConfig;
  using torch::profiler::impl::ProfilerState;
  const ProfilerConfig config(ProfilerState::KINETO);
  const std::set<ActivityType> activities{ActivityType::CPU, ActivityType::CUDA};
  torch::autograd::profiler::prepareProfiler(config, activities);
  torch::autograd::profiler::enableProfiler(config, activities);
  t0 = now_ms();
  for (int i = 0; i < steps; ++i) t.step();
  const double kineto_ms = (now_ms() - t0) / steps;
  const std::string kineto_path = out + "/kineto.pt.trace.json";
  torch::autograd::profiler::disableProfiler()->save(kineto_path);

  // Conflict: ptprof asked for CUDA while libtorch's profiler holds CUPTI.
  torch::autograd::profiler::prepareProfiler(config, activities);
  torch::autograd::profiler::enableProfiler(config, activities);
  std::vector<std::string> conflict_warnings;
  std::size_t conflict_cpu_events = 0;
  std::size_t conflict_gpu_events = 0;
  {
    ptprof::Options o;
    o.activities = {ptprof::Activity::CPU, ptprof::Activity::CUDA};
    ptprof::ProfileSession session(o);
    t.step();
    const ptprof::Status st = session.stop();
    conflict_warnings = st.warnings;
    if (const ptprof::Trace* tr = session.last_trace()) {
      for (const ptprof::Event& e : tr->events) {
        (ptprof::is_gpu(e.kind) ? conflict_gpu_events : conflict_cpu_events)++;
      }
    }
  }
  torch::autograd::profiler::disableProfiler();

  // And once libtorch's profiler is done: can ptprof have CUPTI again? (Informational: it
  // depends on whether that libtorch's Kineto keeps its CUPTI subscriber.)
  std::vector<std::string> after_warnings;
  std::size_t after_kernels = 0;
  {
    ptprof::Options o;
    o.activities = {ptprof::Activity::CPU, ptprof::Activity::CUDA};
    ptprof::ProfileSession session(o);
    t.step();
    after_warnings = session.stop().warnings;
    if (const ptprof::Trace* tr = session.last_trace()) {
      for (const ptprof::Event& e : tr->events)
        after_kernels += e.kind == ptprof::EventKind::Kernel;
    }
  }

  std::ofstream f(out + "/run.json");
  f << "{\n"
    << "  \"steps\": " << steps << ",\n"
    << "  \"baseline_step_ms\": " << baseline_ms << ",\n"
    << "  \"ptprof_step_ms\": " << ptprof_ms << ",\n"
    << "  \"kineto_step_ms\": " << kineto_ms << ",\n"
    << "  \"ptprof_trace\": \"" << json_escape(ptprof_path) << "\",\n"
    << "  \"kineto_trace\": \"" << json_escape(kineto_path) << "\",\n"
    << "  \"ptprof_errors\": " << json_strings(ptprof_status.errors) << ",\n"
    << "  \"ptprof_warnings\": " << json_strings(ptprof_status.warnings) << ",\n"
    << "  \"conflict_warnings\": " << json_strings(conflict_warnings) << ",\n"
    << "  \"conflict_cpu_events\": " << conflict_cpu_events << ",\n"
    << "  \"conflict_gpu_events\": " << conflict_gpu_events << ",\n"
    << "  \"after_kineto_warnings\": " << json_strings(after_warnings) << ",\n"
    << "  \"after_kineto_kernels\": " << after_kernels << "\n"
    << "}\n";
  std::cout << "gpu_train_check: baseline " << baseline_ms << " ms/step, ptprof " << ptprof_ms
            << " ms/step, libtorch profiler " << kineto_ms << " ms/step; traces in " << out << "\n";
  return f.good() ? 0 : 1;
}
