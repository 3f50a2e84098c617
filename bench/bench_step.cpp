// bench_step: what profiling costs a realistic training step, end to end, on CPU.
//
//   bench_step [--json] [--reps R] [--steps S] [--only NAME,NAME...] [--model cnn|deep]
//   valgrind --tool=callgrind bench_step --instructions [--steps S] [--only ...] [--model ...]
//
// The step: a batch of 32 images from a libtorch DataLoader (32 samples made and stacked, in a
// ptprof::DataLoaderRange), a small CNN (two conv + batch-norm + ReLU blocks, max and adaptive
// pooling, a Linear + LayerNorm + Dropout head), cross-entropy, backward and Adam: a few ms
// and some hundreds of ops on one thread. --model deep: an embedding and LSTM step whose ops
// run under deep native stacks (DeepTrainer; issue 28 section 1b). It runs with no profiler; under the floors any
// observer pays (an empty RecordFunction callback; with inputs for record_shapes and
// with_flops; with an empty memory reporter for profile_memory); under ptprof with each option;
// and under libtorch's own profiler (Kineto, CPU activity) with the same options.
//
// The flight recorder is two configurations: ptprof_flight (its rings alone, no window) and
// ptprof_flight_window (beside ptprof_none's window); --only names them.
//
// An idle on-demand trigger (a session that records nothing until its trigger file appears) is
// too cheap to see against a step's noise, so step() is timed alone, 20000 calls at a time:
// with the trigger looked at on every call, at the default 100 ms, and with no trigger.
//
// Each sample is S steps in one profiling session, timed in thread CPU time (session start and
// trace building are outside it), and is paired with a no-profiler sample taken just before
// it (after S steps not counted; configurations in a new random order each repetition); a
// configuration's cost is the median of those differences over R repetitions, with the
// 10th-90th percentile spread, as a percent of the no-profiler step. Closing the session's
// window (building its trace of S steps) is timed apart: it is paid once per window.
//
// --instructions (under callgrind; `scripts/bench instructions` runs it): the same
// configurations, each run for S steps between a zeroing and a dump of callgrind's counters
// named after it (after one window of each that is not counted), with a no-profiler run before
// each. Instructions executed are not
// time (a cache miss costs more than an add), but on a shared machine they are the one measure
// that does not move from run to run: the driver reads the dumps and prints each
// configuration's instructions per step against the step's.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <ATen/record_function.h>
#include <c10/util/ThreadLocalDebugInfo.h>
#include <torch/csrc/autograd/profiler_kineto.h>
#include <torch/torch.h>
// valgrind's client requests (Debian's valgrind package); without them --instructions says so.
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#else
#define RUNNING_ON_VALGRIND 0
#define CALLGRIND_ZERO_STATS
#define CALLGRIND_DUMP_STATS_AT(name) (void)(name)
#endif

#include "bench_common.h"
#include "ptprof/ptprof.h"
#include "trace/json_writer.h"

namespace {

using ptprof::bench::Config;

struct RandomImages : torch::data::datasets::Dataset<RandomImages> {
  torch::data::Example<> get(std::size_t i) override {
    return {torch::randn({3, 32, 32}), torch::tensor(static_cast<int64_t>(i % 10))};
  }
  torch::optional<std::size_t> size() const override { return std::size_t{1} << 24; }
};

struct NetImpl : torch::nn::Module {
  NetImpl() {
    conv1 =
        register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 16, 3).padding(1)));
    bn1 = register_module("bn1", torch::nn::BatchNorm2d(16));
    conv2 =
        register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(16, 32, 3).padding(1)));
    bn2 = register_module("bn2", torch::nn::BatchNorm2d(32));
    fc1 = register_module("fc1", torch::nn::Linear(32 * 4 * 4, 128));
    ln = register_module("ln", torch::nn::LayerNorm(torch::nn::LayerNormOptions({128})));
    drop = register_module("drop", torch::nn::Dropout(0.1));
    fc2 = register_module("fc2", torch::nn::Linear(128, 10));
  }
  torch::Tensor forward(torch::Tensor x) {
    x = torch::max_pool2d(torch::relu(bn1(conv1(x))), 2);
    x = torch::adaptive_avg_pool2d(torch::relu(bn2(conv2(x))), {4, 4}).flatten(1);
    return fc2(drop(torch::relu(ln(fc1(x)))));
  }
  torch::nn::Conv2d conv1{nullptr}, conv2{nullptr};
  torch::nn::BatchNorm2d bn1{nullptr}, bn2{nullptr};
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
  torch::nn::LayerNorm ln{nullptr};
  torch::nn::Dropout drop{nullptr};
};
TORCH_MODULE(Net);

