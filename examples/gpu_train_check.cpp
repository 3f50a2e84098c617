// The training side of scripts/gpu-check: trains a small model on CUDA for the same number of
// steps three times, without a profiler, under ptprof (activities CPU + CUDA) and under
// libtorch's own profiler (Kineto), one after the other, and writes both traces and the step
// times. Besides:
//  - the CPU cost of one kernel launch (a loop of one-element in-place adds) with no profiler,
//    under ptprof with CUDA on and under libtorch's profiler, rounds paired with a no-profiler
//    run just before each;
//  - a trace with every option on (record_shapes, profile_memory, with_stack, with_flops);
//  - CUPTI held by a second subscriber (this binary's own cuptiSubscribe): ptprof must warn and
//    still record the CPU side, and have CUPTI again once it is released;
//  - the conflict case: ptprof asking for CUDA while libtorch's profiler runs.
//
//   gpu_train_check --out DIR [--steps N] [--warmup N] [--launches N] [--rounds N]
//   gpu_train_check --fallback --out DIR    (run with no visible GPU: CUDA asked for on a CPU run)
//
// Writes DIR/ptprof.pt.trace.json (and the same window through tensorboard_trace_handler in
// DIR/tb/), DIR/ptprof_all.pt.trace.json, DIR/kineto.pt.trace.json and DIR/run.json (--fallback:
// DIR/fallback.pt.trace.json and DIR/fallback.json). Exit status: 0 done (verification is
// scripts/gpu_trace_check.py's job), 2 bad usage, 3 no CUDA device.
#include <torch/csrc/autograd/profiler_kineto.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "ptprof/ptprof.h"

#ifdef PTPROF_EXAMPLE_HAVE_CUPTI
#include <cupti.h>
#endif

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

std::string json_numbers(const std::vector<double>& v) {
  std::string o = "[";
  for (std::size_t i = 0; i < v.size(); ++i) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%s%.4f", i ? ", " : "", v[i]);
    o += buf;
  }
  return o + "]";
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// CPU microseconds per launch of a one-element in-place add: one ATen op, one kernel. The
// caller's profiler (if any) is on around it; the GPU is drained before and after, and the
// final drain is outside the timed part (it measures the host, not the queue).
double launch_us(torch::Tensor& x, int n) {
  torch::cuda::synchronize();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) x.add_(1);
  const auto t1 = std::chrono::steady_clock::now();
  torch::cuda::synchronize();
  return std::chrono::duration<double, std::micro>(t1 - t0).count() / n;
}

struct Counts {
  std::size_t cpu = 0, gpu = 0, kernels = 0;
};

Counts count_events(const ptprof::Trace* tr) {
  Counts c;
  if (!tr) return c;
  for (const ptprof::Event& e : tr->events) {
    (ptprof::is_gpu(e.kind) ? c.gpu : c.cpu)++;
    c.kernels += e.kind == ptprof::EventKind::Kernel;
  }
  return c;
}

