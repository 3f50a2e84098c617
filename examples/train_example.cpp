// A small libtorch training loop profiled with ptprof, the way torch.profiler users do it:
//
//   train_example [LOGDIR] [--steps N] [--sample-latency-us U] [--workers W]
//
// Trains an MLP on synthetic data through libtorch's own DataLoader with
// schedule(wait=1, warmup=1, active=3, repeat=2) and record_shapes, profile_memory and
// with_stack on; writes TensorBoard traces to LOGDIR (default ./log/ptprof_example), a flame
// graph and a memory timeline of the last window to LOGDIR_reports/, and prints ptprof's table.
//
// The walkthrough's case: --sample-latency-us makes each sample wait that long, as reading it
// from slow storage would, so the step is bound by data loading; --workers W is the fix, W
// loader threads fetching batches ahead of the training loop (libtorch's DataLoader workers).
#include <sys/stat.h>
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>

#include "ptprof/ptprof.h"

namespace {

// Synthetic classification data: labels are a fixed linear function of the inputs. A batch
// dataset, read a batch at a time as from a record file: one gather per batch rather than a
// tensor per sample, so loader workers spend their time waiting on "storage", not competing
// with the training thread for the CPU.
class SyntheticDataset
    : public torch::data::datasets::BatchDataset<SyntheticDataset, torch::data::Example<>> {
 public:
  SyntheticDataset(int64_t size, int64_t sample_latency_us)
      : size_(size), latency_(sample_latency_us) {
    torch::manual_seed(0);
    inputs_ = torch::randn({size, 64});
    labels_ = inputs_.matmul(torch::randn({64, 10})).argmax(1);
  }
  torch::data::Example<> get_batch(c10::ArrayRef<size_t> indices) override {
    // Storage latency (latency x samples, one wait): the thread waits, it does not compute, so
    // loader workers overlap it.
    if (latency_ > 0) {
      std::this_thread::sleep_for(
          std::chrono::microseconds(latency_ * static_cast<int64_t>(indices.size())));
    }
    std::vector<int64_t> rows(indices.begin(), indices.end());
    auto index = torch::tensor(rows, torch::kLong);
    return {inputs_.index_select(0, index), labels_.index_select(0, index)};
  }
  torch::optional<size_t> size() const override { return size_; }

 private:
  int64_t size_;
  int64_t latency_;
  torch::Tensor inputs_, labels_;
};

struct MlpImpl : torch::nn::Module {
  MlpImpl()
      : fc1(register_module("fc1", torch::nn::Linear(64, 4096))),
        fc2(register_module("fc2", torch::nn::Linear(4096, 10))) {}
  torch::Tensor forward(torch::Tensor x) { return fc2(torch::relu(fc1(x))); }
  torch::nn::Linear fc1, fc2;
};
TORCH_MODULE(Mlp);

}  // namespace

// Kept out of line (and exported, see CMakeLists.txt) so with_stack's flame graph can name it;
// in a real project the model lives in its own translation unit anyway.
__attribute__((noinline)) torch::Tensor model_forward(Mlp& model, const torch::Tensor& x) {
  PTPROF_RANGE("forward");
  return model->forward(x);
}

int main(int argc, char** argv) {
  std::string logdir = "./log/ptprof_example";
  int steps = 12;
  int64_t sample_latency_us = 0;
  int64_t workers = 0;
  auto number = [&](int& i, int64_t min) {
    char* end = nullptr;
    const long long v = i + 1 < argc ? std::strtoll(argv[++i], &end, 10) : -1;
    if (end == nullptr || *end != '\0' || v < min) {
      std::fprintf(stderr, "%s: %s needs a whole number >= %lld\n", argv[0], argv[i - 1],
                   static_cast<long long>(min));
      std::exit(2);
    }
    return static_cast<int64_t>(v);
  };
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--steps") {
      steps = static_cast<int>(number(i, 1));
    } else if (a == "--sample-latency-us") {
      sample_latency_us = number(i, 0);
    } else if (a == "--workers") {
      workers = number(i, 0);
    } else if (!a.empty() && a[0] != '-') {
      logdir = a;
    } else {
      std::fprintf(stderr, "usage: %s [LOGDIR] [--steps N] [--sample-latency-us U] [--workers W]\n",
                   argv[0]);
      return 2;
    }
  }
  torch::set_num_threads(1);

  Mlp model;
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.05));
  auto loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
      SyntheticDataset(4096, sample_latency_us),
      torch::data::DataLoaderOptions().batch_size(64).workers(workers));

  ptprof::Options opts;
  opts.schedule = ptprof::Schedule{/*wait=*/1, /*warmup=*/1, /*active=*/3, /*repeat=*/2};
  opts.record_shapes = true;
  opts.profile_memory = true;
  opts.with_stack = true;
  opts.on_trace_ready = {ptprof::tensorboard_trace_handler(logdir)};
  ptprof::Status status;
  {
    ptprof::ProfileSession session(opts);
    auto it = loader->begin();
    for (int step = 0; step < steps; ++step) {
      torch::data::Example<> batch;
      {
        ptprof::DataLoaderRange fetch;  // counted as DataLoader time by TensorBoard
        if (it == loader->end()) it = loader->begin();
        batch = *it;
        ++it;
      }
      optimizer.zero_grad();
      torch::Tensor loss;
      {
        PTPROF_RANGE("loss");
        loss = torch::nn::functional::cross_entropy(model_forward(model, batch.data), batch.target);
      }
      {
        PTPROF_RANGE("backward");
        loss.backward();
      }
      {
        PTPROF_RANGE("optimizer_step");
        optimizer.step();
      }
      session.step();
    }
    status = session.stop();
    std::cout << session.key_averages().table("self_cpu_time_total", 20);
    // Reports of the last window, beside (not inside) the TensorBoard run directory.
    const std::string reports = logdir + "_reports";
    if (const ptprof::Trace* last = session.last_trace()) {
      try {
        ::mkdir(reports.c_str(), 0755);  // its parent holds the run directory
        last->export_stacks(reports + "/stacks.txt");
        last->export_stacks(reports + "/flamegraph.svg");
        last->export_memory_timeline(reports + "/memory.json");
        last->export_memory_timeline(reports + "/memory.html");
        std::cout << "\nFlame graph and memory timeline: " << reports << "/\n";
      } catch (const ptprof::Error& e) {
        std::cerr << e.what() << "\n";
        return 1;
      }
    }
  }
  if (!status.ok()) {
    std::cerr << status.message() << "\n";
    return 1;
  }
  std::cout << "\nTraces written to " << logdir << "\nOpen them with:  tensorboard --logdir "
            << logdir.substr(0, logdir.rfind('/')) << "\n";
  return 0;
}