// A step of training; bench_step times one of two.
class Workload {
 public:
  virtual ~Workload() = default;
  virtual void step() = 0;
};

class Trainer final : public Workload {
 public:
  Trainer()
      : loader_(torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
            RandomImages().map(torch::data::transforms::Stack<>()),
            torch::data::DataLoaderOptions(32).workers(0))),
        it_(loader_->begin()),
        opt_(net_->parameters(), torch::optim::AdamOptions(1e-3)) {}

  void step() override {
    torch::data::Example<> batch;
    {
      ptprof::DataLoaderRange data;
      batch = *it_;
      ++it_;
    }
    opt_.zero_grad();
    torch::Tensor loss;
    {
      PTPROF_RANGE("forward");
      loss = torch::nn::functional::cross_entropy(net_->forward(batch.data), batch.target);
    }
    {
      PTPROF_RANGE("backward");
      loss.backward();
    }
    {
      PTPROF_RANGE("optimizer_step");
      opt_.step();
    }
  }

 private:
  using Loader = decltype(torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
      RandomImages().map(torch::data::transforms::Stack<>()), torch::data::DataLoaderOptions()));
  Net net_;
  Loader loader_;
  decltype(loader_->begin()) it_;
  torch::optim::Adam opt_;
};

// --model deep: a step whose ops run under deep native stacks, where with_stack costs most:
// an embedding, a two-layer LSTM over a sequence (libtorch's CPU LSTM is a loop of small ops per
// time step, under the module, aten::lstm and its cell functions), a Linear head, and the
// backward through autograd's engine. About 3 ms and a thousand-odd ops on one thread.
struct DeepNetImpl : torch::nn::Module {
  DeepNetImpl() {
    embed = register_module("embed", torch::nn::Embedding(1000, 32));
    lstm = register_module("lstm", torch::nn::LSTM(torch::nn::LSTMOptions(32, 48).num_layers(2)));
    head = register_module("head", torch::nn::Linear(48, 1000));
  }
  torch::Tensor forward(torch::Tensor tokens) {
    torch::Tensor x = embed(tokens);  // [seq, batch, 32]
    x = std::get<0>(lstm(x));
    return head(x.select(0, -1));
  }
  torch::nn::Embedding embed{nullptr};
  torch::nn::LSTM lstm{nullptr};
  torch::nn::Linear head{nullptr};
};
TORCH_MODULE(DeepNet);

class DeepTrainer final : public Workload {
 public:
  DeepTrainer() : opt_(net_->parameters(), torch::optim::AdamOptions(1e-3)) {}

  void step() override {
    torch::Tensor tokens, target;
    {
      ptprof::DataLoaderRange data;
      tokens = torch::randint(1000, {16, 8});
      target = torch::randint(1000, {8});
    }
    opt_.zero_grad();
    torch::Tensor loss;
    {
      PTPROF_RANGE("forward");
      loss = torch::nn::functional::cross_entropy(net_->forward(tokens), target);
    }
    {
      PTPROF_RANGE("backward");
      loss.backward();
    }
    {
      PTPROF_RANGE("optimizer_step");
      opt_.step();
    }
  }

 private:
  DeepNet net_;
  torch::optim::Adam opt_;
};

// The options a configuration turns on, for ptprof and libtorch alike.
struct Flags {
  bool shapes = false, memory = false, stack = false, flops = false;
};

