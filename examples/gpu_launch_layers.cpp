// The CPU cost of one kernel launch, layer by layer (scripts/gpu-check, issue 28): the same loop
// of one-element in-place adds (one ATen op, one kernel each) with no profiler, then with each
// layer of CUPTI tracing added on top of the one before, then ptprof's two modes and libtorch's
// profiler. Each round of a layer is paired with a no-profiler round just before it; the figure
// is the median over rounds of (layer - baseline) in microseconds per launch.
//
//   layers (cumulative):  activity    kernel, copy and memset activity records
//                         callbacks   + Callback-API callbacks on the launch calls
//                         runtime_api + runtime API activity records
//                         driver_api  + driver API activity records
//                         external    + external correlation pushed and popped per launch
//   then, alone:          ptprof_lean, ptprof_classic (Options::cuda_tracing), kineto
//
//   gpu_launch_layers --out DIR [--launches N] [--rounds N]
//
// Writes DIR/launch_layers.json. libtorch's profiler runs last: its Kineto may keep CUPTI.
// Exit status: 0 done, 2 bad usage, 3 no CUDA device, 4 a CUPTI call failed.
#include <cupti.h>
#include <torch/csrc/autograd/profiler_kineto.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "ptprof/ptprof.h"

namespace {

double launch_us(torch::Tensor& x, int n, bool external = false) {
  torch::cuda::synchronize();
  const auto t0 = std::chrono::steady_clock::now();
  if (external) {
    for (int i = 0; i < n; ++i) {
      cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0,
                                             static_cast<uint64_t>(i) + 1);
      x.add_(1);
      uint64_t id = 0;
      cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &id);
    }
  } else {
    for (int i = 0; i < n; ++i) x.add_(1);
  }
  const auto t1 = std::chrono::steady_clock::now();
  torch::cuda::synchronize();
  return std::chrono::duration<double, std::micro>(t1 - t0).count() / n;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// ---- raw CUPTI, for the layers -------------------------------------------------------------
constexpr std::size_t kBufferBytes = 8 << 20;
uint64_t g_records = 0;    // activity records seen (read once per buffer, off the hot path)
uint64_t g_callbacks = 0;  // launch calls seen by the callback
int64_t g_callback_ns = 0;

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = kBufferBytes;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* r = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &r) == CUPTI_SUCCESS) ++g_records;
  std::free(buffer);
}

// What lean mode's callback does at least: a timestamp at entry, one at exit.
void CUPTIAPI on_launch(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void* data) {
  const auto* cb = static_cast<const CUpti_CallbackData*>(data);
  const int64_t now = std::chrono::steady_clock::now().time_since_epoch().count();
  if (cb->callbackSite == CUPTI_API_ENTER) {
    *cb->correlationData = static_cast<uint64_t>(now);
  } else {
    g_callback_ns += now - static_cast<int64_t>(*cb->correlationData);
    ++g_callbacks;
  }
}

bool check(CUptiResult r, const char* what) {
  if (r == CUPTI_SUCCESS) return true;
  const char* s = nullptr;
  cuptiGetResultString(r, &s);
  std::fprintf(stderr, "gpu_launch_layers: %s failed: %s\n", what, s ? s : "?");
  return false;
}

struct Layer {
  const char* name;
  std::vector<double> base, with;
};

// Turns the first `depth` layers on (1 = activity ... 5 = external), runs `launches`, and
// turns everything off again.
bool run_raw(int depth, torch::Tensor& x, int launches, Layer* layer) {
  layer->base.push_back(launch_us(x, launches));
  CUpti_SubscriberHandle sub = nullptr;
  bool ok = check(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed),
                  "cuptiActivityRegisterCallbacks");
  for (CUpti_ActivityKind k : {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                               CUPTI_ACTIVITY_KIND_MEMSET})
    ok = ok && check(cuptiActivityEnable(k), "cuptiActivityEnable(kernel/memcpy/memset)");
  if (ok && depth >= 2) {
    ok = check(cuptiSubscribe(&sub, on_launch, nullptr), "cuptiSubscribe");
    for (CUpti_CallbackId c : {CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
                               CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
                               CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020,
                               CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020})
      ok = ok && check(cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API, c),
                       "cuptiEnableCallback");
  }
  if (ok && depth >= 3) ok = check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME), "RUNTIME");
  if (ok && depth >= 4) ok = check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER), "DRIVER");
  if (ok && depth >= 5)
    ok = check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION),
               "EXTERNAL_CORRELATION");
  if (ok) {
    launch_us(x, 100, depth >= 5);
    layer->with.push_back(launch_us(x, launches, depth >= 5));
  }
  for (CUpti_ActivityKind k :
       {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
        CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER,
        CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION})
    cuptiActivityDisable(k);
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  if (sub != nullptr) cuptiUnsubscribe(sub);
  return ok;
}

