// What the torch rules' tests add to the test trace builder (tests/support/trace_builder.h):
// operators with record_shapes inputs and native stacks, the Python tracer's calls, and the GPU
// work an operator launched (a kernel or a copy, with its runtime call).
#pragma once

#include <gtest/gtest.h>

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ptprof/report.h"
#include "trace_builder.h"

namespace ptprof::test {

// One input as record_shapes writes it: a tensor's dtype and sizes, or a non-tensor.
struct In {
  std::string dtype;  // "float", "c10::Half", ... ; "" for None, "Scalar" for a scalar
  std::vector<int64_t> sizes;
};

class TorchTraceBuilder {
 public:
  TraceBuilder b;

  TorchTraceBuilder() { b.device(0, "NVIDIA H100 80GB HBM3"); }

  // A CPU operator [s, e] us with an External id of its own; its index in events.
  std::size_t op(std::string_view name, double s, double e, std::initializer_list<In> inputs = {}) {
    Event& ev = b.add(EventKind::CpuOp, name, s, e);
    ev.external_id = b.next_ext++;
    if (inputs.size() > 0) {
      std::vector<OpInput> list;
      for (const In& in : inputs) {
        OpInput i;
        if (in.dtype == "Scalar" || in.dtype == "ScalarList") {
          i.kind = in.dtype == "Scalar" ? OpInput::Kind::Scalar : OpInput::Kind::ScalarList;
          i.dtype = in.dtype;
        } else if (!in.dtype.empty()) {
          i.kind = OpInput::Kind::Tensor;
          i.dtype = in.dtype;
          i.sizes = in.sizes;
        }
        list.push_back(i);
      }
      ev.inputs = static_cast<int32_t>(b.t.op_inputs.size());
      b.t.op_inputs.push_back(list);
    }
    return b.t.events.size() - 1;
  }
  // A user range, as record_function writes one.
  std::size_t range(std::string_view name, double s, double e) {
    b.range(name, s, e);
    return b.t.events.size() - 1;
  }
  // Native frames (outermost first) on the event.
  void stack(std::size_t event, std::vector<std::string> frames) {
    b.t.events[event].stack = static_cast<int32_t>(b.t.stacks.size());
    b.t.stacks.push_back(std::move(frames));
  }
  // One of the Python tracer's calls on the builder's thread.
  void py(std::string_view name, double s, double e) {
    PythonFunction p;
    p.name = b.t.intern(name);
    p.start_ns = TraceBuilder::at(s);
    p.duration_ns = TraceBuilder::ns(e - s);
    p.pid = b.pid;
    p.tid = b.tid;
    b.t.python_functions.push_back(p);
  }
  // GPU work [ks, ke] on device 0 launched by `event`'s op from a runtime call at its start.
  void launch(std::size_t event, EventKind kind, std::string_view name, double ks, double ke) {
    const uint64_t ext = b.t.events[event].external_id;
    const double s = static_cast<double>(b.t.events[event].start_ns - kBaseNs) / 1000;
    const uint64_t corr = b.call(kind == EventKind::Kernel ? "cudaLaunchKernel" : "cudaMemcpyAsync",
                                 ext, s + 0.1, s + 0.2);
    b.gpu(kind, name, ks, ke, corr, ext);
  }
  Trace finish() { return b.finish(); }

 private:
  uint64_t next_ext_ = 1000000;  // apart from TraceBuilder's own
  uint64_t next_corr_ = 1000000;
};

// The finding `id` of the report of `t`, or none.
inline std::optional<Report::Finding> finding(const Trace& t, const std::string& id,
                                              const ReportOptions& o = {}) {
  const Report r(t, o);
  for (const auto& f : r.findings)
    if (f.id == id) return f;
  return std::nullopt;
}

inline bool undetermined(const Report& r, const std::string& what) {
  for (const auto& [w, why] : r.undetermined)
    if (w == what) return true;
  return false;
}

}  // namespace ptprof::test
