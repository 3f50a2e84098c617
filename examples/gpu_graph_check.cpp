// CUDA graphs under ptprof (scripts/gpu-check, issue 28 section 2): a training step of a small
// MLP (forward, backward, SGD) captured with at::cuda::CUDAGraph from C++ and replayed, all in
// one ptprof session (lean mode, the default), then the same replays with
// Options::cuda_graph_launches_only. Counts what the trace says of the replayed work: kernels
// carrying a graph node, those attributed to the op that captured them (their External id is
// not the replay's range and "captured by" is set), and the graph-launch events.
//
//   gpu_graph_check --out DIR [--replays N]
//
// Writes DIR/graph.pt.trace.json, DIR/graph_launches.pt.trace.json and DIR/graph.json.
// Exit status: 0 done (scripts/gpu_trace_check.py judges), 2 bad usage, 3 no CUDA device.
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/torch.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <unordered_set>

#include "ptprof/ptprof.h"

namespace {

struct Counts {
  std::size_t kernels = 0;           // every kernel in the trace
  std::size_t graph_kernels = 0;     // carrying a graph node
  std::size_t captured = 0;          // of those, with the capturing op's name
  std::size_t attributed = 0;        // of those, whose External id is not a replay range's
  std::size_t graph_launches = 0;    // one per launch (graph_launches_only)
  std::vector<std::string> warnings;
};

Counts count(const ptprof::Trace* t, const std::vector<std::string>& warnings) {
  Counts c;
  c.warnings = warnings;
  if (t == nullptr) return c;
  std::unordered_set<uint64_t> replay_ids;
  for (const ptprof::Event& e : t->events)
    if (e.kind == ptprof::EventKind::UserAnnotation && e.name == "replay") replay_ids.insert(e.external_id);
  for (const ptprof::Event& e : t->events) {
    if (e.kind != ptprof::EventKind::Kernel) continue;
    ++c.kernels;
    if (e.graph_node < 0) continue;
    const ptprof::GraphNodeInfo& g = t->graph_nodes.at(static_cast<std::size_t>(e.graph_node));
    if (g.node_id == 0) {
      ++c.graph_launches;
      continue;
    }
    ++c.graph_kernels;
    c.captured += !g.captured_by.empty();
    c.attributed += e.external_id != 0 && replay_ids.count(e.external_id) == 0;
  }
  return c;
}

std::string json_counts(const Counts& c) {
  std::string w = "[";
  for (std::size_t i = 0; i < c.warnings.size(); ++i) {
    std::string s;
    for (char ch : c.warnings[i]) {
      if (ch == '"' || ch == '\\') s += '\\';
      if (static_cast<unsigned char>(ch) >= 0x20) s += ch;
    }
    w += (i ? ", \"" : "\"") + s + "\"";
  }
  w += "]";
  return "{\"kernels\": " + std::to_string(c.kernels) +
         ", \"graph_kernels\": " + std::to_string(c.graph_kernels) +
         ", \"captured\": " + std::to_string(c.captured) +
         ", \"attributed\": " + std::to_string(c.attributed) +
         ", \"graph_launches\": " + std::to_string(c.graph_launches) + ", \"warnings\": " + w +
         "}";
}

}  // namespace

int main(int argc, char** argv) {
  std::string out;
  int replays = 5;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--out" && i + 1 < argc) {
      out = argv[++i];
    } else if (a == "--replays" && i + 1 < argc) {
      replays = std::atoi(argv[++i]);
    } else {
      out.clear();
      break;
    }
  }
  if (out.empty() || replays < 1) {
    std::fprintf(stderr, "usage: %s --out DIR [--replays N>=1]\n", argv[0]);
    return 2;
  }
  if (!torch::cuda::is_available()) {
    std::fprintf(stderr, "gpu_graph_check: no CUDA device\n");
    return 3;
  }
  const auto cuda = torch::TensorOptions().device(torch::kCUDA);
  torch::manual_seed(0);
  torch::nn::Sequential net(torch::nn::Linear(256, 256), torch::nn::ReLU(),
                            torch::nn::Linear(256, 10));
  net->to(torch::kCUDA);
  torch::optim::SGD opt(net->parameters(), 0.01);
  const torch::Tensor x = torch::randn({64, 256}, cuda);
  const torch::Tensor y = torch::randint(0, 10, {64}, cuda.dtype(torch::kLong));
  auto step = [&] {
    torch::Tensor loss;
    {
      PTPROF_RANGE("forward");
      loss = torch::nn::functional::cross_entropy(net->forward(x), y);
    }
    {
      PTPROF_RANGE("backward");
      loss.backward();
    }
    PTPROF_RANGE("optimizer_step");
    opt.step();
  };

  ptprof::Options o;
  o.activities = {ptprof::Activity::CPU, ptprof::Activity::CUDA};
  o.cuda_tracing = ptprof::CudaTracing::Lean;  // graph nodes get their capturing op in Lean
  std::string lean_json, launches_json;
  {
    ptprof::ProfileSession session(o);
    at::cuda::CUDAGraph graph;
    {
      // Capture needs a stream other than the default one; warm up on it first (cuBLAS
      // workspaces, autograd's streams), as torch.cuda.graph's recipe does.
      c10::cuda::CUDAStreamGuard guard(c10::cuda::getStreamFromPool());
      for (int i = 0; i < 3; ++i) {
        opt.zero_grad(true);
        step();
      }
      torch::cuda::synchronize();
      opt.zero_grad(true);
      PTPROF_RANGE("capture");
      graph.capture_begin();
      step();
      graph.capture_end();
    }
    torch::cuda::synchronize();
    for (int i = 0; i < replays; ++i) {
      PTPROF_RANGE("replay");
      graph.replay();
    }
    torch::cuda::synchronize();
    const ptprof::Status st = session.stop();
    if (const ptprof::Trace* t = session.last_trace()) t->save(out + "/graph.pt.trace.json");
    lean_json = json_counts(count(session.last_trace(), st.warnings));

    ptprof::Options g = o;
    g.cuda_graph_launches_only = true;
    ptprof::ProfileSession launches(g);
    for (int i = 0; i < replays; ++i) {
      PTPROF_RANGE("replay");
      graph.replay();
    }
    torch::cuda::synchronize();
    const ptprof::Status st2 = launches.stop();
    if (const ptprof::Trace* t = launches.last_trace())
      t->save(out + "/graph_launches.pt.trace.json");
    launches_json = json_counts(count(launches.last_trace(), st2.warnings));
  }
  const std::string json = "{\n  \"replays\": " + std::to_string(replays) +
                           ",\n  \"lean\": " + lean_json +
                           ",\n  \"graph_launches_only\": " + launches_json + "\n}\n";
  std::ofstream(out + "/graph.json") << json;
  std::printf("%s", json.c_str());
  return 0;
}
