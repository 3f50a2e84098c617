// The one builder of synthetic traces for tests, torch-free: traces built as the recorder and
// the CUPTI correlator leave them: CPU events with the process and OS thread, GPU activities
// with device/stream (also as pid/tid), launches linked by correlation, GPU activities carrying
// their op's External id. Times are given in microseconds from kBaseNs.
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
  uint64_t next_ext = 1;   // the next op's External id
  uint64_t next_corr = 1;  // the next runtime call's correlation

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
  // An op or a user range; returns its External id.
  uint64_t op(std::string_view name, double s, double e) {
    Event& ev = add(EventKind::CpuOp, name, s, e);
    ev.external_id = next_ext++;
    return ev.external_id;
  }
  uint64_t range(std::string_view name, double s, double e) {
    Event& ev = add(EventKind::UserAnnotation, name, s, e);
    ev.external_id = next_ext++;
    return ev.external_id;
  }
  void step(int n, double s, double e) { range("ProfilerStep#" + std::to_string(n), s, e); }
  // A runtime call of op `ext`; returns its correlation.
  uint64_t call(std::string_view name, uint64_t ext, double s, double e) {
    Event& ev = add(EventKind::CudaRuntime, name, s, e);
    ev.external_id = ext;
    ev.correlation = next_corr++;
    return ev.correlation;
  }
  // A GPU activity on (device, stream); kernels get a grid of one wave on an H100.
  Event& gpu(EventKind kind, std::string_view name, double s, double e, uint64_t corr, uint64_t ext,
             int64_t stream = 7, int32_t device = 0) {
    Event& ev = add(kind, name, s, e);
    ev.pid = device;
    ev.tid = stream;
    ev.device = device;
    ev.stream = stream;
    ev.correlation = corr;
    ev.external_id = ext;
    if (kind == EventKind::Kernel) {
      ev.kernel.grid[0] = 132;
      ev.kernel.grid[1] = ev.kernel.grid[2] = 1;
      ev.kernel.block[0] = 256;
      ev.kernel.blocks_per_sm = 1.0f;
      ev.kernel.occupancy_pct = 50;
    }
    return ev;
  }
  Event& kernel(std::string_view name, double s, double e, uint64_t corr, uint64_t ext,
                int64_t stream = 7) {
    return gpu(EventKind::Kernel, name, s, e, corr, ext, stream);
  }
  // An op [s, e] that launches one kernel [ks, ke] from a runtime call at [s+1, s+2].
  Event& op_with_kernel(std::string_view op_name, double s, double e, std::string_view k, double ks,
                        double ke, int64_t stream = 7, int32_t device = 0) {
    const uint64_t ext = op(op_name, s, e);
    const uint64_t c = call("cudaLaunchKernel", ext, s + 1, s + 2);
    return gpu(EventKind::Kernel, k, ks, ke, c, ext, stream, device);
  }
  // A copy of 1 MiB; copy_kind 1 HtoD, 2 DtoH, else DtoD; src/dst 0 Unknown, 1 Pageable,
  // 2 Pinned, 3 Device.
  Event& copy(uint8_t copy_kind, uint8_t src, uint8_t dst, double s, double e, uint64_t corr,
              uint64_t ext) {
    static const char* kKinds[] = {"Unknown", "Pageable", "Pinned", "Device"};
    const char* dir = copy_kind == 1 ? "HtoD" : copy_kind == 2 ? "DtoH" : "DtoD";
    const std::string name =
        std::string("Memcpy ") + dir + " (" + kKinds[src] + " -> " + kKinds[dst] + ")";
    Event& ev = gpu(EventKind::Memcpy, name, s, e, corr, ext);
    ev.transfer.copy_kind = copy_kind;
    ev.transfer.src_kind = src;
    ev.transfer.dst_kind = dst;
    ev.transfer.bytes = 1 << 20;
    return ev;
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
  void h100() { device(0, "NVIDIA H100 80GB HBM3"); }
  // The nesting and memory attribution a trace has when the recorder or the reader made it.
  Trace& done() {
    t.rebuild_tree();
    t.attribute_memory();
    return t;
  }
  Trace finish() { return done(); }
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