// With no GPU visible: a CPU training step under a session that asks for CUDA. It must warn
// once, still write the CPU trace, and say in the metadata why GPU data is absent.
int run_fallback(const std::string& out) {
  if (torch::cuda::is_available()) {
    std::fprintf(stderr,
                 "gpu_train_check --fallback: a GPU is visible; run with CUDA_VISIBLE_DEVICES=\n");
    return 2;
  }
  torch::manual_seed(0);
  Net net;
  torch::optim::SGD opt(net->parameters(), 0.01);
  ptprof::Options o;
  o.activities = {ptprof::Activity::CPU, ptprof::Activity::CUDA};
  const std::string path = out + "/fallback.pt.trace.json";
  o.on_trace_ready = {ptprof::chrome_trace_handler(path)};
  ptprof::Status st;
  Counts c;
  {
    ptprof::ProfileSession session(o);
    for (int i = 0; i < 2; ++i) {
      PTPROF_RANGE("step");
      opt.zero_grad();
      torch::nn::functional::cross_entropy(net->forward(torch::randn({4, 3, 32, 32})),
                                           torch::randint(0, 10, {4}))
          .backward();
      opt.step();
    }
    st = session.stop();
    c = count_events(session.last_trace());
  }
  std::ofstream f(out + "/fallback.json");
  f << "{\n"
    << "  \"trace\": \"" << json_escape(path) << "\",\n"
    << "  \"errors\": " << json_strings(st.errors) << ",\n"
    << "  \"warnings\": " << json_strings(st.warnings) << ",\n"
    << "  \"cpu_events\": " << c.cpu << ",\n"
    << "  \"gpu_events\": " << c.gpu << "\n"
    << "}\n";
  std::cout << "gpu_train_check --fallback: " << c.cpu << " CPU events, " << c.gpu
            << " GPU events, " << st.warnings.size() << " warning(s)\n";
  return f.good() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string out;
  int steps = 5;
  int warmup = 5;
  int launches = 20000;
  int rounds = 5;
  bool fallback = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--out" && i + 1 < argc) {
      out = argv[++i];
    } else if (a == "--fallback") {
      fallback = true;
    } else if (a == "--launches" && i + 1 < argc) {
      launches = std::atoi(argv[++i]);
    } else if (a == "--rounds" && i + 1 < argc) {
      rounds = std::atoi(argv[++i]);
    } else if (a == "--steps" && i + 1 < argc) {
      steps = std::atoi(argv[++i]);
    } else if (a == "--warmup" && i + 1 < argc) {
      warmup = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr,
                   "usage: %s --out DIR [--steps N] [--warmup N] [--launches N] [--rounds N] "
                   "[--fallback]\n",
                   argv[0]);
      return 2;
    }
  }
  if (out.empty() || steps < 1 || warmup < 0 || launches < 1 || rounds < 1) {
    std::fprintf(stderr,
                 "usage: %s --out DIR [--steps N>=1] [--warmup N>=0] [--launches N>=1] "
                 "[--rounds N>=1] [--fallback]\n",
                 argv[0]);
    return 2;
  }
  if (fallback) return run_fallback(out);
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
  // The step's cost and the fixtures are measured in Lean mode, the candidate default
  // (gpu_launch_layers measures Classic beside it).
  opts.cuda_tracing = ptprof::CudaTracing::Lean;
  const std::string ptprof_path = out + "/ptprof.pt.trace.json";
  // The same window also as TensorBoard gets it (gzip'ed, no GPU spans of steps), for the
  // consumer checks of the fixtures kept from this run.
  opts.on_trace_ready = {ptprof::chrome_trace_handler(ptprof_path),
                         ptprof::tensorboard_trace_handler(out + "/tb", "h200", /*use_gzip=*/true)};
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

  // Every option on, two steps, CPU + CUDA: shapes, allocator events, stacks and FLOPs on GPU
  // ops.
  ptprof::Status all_status;
  {
    ptprof::Options o;
    o.activities = {ptprof::Activity::CPU, ptprof::Activity::CUDA};
    o.record_shapes = o.profile_memory = o.with_stack = o.with_flops = true;
    o.schedule = ptprof::Schedule{/*wait=*/0, /*warmup=*/1, /*active=*/2, /*repeat=*/1};
    o.on_trace_ready = {ptprof::chrome_trace_handler(out + "/ptprof_all.pt.trace.json")};
    ptprof::ProfileSession session(o);
    for (int i = 0; i < 3; ++i) {
      t.step();
      session.step();
    }
    all_status = session.stop();
  }

  // The CPU cost of a kernel launch: no profiler, then ptprof with CUDA on, paired per round.
  // Done before libtorch's profiler ever runs, since its Kineto may keep CUPTI afterwards.
  torch::Tensor one = torch::zeros({1}, torch::TensorOptions().device(torch::kCUDA));
  launch_us(one, 1000);  // the add's kernel loaded, the allocator settled
  std::vector<double> launch_base_a, launch_ptprof, launch_base_b, launch_kineto;
  std::vector<double> launch_base_c, launch_ptprof_cpu;  // ptprof without CUDA: its own share
  std::vector<std::string> launch_warnings;
  std::size_t launch_kernels = 0;
  for (int r = 0; r < rounds; ++r) {
    launch_base_a.push_back(launch_us(one, launches));
    ptprof::Options o;
    o.activities = {ptprof::Activity::CPU, ptprof::Activity::CUDA};
    ptprof::ProfileSession session(o);
    launch_us(one, 100);
    launch_ptprof.push_back(launch_us(one, launches));
    const ptprof::Status st = session.stop();
    if (r == 0) {
      launch_warnings = st.warnings;
      launch_kernels = count_events(session.last_trace()).kernels;
    }
    launch_base_c.push_back(launch_us(one, launches));
    ptprof::ProfileSession cpu_only{ptprof::Options{}};
    launch_us(one, 100);
    launch_ptprof_cpu.push_back(launch_us(one, launches));
    cpu_only.stop();
  }

  // CUPTI held by another subscriber (as under Nsight or compute-sanitizer): ptprof warns and
  // records the CPU side; released, ptprof has CUPTI again.
  bool subscriber_tested = false;
  std::vector<std::string> subscriber_warnings;
  Counts subscriber_counts, released_counts;
