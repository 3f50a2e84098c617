// bench_overhead: what ptprof adds per recorded op, against the floor every RecordFunction
// observer pays and against libtorch's own profiler, all measured in one run.
//
//   bench_overhead [--json] [--ops N] [--reps R]
//
// Each configuration runs the same loop of tiny ops (in-place add on 1-element tensors);
// configurations are interleaved and repeated, and the median of the repetitions is kept, so
// machine noise hits all of them alike. "added" = configuration minus the no-profiler baseline.
#include <malloc.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/record_function.h>
#include <torch/csrc/autograd/profiler_kineto.h>

#include "json_writer.h"
#include "ptprof/ptprof.h"

namespace {

using Clock = std::chrono::steady_clock;

double run_ops(int64_t n, at::Tensor& a, const at::Tensor& b) {
  const auto t0 = Clock::now();
  for (int64_t i = 0; i < n; ++i) a.add_(b);
  const auto t1 = Clock::now();
  return std::chrono::duration<double, std::nano>(t1 - t0).count() / static_cast<double>(n);
}

std::unique_ptr<at::ObserverContext> empty_start(const at::RecordFunction&) { return nullptr; }
void empty_end(const at::RecordFunction&, at::ObserverContext*) {}

// A configuration: set up an observer, run the loop, tear it down.
struct Config {
  std::string name;
  std::function<void()> setup;
  std::function<void()> teardown;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Heap bytes in use (arena + mmapped blocks): unlike RSS, not hidden by memory the allocator
// kept from earlier frees.
int64_t heap_bytes() {
  const struct mallinfo2 mi = mallinfo2();
  return static_cast<int64_t>(mi.uordblks + mi.hblkhd);
}

}  // namespace

int main(int argc, char** argv) {
  bool json = false;
  int64_t ops = 200000;
  int reps = 7;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--json")) json = true;
    else if (!std::strcmp(argv[i], "--ops") && i + 1 < argc) ops = std::atoll(argv[++i]);
    else if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) reps = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: %s [--json] [--ops N] [--reps R]\n", argv[0]);
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
  auto ptprof_cfg = [&](bool shapes) {
    return Config{shapes ? "ptprof_shapes" : "ptprof",
                  [&, shapes] {
                    ptprof::Options o;
                    o.record_shapes = shapes;
                    session = std::make_unique<ptprof::ProfileSession>(o);
                  },
                  [&] { session.reset(); }};
  };
  auto libtorch_cfg = [&](bool shapes) {
    return Config{shapes ? "libtorch_shapes" : "libtorch",
                  [shapes] {
                    const tpi::ProfilerConfig cfg(tpi::ProfilerState::KINETO, shapes);
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

  std::map<std::string, std::vector<double>> samples;
  for (int r = 0; r < reps; ++r) {
    for (Config& c : configs) {
      c.setup();
      samples[c.name].push_back(run_ops(ops, a, b));
      c.teardown();
    }
  }
  std::map<std::string, double> ns;
  for (auto& [k, v] : samples) ns[k] = median(v);
  auto added = [&](const std::string& k) { return ns.count(k) ? ns[k] - ns["baseline"] : -1.0; };

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
    w.key("trace_write_events_per_s").value(write_events_per_s);
    w.key("bytes_per_op").value(bytes_per_op);
    w.key("ops_per_sample").value(ops);
    w.key("reps").value(static_cast<int64_t>(reps));
    w.end_object();
    std::printf("%s\n", w.buffer().c_str());
    return 0;
  }
  std::printf("ns per op (median of %d reps of %lld ops: in-place add on 1-element tensors)\n",
              reps, static_cast<long long>(ops));
  std::printf("%-18s %10s %10s\n", "configuration", "ns/op", "added");
  for (const Config& c : configs)
    std::printf("%-18s %10.1f %10.1f\n", c.name.c_str(), ns[c.name], added(c.name));
  std::printf("\nptprof above floor: %.1f ns (target <= 100); ptprof / libtorch: %.2f (target <= 0.25)\n",
              added("ptprof") - added("floor"), added("ptprof") / added("libtorch"));
  std::printf("trace write: %.2fM events/s (target >= 2M)\n", write_events_per_s / 1e6);
  std::printf("memory: %.1f bytes per recorded op (target <= 64)\n", bytes_per_op);
  return 0;
}
