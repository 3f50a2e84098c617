// bench_overhead: what ptprof adds per recorded op, against the floor every RecordFunction
// observer pays and against libtorch's own profiler, all measured in one run.
//
//   bench_overhead [--json] [--ops N] [--reps R] [--only NAME,NAME...]
//
// --only runs just the named configurations (and the baselines) and prints their table: for
// profiling one of them (perf record bench_overhead --only ptprof_shapes).
//
// Each configuration runs the same loop of tiny ops (in-place add on 1-element tensors);
// configurations are interleaved and repeated, and the median of the repetitions is kept, so
// machine noise hits all of them alike. "added" = configuration minus the no-profiler baseline.
#include <malloc.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/record_function.h>
#include <c10/util/ThreadLocalDebugInfo.h>
#include <torch/csrc/autograd/profiler_kineto.h>

#include "bench_common.h"
#include "trace/clock.h"
#include "trace/json_writer.h"
#include "recording/recorder.h"
#ifdef PTPROF_HAVE_CUPTI
#include "gpu/cupti_api.h"
#include "gpu/cupti_backend.h"
#endif
#include "ptprof/ptprof.h"

namespace {

using Clock = std::chrono::steady_clock;

using ptprof::bench::Config;
using ptprof::bench::empty_end;
using ptprof::bench::empty_start;
using ptprof::bench::EmptyReporter;
using ptprof::bench::median;
using ptprof::bench::thread_cpu_ns;

double run_ops(int64_t n, at::Tensor& a, const at::Tensor& b) {
  const int64_t t0 = thread_cpu_ns();
  for (int64_t i = 0; i < n; ++i) a.add_(b);
  return static_cast<double>(thread_cpu_ns() - t0) / static_cast<double>(n);
}

// Out-of-place: each op allocates and frees its result, which is what profile_memory sees.
double run_alloc_ops(int64_t n, const at::Tensor& a, const at::Tensor& b) {
  const int64_t t0 = thread_cpu_ns();
  for (int64_t i = 0; i < n; ++i) at::add(a, b);
  return static_cast<double>(thread_cpu_ns() - t0) / static_cast<double>(n);
}

#ifdef PTPROF_HAVE_CUPTI
// CUPTI behind the seam, answering like a healthy one-GPU machine without doing anything, so
// only ptprof's own correlation path (hooks, per-thread registration, the seam's virtual
// calls) is measured.
class StubCupti final : public ptprof::detail::CuptiApi {
 public:
  std::string driver_problem() override { return ""; }
  CUptiResult get_version(uint32_t* v) override {
    *v = CUPTI_API_VERSION;
    return CUPTI_SUCCESS;
  }
  std::string result_string(CUptiResult) override { return "stub"; }
  cudaError_t device_count(int* n) override {
    *n = 1;
    return cudaSuccess;
  }
  std::string cuda_error_string(cudaError_t) override { return "stub"; }
  cudaError_t device_info(int device, ptprof::detail::GpuDeviceInfo* info) override {
    info->props.id = device;
    info->props.name = "stub";
    info->props.num_sms = 132;
    info->props.warp_size = 32;
    info->props.max_threads_per_multiprocessor = 2048;
    info->props.max_threads_per_block = 1024;
    info->props.regs_per_multiprocessor = 65536;
    info->props.regs_per_block = 65536;
    info->props.shared_mem_per_multiprocessor = 233472;
    info->props.shared_mem_per_block = 49152;
    return cudaSuccess;
  }
  int runtime_version() override { return 13000; }
  int driver_version() override { return 13000; }
  cudaError_t synchronize_device(int) override { return cudaSuccess; }
  int64_t time_launches(int) override { return -1; }
  bool torch_profiler_active() override { return false; }
  CUptiResult probe_subscriber(std::string*) override { return CUPTI_SUCCESS; }
  CUptiResult subscribe(CUpti_CallbackFunc, CUpti_SubscriberHandle* handle,
                        std::string*) override {
    *handle = nullptr;
    return CUPTI_SUCCESS;
  }
  CUptiResult unsubscribe(CUpti_SubscriberHandle) override { return CUPTI_SUCCESS; }
  CUptiResult enable_callback(CUpti_SubscriberHandle, CUpti_CallbackDomain, CUpti_CallbackId,
                              bool) override {
    return CUPTI_SUCCESS;
  }
  CUptiResult graph_node_id(CUgraphNode, uint64_t* id) override {
    *id = 0;
    return CUPTI_SUCCESS;
  }
  CUptiResult graph_id(CUgraph, uint32_t* id) override {
    *id = 0;
    return CUPTI_SUCCESS;
  }
  CUptiResult register_timestamp_callback(CUpti_TimestampCallbackFunc) override {
    return CUPTI_SUCCESS;
  }
  CUptiResult get_timestamp(uint64_t* t) override {
    *t = static_cast<uint64_t>(ptprof::detail::now_ns());
    return CUPTI_SUCCESS;
  }
  CUptiResult register_callbacks(CUpti_BuffersCallbackRequestFunc,
                                 CUpti_BuffersCallbackCompleteFunc) override {
    return CUPTI_SUCCESS;
  }
  CUptiResult enable_kind(CUpti_ActivityKind) override { return CUPTI_SUCCESS; }
  CUptiResult disable_kind(CUpti_ActivityKind) override { return CUPTI_SUCCESS; }
  CUptiResult enable_api_record(CUpti_CallbackDomain, CUpti_CallbackId, bool) override {
    return CUPTI_SUCCESS;
  }
  CUptiResult enable_cuda_event_device_timestamps(bool) override { return CUPTI_SUCCESS; }
  CUptiResult flush_all(uint32_t) override { return CUPTI_SUCCESS; }
  CUptiResult get_next_record(uint8_t*, std::size_t, CUpti_Activity**) override {
    return CUPTI_ERROR_MAX_LIMIT_REACHED;
  }
  CUptiResult get_num_dropped(std::size_t* d) override {
    *d = 0;
    return CUPTI_SUCCESS;
  }
  const char* callback_name(CUpti_CallbackDomain, uint32_t) override { return nullptr; }
  CUptiResult push_external_id(uint64_t id) override {
    last_ = id;
    ++depth_;
    return CUPTI_SUCCESS;
  }
  CUptiResult pop_external_id() override {
    --depth_;
    return CUPTI_SUCCESS;
  }