void run_ptprof(ptprof::CudaTracing mode, torch::Tensor& x, int launches, Layer* layer,
                std::size_t* kernels) {
  layer->base.push_back(launch_us(x, launches));
  ptprof::Options o;
  o.activities = {ptprof::Activity::CPU, ptprof::Activity::CUDA};
  o.cuda_tracing = mode;
  ptprof::ProfileSession session(o);
  launch_us(x, 100);
  layer->with.push_back(launch_us(x, launches));
  session.stop();
  std::size_t k = 0;
  if (const ptprof::Trace* t = session.last_trace())
    for (const ptprof::Event& e : t->events) k += e.kind == ptprof::EventKind::Kernel;
  *kernels = std::min(*kernels, k);
}

}  // namespace

int main(int argc, char** argv) {
  std::string out;
  int launches = 20000;
  int rounds = 5;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--out" && i + 1 < argc) {
      out = argv[++i];
    } else if (a == "--launches" && i + 1 < argc) {
      launches = std::atoi(argv[++i]);
    } else if (a == "--rounds" && i + 1 < argc) {
      rounds = std::atoi(argv[++i]);
    } else {
      out.clear();
      break;
    }
  }
  if (out.empty() || launches < 1 || rounds < 1) {
    std::fprintf(stderr, "usage: %s --out DIR [--launches N>=1] [--rounds N>=1]\n", argv[0]);
    return 2;
  }
  if (!torch::cuda::is_available()) {
    std::fprintf(stderr, "gpu_launch_layers: no CUDA device\n");
    return 3;
  }
  torch::Tensor one = torch::zeros({1}, torch::TensorOptions().device(torch::kCUDA));
  launch_us(one, 1000);  // the add's kernel loaded, the allocator settled

  std::vector<Layer> layers = {{"activity"},    {"callbacks"}, {"runtime_api"},
                               {"driver_api"},  {"external"},  {"ptprof_lean"},
                               {"ptprof_classic"}, {"kineto"}};
  for (int depth = 1; depth <= 5; ++depth) {
    for (int r = 0; r < rounds; ++r) {
      if (!run_raw(depth, one, launches, &layers[depth - 1])) return 4;
    }
  }
  std::size_t lean_kernels = SIZE_MAX, classic_kernels = SIZE_MAX;
  for (int r = 0; r < rounds; ++r) {
    run_ptprof(ptprof::CudaTracing::Lean, one, launches, &layers[5], &lean_kernels);
    run_ptprof(ptprof::CudaTracing::Classic, one, launches, &layers[6], &classic_kernels);
  }
  using torch::profiler::impl::ActivityType;
  using torch::profiler::impl::ProfilerConfig;
  using torch::profiler::impl::ProfilerState;
  const ProfilerConfig config(ProfilerState::KINETO);
  const std::set<ActivityType> activities{ActivityType::CPU, ActivityType::CUDA};
  for (int r = 0; r < rounds; ++r) {
    layers[7].base.push_back(launch_us(one, launches));
    torch::autograd::profiler::prepareProfiler(config, activities);
    torch::autograd::profiler::enableProfiler(config, activities);
    launch_us(one, 100);
    layers[7].with.push_back(launch_us(one, launches));
    torch::autograd::profiler::disableProfiler();
  }

  std::string json = "{\n  \"launches_per_round\": " + std::to_string(launches) +
                     ",\n  \"rounds\": " + std::to_string(rounds) +
                     ",\n  \"callbacks_seen\": " + std::to_string(g_callbacks) +
                     ",\n  \"callback_enter_to_exit_ns_mean\": " +
                     std::to_string(g_callbacks ? g_callback_ns / static_cast<int64_t>(g_callbacks)
                                                : 0) +
                     ",\n  \"activity_records_seen\": " + std::to_string(g_records) +
                     ",\n  \"ptprof_lean_kernels_min\": " + std::to_string(lean_kernels) +
                     ",\n  \"ptprof_classic_kernels_min\": " + std::to_string(classic_kernels) +
                     ",\n  \"added_us_per_launch\": {";
  for (std::size_t i = 0; i < layers.size(); ++i) {
    std::vector<double> added;
    for (std::size_t r = 0; r < layers[i].with.size(); ++r)
      added.push_back(layers[i].with[r] - layers[i].base[r]);
    char buf[96];
    std::snprintf(buf, sizeof(buf), "%s\n    \"%s\": %.4f", i ? "," : "", layers[i].name,
                  median(added));
    json += buf;
  }
  char base[64];
  std::snprintf(base, sizeof(base), "\n  },\n  \"baseline_us_per_launch\": %.4f\n}\n",
                median(layers[0].base));
  json += base;
  std::ofstream(out + "/launch_layers.json") << json;
  std::printf("%s", json.c_str());
  return 0;
}
