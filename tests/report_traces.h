// Synthetic traces for the report's page and diff tests, built as the recorder and the CUPTI
// correlator leave them: CPU events with the process and OS thread, GPU activities with
// device/stream (also as pid/tid), launches linked by correlation, GPU activities carrying their
// op's External id. Torch-free: these tests link the core library only.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

#include "ptprof/trace.h"

namespace ptprof::test {

constexpr int64_t kBaseNs = 1700000000000000000;  // Unix ns of every synthetic trace's time 0

class TraceBuilder {
 public:
  Trace t;
  int64_t pid = 4242;
  int64_t tid = 11;

  TraceBuilder() {
    t.pid = pid;
    t.process_name = "train";
    t.window_start_ns = at(-1000);
    t.window_end_ns = at(1000000);
  }
  static int64_t at(double us) { return kBaseNs + std::llround(us * 1000); }
  static int64_t ns(double us) { return std::llround(us * 1000); }

  Event& add(EventKind kind, std::string_view name, double start_us, double end_us) {
    Event e;
    e.kind = kind;
    e.name = t.intern(name);
    e.start_ns = at(start_us);
    e.duration_ns = ns(end_us - start_us);
    e.pid = pid;
    e.tid = tid;
    t.events.push_back(e);
    return t.events.back();
  }
  uint64_t op(std::string_view name, double s, double e) {
    Event& ev = add(EventKind::CpuOp, name, s, e);
    ev.external_id = next_ext_++;
    return ev.external_id;
  }
  void step(int n, double s, double e) {
    add(EventKind::UserAnnotation, "ProfilerStep#" + std::to_string(n), s, e).external_id =
        next_ext_++;
  }
  // An op [s, e] that launches one kernel [ks, ke] from a runtime call at [s+1, s+2].
  void op_with_kernel(std::string_view op_name, double s, double e, std::string_view kernel,
                      double ks, double ke, int32_t device = 0) {
    const uint64_t ext = op(op_name, s, e);
    Event& call = add(EventKind::CudaRuntime, "cudaLaunchKernel", s + 1, s + 2);
    call.external_id = ext;
    call.correlation = next_corr_++;
    const uint64_t corr = call.correlation;
    Event& k = add(EventKind::Kernel, kernel, ks, ke);
    k.pid = device;
    k.tid = 7;
    k.device = device;
    k.stream = 7;
    k.correlation = corr;
    k.external_id = ext;
    k.kernel.grid[0] = 132;
    k.kernel.grid[1] = k.kernel.grid[2] = 1;
    k.kernel.block[0] = 256;
    k.kernel.blocks_per_sm = 1.0f;
    k.kernel.occupancy_pct = 50;
  }
  void device(int32_t id, std::string name) {
    DeviceProperties d;
    d.id = id;
    d.name = std::move(name);
    d.total_global_mem = 85045460992;
    d.compute_major = 9;
    d.num_sms = 132;
    t.devices.push_back(d);
  }
  Trace finish() {
    t.rebuild_tree();
    return t;
  }

 private:
  uint64_t next_ext_ = 1;
  uint64_t next_corr_ = 1;
};

// `steps` steps of `step_us` each, from time 0: aten::addmm (100 us; with a 200 us kernel when
// `gpu`), then `extra` with `extra_us` of host time (and a kernel as long, queued behind the
// first, when `gpu`), then aten::copy_ (40 us). The step must hold them: ~400 us + 2 x extra_us.
inline Trace training_trace(int steps, double step_us, bool gpu, std::string_view extra = "",
                            double extra_us = 0) {
  TraceBuilder b;
  if (gpu) b.device(0, "NVIDIA H100 80GB HBM3");
  for (int i = 0; i < steps; ++i) {
    const double s = i * step_us;
    b.step(i + 1, s, s + step_us);
    double cur = s + 10;
    double gpu_free = cur;  // the stream runs one kernel at a time
    if (gpu) {
      b.op_with_kernel("aten::addmm", cur, cur + 100, "gemm_kernel", cur + 20, cur + 220);
      gpu_free = cur + 220;
    } else {
      b.op("aten::addmm", cur, cur + 100);
    }
    cur += 110;
    if (!extra.empty() && extra_us > 0) {
      if (gpu) {
        const double ks = std::max(cur + 10, gpu_free);
        b.op_with_kernel(extra, cur, cur + extra_us, "extra_kernel", ks, ks + extra_us);
      } else {
        b.op(extra, cur, cur + extra_us);
      }
      cur += extra_us + 10;
    }
    b.op("aten::copy_", cur, cur + 40);
  }
  return b.finish();
}

}  // namespace ptprof::test