 private:
  std::atomic<uint64_t> last_{0};
  std::atomic<int64_t> depth_{0};
};
#endif

// Heap bytes in use (arena + mmapped blocks): unlike RSS, not hidden by memory the allocator
// kept from earlier frees.
int64_t heap_bytes() {
  const struct mallinfo2 mi = mallinfo2();
  return static_cast<int64_t>(mi.uordblks + mi.hblkhd);
}

}  // namespace

int main(int argc, char** argv) {
  bool json = false;
  int64_t ops = 20000;
  int reps = 41;
  std::string only;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--json")) json = true;
    else if (!std::strcmp(argv[i], "--only") && i + 1 < argc)
      only = "," + std::string(argv[++i]) + ",";
    else if (!std::strcmp(argv[i], "--ops") && i + 1 < argc) ops = std::atoll(argv[++i]);
    else if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) reps = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: %s [--json] [--ops N] [--reps R] [--only NAME,...]\n", argv[0]);
      return 2;
    }
  }
  at::set_num_threads(1);
  at::Tensor a = at::ones({1});
  const at::Tensor b = at::ones({1});
  run_ops(ops, a, b);  // warm caches and lazy init

  namespace tap = torch::autograd::profiler;
  namespace tpi = torch::profiler::impl;
  std::unique_ptr<ptprof::ProfileSession> session;
  at::CallbackHandle handle = 0;
  auto floor_cfg = [&](bool inputs) {
    return Config{inputs ? "floor_shapes" : "floor",
                  [&, inputs] {
                    handle = at::addGlobalCallback(
                        at::RecordFunctionCallback(&empty_start, &empty_end).needsInputs(inputs));
                  },
                  [&] { at::removeCallback(handle); }};
  };
  auto ptprof_with = [&](const char* name, std::function<void(ptprof::Options&)> set) {
    return Config{name,
                  [&, set] {
                    ptprof::Options o;
                    set(o);
                    session = std::make_unique<ptprof::ProfileSession>(o);
                  },
                  [&] { session.reset(); }};
  };
  auto ptprof_cfg = [&](bool shapes) {
    return ptprof_with(shapes ? "ptprof_shapes" : "ptprof",
                       [shapes](ptprof::Options& o) { o.record_shapes = shapes; });
  };
  auto libtorch_cfg = [&](bool shapes, bool memory = false) {
    return Config{memory ? "libtorch_memory" : shapes ? "libtorch_shapes" : "libtorch",
                  [shapes, memory] {
                    const tpi::ProfilerConfig cfg(tpi::ProfilerState::KINETO, shapes, memory);
                    const std::set<tpi::ActivityType> act{tpi::ActivityType::CPU};
                    tap::prepareProfiler(cfg, act);
                    tap::enableProfiler(cfg, act);
                  },
                  [] { tap::disableProfiler(); }};
  };
  std::vector<Config> configs = {Config{"baseline", [] {}, [] {}},
                                 floor_cfg(false), floor_cfg(true),
                                 ptprof_cfg(false), libtorch_cfg(false)};
  bool shapes_supported = true;
  try {
    ptprof::Options o;
    o.record_shapes = true;
    ptprof::ProfileSession probe(o);
  } catch (const ptprof::Error&) {
    shapes_supported = false;
  }
  if (shapes_supported) configs.push_back(ptprof_cfg(true));
  configs.push_back(libtorch_cfg(true));

  configs.push_back(ptprof_with("ptprof_stack", [](ptprof::Options& o) { o.with_stack = true; }));
  configs.push_back(ptprof_with("ptprof_flops", [](ptprof::Options& o) { o.with_flops = true; }));