#ifdef PTPROF_EXAMPLE_HAVE_CUPTI
  {
    CUpti_SubscriberHandle handle = nullptr;
    auto ignore = [](void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {};
    if (cuptiSubscribe(&handle, static_cast<CUpti_CallbackFunc>(+ignore), nullptr) ==
        CUPTI_SUCCESS) {
      subscriber_tested = true;
      {
        ptprof::Options o;
        o.activities = {ptprof::Activity::CPU, ptprof::Activity::CUDA};
        ptprof::ProfileSession session(o);
        t.step();
        subscriber_warnings = session.stop().warnings;
        subscriber_counts = count_events(session.last_trace());
      }
      cuptiUnsubscribe(handle);
      {
        ptprof::Options o;
        o.activities = {ptprof::Activity::CPU, ptprof::Activity::CUDA};
        ptprof::ProfileSession session(o);
        t.step();
        session.stop();
        released_counts = count_events(session.last_trace());
      }
    }
  }
#endif

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

  // The launch cost under libtorch's profiler, paired the same way.
  for (int r = 0; r < rounds; ++r) {
    launch_base_b.push_back(launch_us(one, launches));
    torch::autograd::profiler::prepareProfiler(config, activities);
    torch::autograd::profiler::enableProfiler(config, activities);
    launch_us(one, 100);
    launch_kineto.push_back(launch_us(one, launches));
    torch::autograd::profiler::disableProfiler();
  }

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
    << "  \"after_kineto_kernels\": " << after_kernels << ",\n"
    << "  \"all_options_errors\": " << json_strings(all_status.errors) << ",\n"
    << "  \"all_options_warnings\": " << json_strings(all_status.warnings) << ",\n"
    << "  \"launches_per_round\": " << launches << ",\n"
    << "  \"launch_us_baseline_ptprof_rounds\": " << json_numbers(launch_base_a) << ",\n"
    << "  \"launch_us_ptprof\": " << json_numbers(launch_ptprof) << ",\n"
    << "  \"launch_us_baseline_ptprof_cpu_rounds\": " << json_numbers(launch_base_c) << ",\n"
    << "  \"launch_us_ptprof_cpu\": " << json_numbers(launch_ptprof_cpu) << ",\n"
    << "  \"launch_us_baseline_kineto_rounds\": " << json_numbers(launch_base_b) << ",\n"
    << "  \"launch_us_kineto\": " << json_numbers(launch_kineto) << ",\n"
    << "  \"launch_us_median\": {\"baseline\": " << median(launch_base_a)
    << ", \"ptprof\": " << median(launch_ptprof)
    << ", \"baseline_kineto\": " << median(launch_base_b)
    << ", \"kineto\": " << median(launch_kineto) << "},\n"
    << "  \"launch_ptprof_kernels\": " << launch_kernels << ",\n"
    << "  \"launch_ptprof_warnings\": " << json_strings(launch_warnings) << ",\n"
    << "  \"subscriber_tested\": " << (subscriber_tested ? "true" : "false") << ",\n"
    << "  \"subscriber_warnings\": " << json_strings(subscriber_warnings) << ",\n"
    << "  \"subscriber_cpu_events\": " << subscriber_counts.cpu << ",\n"
    << "  \"subscriber_gpu_events\": " << subscriber_counts.gpu << ",\n"
    << "  \"released_kernels\": " << released_counts.kernels << "\n"
    << "}\n";
  std::cout << "gpu_train_check: baseline " << baseline_ms << " ms/step, ptprof " << ptprof_ms
            << " ms/step, libtorch profiler " << kineto_ms << " ms/step; launch "
            << median(launch_base_a) << " us, under ptprof " << median(launch_ptprof)
            << " us, under libtorch's profiler " << median(launch_kineto) << " us (baseline "
            << median(launch_base_b) << "); traces in " << out << "\n";
  return f.good() ? 0 : 1;
}