const std::vector<std::pair<std::string, Flags>> kOptions = {
    {"none", {}},
    {"record_shapes", {true, false, false, false}},
    {"profile_memory", {false, true, false, false}},
    {"with_stack", {false, false, true, false}},
    {"with_flops", {false, false, false, true}},
    {"all", {true, true, true, true}},
    // What libtorch's "all" records from C++: its with_stack has no Python stack to take there.
    {"all_but_stack", {true, true, false, true}},
};

// What any observer pays for an option: the callback itself, inputs boxed for it
// (record_shapes, with_flops), c10's allocator bookkeeping under a memory reporter.
std::string floor_of(const Flags& f) {
  const bool inputs = f.shapes || f.flops;
  if (inputs && f.memory) return "floor_inputs_memory";
  if (f.memory) return "floor_memory";
  return inputs ? "floor_inputs" : "floor";
}

}  // namespace

int main(int argc, char** argv) {
  bool json = false;
  bool instructions = false;
  int reps = 21;
  int steps = 4;
  std::string only;
  std::string model = "cnn";
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--json")) {
      json = true;
    } else if (!std::strcmp(argv[i], "--instructions")) {
      instructions = true;
    } else if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) {
      reps = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--steps") && i + 1 < argc) {
      steps = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--only") && i + 1 < argc) {
      only = "," + std::string(argv[++i]) + ",";
    } else if (!std::strcmp(argv[i], "--model") && i + 1 < argc &&
               (!std::strcmp(argv[i + 1], "cnn") || !std::strcmp(argv[i + 1], "deep"))) {
      model = argv[++i];
    } else {
      std::fprintf(stderr,
                   "usage: %s [--json | --instructions] [--reps R] [--steps S] [--only NAME,...] "
                   "[--model cnn|deep]\n",
                   argv[0]);
      return 2;
    }
  }
  if (reps < 1 || steps < 1) {
    std::fprintf(stderr, "bench_step: --reps and --steps must be at least 1\n");
    return 2;
  }
  torch::set_num_threads(1);
  torch::manual_seed(0);
  std::unique_ptr<Workload> workload;
  if (model == "deep") {
    workload = std::make_unique<DeepTrainer>();
  } else {
    workload = std::make_unique<Trainer>();
  }
  Workload& trainer = *workload;
  for (int i = 0; i < 10; ++i) trainer.step();  // lazy init, allocator pools, caches

  namespace tap = torch::autograd::profiler;
  namespace tpi = torch::profiler::impl;
  std::unique_ptr<ptprof::ProfileSession> session;
  at::CallbackHandle handle = 0;
  auto floor_cfg = [&](const std::string& name, bool inputs, bool memory) {
    return Config{
        name,
        [&, inputs, memory] {
          handle = at::addGlobalCallback(
              at::RecordFunctionCallback(&ptprof::bench::empty_start, &ptprof::bench::empty_end)
                  .needsInputs(inputs));
          if (memory)
            c10::ThreadLocalDebugInfo::_push(c10::DebugInfoKind::PROFILER_STATE,
                                             std::make_shared<ptprof::bench::EmptyReporter>());
        },
        [&, memory] {
          if (memory) c10::ThreadLocalDebugInfo::_pop(c10::DebugInfoKind::PROFILER_STATE);
          at::removeCallback(handle);
        }};
  };
  // ptprof's own cost as its window says it (ptprof_cost, calibrated in this process), per
  // configuration: op_ns x the ops and ranges recorded per step, in ms. Set by its teardown,
  // once the session has stopped.
  std::map<std::string, std::vector<double>> calibrated;
  auto stop_ptprof = [&](const std::string& name) {
    session->stop();
    const ptprof::Trace* t = session->last_trace();
    const auto cost = t ? ptprof::profiler_cost(*t) : std::nullopt;
    if (cost) {
      int64_t ops = 0;
      for (const ptprof::Event& e : t->events)
        ops += e.kind == ptprof::EventKind::CpuOp || e.kind == ptprof::EventKind::UserAnnotation;
      calibrated[name].push_back(cost->op_ns * static_cast<double>(ops) / steps / 1e6);
    }
    session.reset();
  };
  std::vector<Config> configs = {
      floor_cfg("floor", false, false), floor_cfg("floor_inputs", true, false),
      floor_cfg("floor_memory", false, true), floor_cfg("floor_inputs_memory", true, true)};
  for (const auto& [option, f] : kOptions) {
    configs.push_back(Config{"ptprof_" + option,
                             [&, f = f] {
                               ptprof::Options o;
                               o.record_shapes = f.shapes;
                               o.profile_memory = f.memory;
                               o.with_stack = f.stack;
                               o.with_flops = f.flops;
                               session = std::make_unique<ptprof::ProfileSession>(o);
                             },
                             [&, name = "ptprof_" + option] { stop_ptprof(name); }});
    configs.push_back(Config{"libtorch_" + option,
                             [f = f] {
                               const tpi::ProfilerConfig cfg(tpi::ProfilerState::KINETO, f.shapes,
                                                             f.memory, f.stack, f.flops);
                               const std::set<tpi::ActivityType> act{tpi::ActivityType::CPU};
                               tap::prepareProfiler(cfg, act);
                               tap::enableProfiler(cfg, act);
                             },
                             [] { tap::disableProfiler(); }});
  }
  // The always-on flight recorder (issue 27: at most 1.5% of the step): alone, as a job leaves
  // it on with no window (a session that records only on demand), and beside ptprof_none's
  // window. Its dumps would go to a temporary directory; none is asked for.
  const std::string flight_dir =
      (std::filesystem::temp_directory_path() / "ptprof_bench_step_flight").string();
  for (const bool window : {false, true}) {
    configs.push_back(Config{window ? "ptprof_flight_window" : "ptprof_flight",
                             [&, window] {
                               ptprof::Options o;
                               o.on_demand_only = !window;
                               o.flight_recorder.enabled = true;
                               o.flight_recorder.dir = flight_dir;
                               session = std::make_unique<ptprof::ProfileSession>(o);
                             },
                             [&] { session.reset(); }});
  }
  if (!only.empty()) {
    std::set<std::string> keep;
    for (const auto& [option, f] : kOptions) {
      for (const char* who : {"ptprof_", "libtorch_"}) {
        if (only.find("," + std::string(who) + option + ",") != std::string::npos ||
            only.find("," + option + ",") != std::string::npos) {
          keep.insert(who + option);
          keep.insert(floor_of(f));
        }
      }
    }
    for (const Config& c : configs)
      if (only.find("," + c.name + ",") != std::string::npos) keep.insert(c.name);
    configs.erase(std::remove_if(configs.begin(), configs.end(),
                                 [&](const Config& c) { return !keep.count(c.name); }),
                  configs.end());
  }

  if (instructions) {
    if (!RUNNING_ON_VALGRIND) {
      std::fprintf(stderr,
                   "bench_step: --instructions counts under callgrind: run it as "
                   "`valgrind --tool=callgrind %s --instructions` (scripts/bench "
                   "instructions does)\n",
                   argv[0]);
      return 2;
    }
    // For the driver: steps per run, and which floor each option is measured above.
    std::printf("steps %d\n", steps);
    for (const auto& [option, f] : kOptions)
      std::printf("option %s %s\n", option.c_str(), floor_of(f).c_str());
    std::fflush(stdout);
    // A first window of each configuration, not counted: what a process pays once (a thread's
    // first op under ptprof allocates its recording state, the first window its buffers and
    // its names) stays out, as it does from the timed medians.
    for (Config& c : configs) {
      c.setup();
      for (int i = 0; i < steps; ++i) trainer.step();
      c.teardown();
    }
    // One dump per run, named for the driver: "baseline <config>" then "<config>".
    for (Config& c : configs) {
      const std::string before = "baseline " + c.name;
      CALLGRIND_ZERO_STATS;
      for (int i = 0; i < steps; ++i) trainer.step();
      CALLGRIND_DUMP_STATS_AT(before.c_str());
      c.setup();
      CALLGRIND_ZERO_STATS;
      for (int i = 0; i < steps; ++i) trainer.step();
      CALLGRIND_DUMP_STATS_AT(c.name.c_str());
      c.teardown();
    }
    return 0;
  }

  auto run_steps = [&] {
    const int64_t t0 = ptprof::bench::thread_cpu_ns();
    for (int i = 0; i < steps; ++i) trainer.step();
    return static_cast<double>(ptprof::bench::thread_cpu_ns() - t0) / 1e6 / steps;  // ms/step
  };
  std::vector<double> baseline;
  std::map<std::string, std::vector<double>> diffs, closes;
  // Configurations in a new order each repetition, each after a run that is not counted: the
  // sample after a teardown (libtorch's frees its buffers, cold caches) ran slower, which made
  // whichever configuration came next look cheaper than no profiler at all.
  std::mt19937 shuffle_rng(20261206);
  std::vector<std::size_t> order(configs.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  for (int r = 0; r < reps; ++r) {
    std::shuffle(order.begin(), order.end(), shuffle_rng);
    for (const std::size_t k : order) {
      Config& c = configs[k];
      run_steps();
      const double before = run_steps();
      c.setup();
      const double x = run_steps();
      // Closing the window (building the trace: ptprof's stop(), libtorch's disableProfiler())
      // is paid once per window, not per step: timed apart, on the wall clock.
      const auto t0 = std::chrono::steady_clock::now();
      c.teardown();
      closes[c.name].push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      baseline.push_back(before);
      diffs[c.name].push_back(x - before);
    }
  }
  const double step_ms = ptprof::bench::median(baseline);

  // The idle trigger: ns per step() call, median of R samples of 20000 calls each.
  const std::string absent_trigger =
      (std::filesystem::temp_directory_path() / "ptprof_bench_step_no_such.trigger").string();
  auto step_call_ns = [&](const std::string& trigger, int64_t interval_ms) {
    ptprof::Options o;
    o.on_demand_only = true;
    o.trigger_file = trigger;
    o.trigger_check_interval_ms = interval_ms;
    ptprof::ProfileSession idle(o);
    std::vector<double> ns;
    for (int r = 0; r < reps; ++r) {
      const int64_t t0 = ptprof::bench::thread_cpu_ns();
      for (int i = 0; i < 20000; ++i) idle.step();
      ns.push_back(static_cast<double>(ptprof::bench::thread_cpu_ns() - t0) / 20000);
    }
    return ptprof::bench::median(ns);
  };
  const double idle_every_step_ns = step_call_ns(absent_trigger, 0);
  const double idle_default_ns = step_call_ns(absent_trigger, 100);
  const double idle_none_ns = step_call_ns("", 100);
  auto pct = [&](double ms) { return 100.0 * ms / step_ms; };
  auto cost = [&](const std::string& name) { return ptprof::bench::median(diffs[name]); };
  auto lo = [&](const std::string& name) { return ptprof::bench::percentile(diffs[name], 0.1); };
  auto hi = [&](const std::string& name) { return ptprof::bench::percentile(diffs[name], 0.9); };

  // Above each option's floor: what the profiler itself adds, ptprof's against libtorch's.
  struct Row {
    std::string option, floor;
    double floor_pct, ptprof_pct, libtorch_pct, ptprof_above, libtorch_above, ratio;
  };
  std::vector<Row> rows;
  for (const auto& [option, f] : kOptions) {
    const std::string p = "ptprof_" + option, l = "libtorch_" + option, fl = floor_of(f);
    if (!diffs.count(p) || !diffs.count(l)) continue;
    Row row{option, fl, pct(cost(fl)), pct(cost(p)), pct(cost(l)), 0, 0, 0};
    row.ptprof_above = row.ptprof_pct - row.floor_pct;
    row.libtorch_above = row.libtorch_pct - row.floor_pct;
    row.ratio = row.libtorch_above > 0 ? row.ptprof_above / row.libtorch_above : 0;
    rows.push_back(row);
  }

  if (json) {
    ptprof::detail::JsonWriter w;
    w.begin_object();
    w.key("step_ms").value(step_ms);
    w.key("steps_per_sample").value(static_cast<int64_t>(steps));
    w.key("reps").value(static_cast<int64_t>(reps));
    w.key("configs").begin_object();
    for (const Config& c : configs) {
      w.key(c.name).begin_object();
      w.key("added_ms").value(cost(c.name));
      w.key("added_pct").value(pct(cost(c.name)));
      w.key("p10_pct").value(pct(lo(c.name)));
      w.key("p90_pct").value(pct(hi(c.name)));
      w.key("window_close_ms").value(ptprof::bench::median(closes[c.name]));
      if (calibrated.count(c.name))
        w.key("calibrated_pct").value(pct(ptprof::bench::median(calibrated[c.name])));
      w.end_object();
    }
    w.end_object();
    w.key("options").begin_object();
    for (const Row& r : rows) {
      w.key(r.option).begin_object();
      w.key("floor").value(r.floor);
      w.key("ptprof_above_floor_pct").value(r.ptprof_above);
      w.key("libtorch_above_floor_pct").value(r.libtorch_above);
      w.key("ratio").value(r.ratio);
      w.end_object();
    }
    w.end_object();
    w.key("idle_trigger").begin_object();
    w.key("step_call_ns_every_step").value(idle_every_step_ns);
    w.key("step_call_ns_default_interval").value(idle_default_ns);
    w.key("step_call_ns_no_trigger").value(idle_none_ns);
    w.key("every_step_pct_of_step").value(pct(idle_every_step_ns / 1e6));
    w.end_object();
    w.end_object();
    std::printf("%s\n", w.buffer().c_str());
    return 0;
  }

  std::printf(
      "training step with no profiler: %.3f ms (median of %zu samples of %d steps, thread CPU "
      "time)\ncost per step, median of %d paired samples [p10, p90], %% of that step:\n\n",
      step_ms, baseline.size(), steps, reps);
  std::printf("%-22s %9s %22s %16s %11s\n", "configuration", "added", "spread", "window close",
              "calibrated");
  for (const Config& c : configs) {
    std::printf("%-22s %8.2f%% [%8.2f%%, %8.2f%%] %13.2f ms", c.name.c_str(), pct(cost(c.name)),
                pct(lo(c.name)), pct(hi(c.name)), ptprof::bench::median(closes[c.name]));
    if (calibrated.count(c.name))
      std::printf(" %10.2f%%", pct(ptprof::bench::median(calibrated[c.name])));
    std::printf("\n");
  }
  std::printf(
      "(calibrated: what ptprof's window says it cost, ptprof_cost's op_ns x its ops per step: "
      "issue 28 section 4's estimate, beside the measured cost)\n");
  std::printf("\n%-15s %-20s %8s %16s %18s %11s\n", "option", "floor", "floor", "ptprof-floor",
              "libtorch-floor", "ratio");
  for (const Row& r : rows) {
    std::printf("%-15s %-20s %7.2f%% %15.2f%% %17.2f%% %11.2f\n", r.option.c_str(), r.floor.c_str(),
                r.floor_pct, r.ptprof_above, r.libtorch_above, r.ratio);
  }
  std::printf(
      "\nidle on-demand trigger, per step() call: %.0f ns looking at the file every step (%.4f%% "
      "of the step), %.0f ns at the default 100 ms, %.0f ns with no trigger file\n",
      idle_every_step_ns, pct(idle_every_step_ns / 1e6), idle_default_ns, idle_none_ns);
  std::printf(
      "\ntargets: ptprof above the floor <= 0.25 x libtorch's above the floor, per option; "
      "with_stack <= 5%% of the step (ptprof_with_stack: %.2f%%)\n",
      diffs.count("ptprof_with_stack") ? pct(cost("ptprof_with_stack")) : -1.0);
  return 0;
}