#ifdef PTPROF_HAVE_CUPTI
  // ptprof CPU plus the GPU correlation hooks of the CUPTI backend over the stub.
  StubCupti stub;
  auto gpu = ptprof::detail::make_cupti_backend(ptprof::detail::GpuOptions{}, stub);
  const ptprof::detail::Status gpu_enabled = gpu->enable();
  const bool gpu_ok = gpu_enabled.ok();
  if (!gpu_ok)
    std::fprintf(stderr, "stub CUPTI backend did not enable: %s\n", gpu_enabled.message().c_str());
  if (gpu_ok) {
    configs.push_back(Config{"ptprof_gpu_correlation",
                             [&] {
                               session = std::make_unique<ptprof::ProfileSession>();
                               ptprof::detail::Recorder::get().set_correlation_hooks(
                                   gpu->push_hook(), gpu->pop_hook());
                             },
                             [&] { session.reset(); }});
  }
#endif
  // Allocating ops, for profile_memory against libtorch's and against the memory floor (the
  // empty callback plus an empty reporter, over the empty callback alone).
  std::vector<Config> alloc_configs = {
      Config{"alloc_baseline", [] {}, [] {}},
      ptprof_with("alloc_ptprof", [](ptprof::Options&) {}),
      ptprof_with("alloc_ptprof_memory", [](ptprof::Options& o) { o.profile_memory = true; }),
      libtorch_cfg(false),
      libtorch_cfg(false, true),
      floor_cfg(false),
      Config{"alloc_floor_memory",
             [&, floor = floor_cfg(false)] {
               floor.setup();
               c10::ThreadLocalDebugInfo::_push(c10::DebugInfoKind::PROFILER_STATE,
                                                std::make_shared<EmptyReporter>());
             },
             [&, floor = floor_cfg(false)] {
               c10::ThreadLocalDebugInfo::_pop(c10::DebugInfoKind::PROFILER_STATE);
               floor.teardown();
             }}};
  alloc_configs[3].name = "alloc_libtorch";
  alloc_configs[4].name = "alloc_libtorch_memory";
  alloc_configs[5].name = "alloc_floor";

  // Each configuration's reference: an option is measured against the same profiler without
  // it, everything else against the plain baseline.
  const std::map<std::string, std::string> reference = {{"floor_shapes", "floor"},
                                                        {"ptprof_shapes", "ptprof"},
                                                        {"libtorch_shapes", "libtorch"},
                                                        {"ptprof_stack", "ptprof"},
                                                        {"ptprof_flops", "ptprof"},
                                                        {"ptprof_gpu_correlation", "ptprof"},
                                                        {"alloc_ptprof_memory", "alloc_ptprof"},
                                                        {"alloc_libtorch_memory", "alloc_libtorch"},
                                                        {"alloc_floor_memory", "alloc_floor"}};
  auto ref_of = [&](const std::string& name) {
    auto it = reference.find(name);
    return it == reference.end() ? std::string() : it->second;
  };
  if (!only.empty()) {
    auto keep = [&](std::vector<Config>& v) {
      std::set<std::string> kept;
      for (const Config& c : v) {
        if (c.name.find("baseline") != std::string::npos ||
            only.find("," + c.name + ",") != std::string::npos) {
          kept.insert(c.name);
          kept.insert(ref_of(c.name));
        }
      }
      v.erase(
          std::remove_if(v.begin(), v.end(), [&](const Config& c) { return !kept.count(c.name); }),
          v.end());
    };
    keep(configs);
    keep(alloc_configs);
  }
  // Each sample is paired with a sample of its reference taken just before it, and what it
  // adds is the median of those differences: on shared machines the op's own speed drifts by
  // tens of percent over a second, and pairs a few ms apart cancel most of that.
  std::map<std::string, std::vector<double>> samples, diffs;
  auto measure = [&](std::vector<Config>& group, const std::function<double()>& run) {
    auto sample = [&](const std::string& name) {
      for (Config& c : group) {
        if (c.name != name) continue;
        c.setup();
        const double x = run();
        c.teardown();
        return x;
      }
      return run();  // the baseline
    };
    for (Config& c : group) {
      if (c.name.find("baseline") != std::string::npos) {
        samples[c.name].push_back(run());
        continue;
      }
      const double before = sample(ref_of(c.name));
      const double x = sample(c.name);
      samples[c.name].push_back(x);
      diffs[c.name].push_back(x - before);
    }
  };
  for (int r = 0; r < reps; ++r) {
    measure(configs, [&] { return run_ops(ops, a, b); });
    measure(alloc_configs, [&] { return run_alloc_ops(ops / 2, a, b); });
  }
  std::map<std::string, double> ns;
  for (auto& [k, v] : samples) ns[k] = median(v);
  // Over its reference (-1 where not measured).
  auto over_ref = [&](const std::string& k) { return diffs.count(k) ? median(diffs[k]) : -1.0; };
  std::function<double(const std::string&)> added = [&](const std::string& k) {
    if (k.find("baseline") != std::string::npos) return 0.0;
    if (!diffs.count(k)) return -1.0;
    const std::string ref = ref_of(k);
    return ref.empty() ? over_ref(k) : added(ref) + over_ref(k);
  };
  // What each option adds on top of ptprof with no option, and libtorch's equivalent on top of
  // libtorch's plain CPU profiling.
  const double opt_shapes = over_ref("ptprof_shapes");
  const double opt_stack = over_ref("ptprof_stack");
  const double opt_flops = over_ref("ptprof_flops");
  const double opt_memory = over_ref("alloc_ptprof_memory");
  const double lt_shapes = over_ref("libtorch_shapes");
  const double lt_memory = over_ref("alloc_libtorch_memory");
  const double floor_memory = over_ref("alloc_floor_memory");
  const double gpu_corr = over_ref("ptprof_gpu_correlation");

  auto print_table = [&] {
    std::printf(
        "ns per op (median of %d reps of %lld ops: in-place add on 1-element tensors, thread CPU "
        "time); added: over the baseline, through the median of each sample's difference from "
        "its reference run just before it\n",
        reps, static_cast<long long>(ops));
    std::printf("%-24s %10s %10s   %s\n", "configuration", "ns/op", "added", "over reference");
    for (const auto* group : {&configs, &alloc_configs}) {
      for (const Config& c : *group) {
        std::printf("%-24s %10.1f %10.1f", c.name.c_str(), ns[c.name], added(c.name));
        const std::string ref = ref_of(c.name);
        if (!ref.empty()) std::printf("   %8.1f over %s", over_ref(c.name), ref.c_str());
        std::printf("\n");
      }
    }
  };
  if (!only.empty()) {
    print_table();
    return 0;
  }

  // Memory per recorded op: heap growth while one session records 2M ops.
  int64_t mem_ops = 2000000;
  double bytes_per_op;
  {
    ptprof::Options o;
    o.max_event_memory_bytes = std::size_t{4} << 30;
    ptprof::ProfileSession s(o);
    // A fresh thread, so no chunks kept from the runs above are reused.
    std::thread([&] {
      at::Tensor x = at::ones({1});
      run_ops(1000, x, b);  // the thread's state, first chunk and name cache
      const int64_t before = heap_bytes();
      run_ops(mem_ops, x, b);
      bytes_per_op = static_cast<double>(heap_bytes() - before) / static_cast<double>(mem_ops);
    }).join();
  }

  // Trace writing: a synthetic 1M-event trace saved to a file.
  double write_events_per_s;
  {
    ptprof::Trace t;
    t.pid = 1;
    t.process_name = "bench";
    const char* names[] = {"aten::add_", "aten::addmm", "aten::empty", "aten::copy_",
                           "autograd::engine::evaluate_function: AddmmBackward0"};
    const int64_t n = 1000000;
    t.events.reserve(n);
    for (int64_t i = 0; i < n; ++i) {
      ptprof::Event e;
      e.name = t.intern(names[i % 5]);
      e.start_ns = 1790000000000000000 + i * 1000;
      e.duration_ns = 800 + i % 100;
      e.pid = 1;
      e.tid = 1 + i % 4;
      e.external_id = i + 1;
      e.record_function_id = i + 1;
      e.sequence_nr = i % 3 ? -1 : i;
      t.events.push_back(e);
    }
    t.window_start_ns = t.events.front().start_ns;
    t.window_end_ns = t.events.back().start_ns + 1000;
    const std::string path = "/tmp/ptprof_bench_" + std::to_string(::getpid()) + ".pt.trace.json";
    const auto t0 = Clock::now();
    t.save(path);
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    std::remove(path.c_str());
    write_events_per_s = static_cast<double>(n) / s;
  }

  // step() at the end of a window of 1M events, with the background writer (default) and
  // without, into a throwaway directory.
  auto step_cost = [&](bool background) {
    char tmpl[] = "/tmp/ptprof_bench_XXXXXX";
    const std::string dir = ::mkdtemp(tmpl);
    ptprof::Options o;
    o.schedule = ptprof::Schedule{0, 0, 1, 1};
    o.write_in_background = background;
    o.on_trace_ready = {ptprof::tensorboard_trace_handler(dir, "bench")};
    double ms;
    {
      ptprof::ProfileSession s(o);
      run_ops(1000000, a, b);
      const auto t0 = Clock::now();
      s.step();  // closes the window: collect, build, hand over (or write)
      ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    }
    std::system(("rm -rf '" + dir + "'").c_str());
    return ms;
  };
  const double step_ms_background = step_cost(true);
  const double step_ms_inline = step_cost(false);

  // gzip on a training-like trace (an MLP's forward/backward with shapes and stacks).
  double gzip_ratio = 0;
  {
    auto w1 = at::randn({64, 128}).requires_grad_(true);
    auto w2 = at::randn({10, 64}).requires_grad_(true);
    ptprof::Options o;
    o.record_shapes = true;
    o.with_stack = true;
    ptprof::ProfileSession s(o);
    for (int i = 0; i < 20; ++i) {
      auto x = at::randn({32, 128});
      auto loss = at::relu(x.matmul(w1.t())).matmul(w2.t()).sum();
      loss.backward();
    }
    s.stop();
    const std::string base = "/tmp/ptprof_bench_gz_" + std::to_string(::getpid());
    s.last_trace()->save(base + ".pt.trace.json");
    s.last_trace()->save(base + ".pt.trace.json.gz");
    struct stat plain{}, gz{};
    ::stat((base + ".pt.trace.json").c_str(), &plain);
    ::stat((base + ".pt.trace.json.gz").c_str(), &gz);
    if (gz.st_size > 0) gzip_ratio = static_cast<double>(plain.st_size) / gz.st_size;
    std::remove((base + ".pt.trace.json").c_str());
    std::remove((base + ".pt.trace.json.gz").c_str());
  }

  if (json) {
    ptprof::detail::JsonWriter w;
    w.begin_object();
    auto group = [&](const char* key, const char* floor, const char* ours, const char* theirs) {
      w.key(key).begin_object();
      w.key("baseline_ns").value(ns["baseline"]);
      w.key("floor_added_ns").value(added(floor));
      w.key("ptprof_added_ns").value(added(ours));
      w.key("libtorch_added_ns").value(added(theirs));
      w.end_object();
    };
    group("cpu_op", "floor", "ptprof", "libtorch");
    group("cpu_op_shapes", "floor_shapes", "ptprof_shapes", "libtorch_shapes");
    w.key("options_added_ns").begin_object();
    w.key("record_shapes").value(opt_shapes);
    w.key("profile_memory").value(opt_memory);
    w.key("with_stack").value(opt_stack);
    w.key("with_flops").value(opt_flops);
    w.end_object();
    w.key("libtorch_options_added_ns").begin_object();
    w.key("record_shapes").value(lt_shapes);
    w.key("profile_memory").value(lt_memory);
    w.end_object();
    w.key("memory_floor_added_ns").value(floor_memory);
    w.key("gpu_correlation_added_ns_per_op").value(gpu_corr);
    w.key("step_ms_1m_event_window").begin_object();
    w.key("background_writer").value(step_ms_background);
    w.key("inline_writer").value(step_ms_inline);
    w.end_object();
    w.key("gzip_ratio").value(gzip_ratio);
    w.key("trace_write_events_per_s").value(write_events_per_s);
    w.key("bytes_per_op").value(bytes_per_op);
    w.key("ops_per_sample").value(ops);
    w.key("reps").value(static_cast<int64_t>(reps));
    w.end_object();
    std::printf("%s\n", w.buffer().c_str());
    return 0;
  }
  print_table();
  std::printf("\noption costs on top of plain profiling (ns/op): ptprof | libtorch | target\n");
  std::printf("  record_shapes  %8.1f | %8.1f | <= half of libtorch's\n", opt_shapes, lt_shapes);
  std::printf("  profile_memory %8.1f | %8.1f | <= half of libtorch's\n", opt_memory, lt_memory);
  std::printf(
      "  (profile_memory floor, c10's own bookkeeping under any reporter: %.1f; ptprof above "
      "it %.1f, libtorch above it %.1f)\n",
      floor_memory, opt_memory - floor_memory, lt_memory - floor_memory);
  std::printf("  with_stack     %8.1f |        - | <= 2000\n", opt_stack);
  std::printf("  with_flops     %8.1f |        - |\n", opt_flops);
  std::printf("GPU correlation path (CUPTI stubbed at the seam): %.1f ns per op\n", gpu_corr);
  std::printf("step() closing a 1M-event window: %.1f ms (background writer), %.1f ms (inline)\n",
              step_ms_background, step_ms_inline);
  std::printf("gzip ratio on a training trace: %.1fx\n", gzip_ratio);
  std::printf("\nptprof above floor: %.1f ns (target <= 100); ptprof / libtorch: %.2f (target <= 0.25)\n",
              added("ptprof") - added("floor"), added("ptprof") / added("libtorch"));
  std::printf("trace write: %.2fM events/s (target >= 2M)\n", write_events_per_s / 1e6);
  std::printf("memory: %.1f bytes per recorded op (target <= 64)\n", bytes_per_op);
  return 0;
}
