// report_seam_traces OUTDIR: GPU traces built from hand-made CUPTI records (decoded and
// correlated by the real decoder and correlator, as on a GPU), for the report's agreement
// check (check_report_agreement.py). For each scenario it writes
//   OUTDIR/<name>/<name>.1.pt.trace.json   the trace
//   OUTDIR/<name>.report.json              ptprof's report of the in-memory trace
// The report of the in-memory trace has everything the recorder keeps (kernel launch details,
// copy kinds, device properties) whatever the trace reader reads back; the check also compares
// it with the report of the file read back.
#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <string>

#include "../gpu/cupti_test_util.h"
#include "trace/clock.h"
#include "gpu/cupti_correlator.h"
#include "gpu/cupti_decode.h"
#include "ptprof/report.h"
#include "ptprof/trace.h"

namespace ptprof::detail {
namespace {

constexpr int64_t kUnixOffset = 1790000000000000000;  // Unix ns - monotonic ns
constexpr int64_t kStart = 5000000000;                // window start, monotonic ns
constexpr int64_t kPid = 4242;
constexpr uint32_t kCuptiMain = 0xA1, kCuptiWorker = 0xB2;  // CUPTI thread ids
constexpr int64_t kTidMain = 4242, kTidWorker = 4250;       // their OS thread ids

// One scenario's trace: CPU ops on the host clock, CUPTI records on CUPTI's (the identity).
class Scenario {
 public:
  Scenario()
      : dec_(t_, {test::h100(0)}, [](CUpti_CallbackDomain d, uint32_t c) {
          return real_cupti_api().callback_name(d, c);
        }) {
    t_.pid = kPid;
    t_.process_name = "seam";
    t_.worker_name = "seam";
    t_.devices.push_back(test::h100(0).props);
    t_.threads.push_back(ThreadInfo{kTidMain, 1, "main"});
    t_.threads.push_back(ThreadInfo{kTidWorker, 2, "worker"});
    t_.metadata["cupti_version"] = "130001";
  }

  static uint64_t at(double us) {
    return static_cast<uint64_t>(kStart + static_cast<int64_t>(us * 1000));
  }

  uint64_t op(const char* name, double s, double e, EventKind kind = EventKind::CpuOp,
              int64_t tid = kTidMain) {
    Event ev;
    ev.kind = kind;
    ev.name = t_.intern(name);
    ev.start_ns = static_cast<int64_t>(at(s)) + kUnixOffset;
    ev.duration_ns = static_cast<int64_t>((e - s) * 1000);
    ev.pid = kPid;
    ev.tid = tid;
    ev.external_id = next_id_++;
    t_.events.push_back(ev);
    return ev.external_id;
  }
  uint64_t range(const char* name, double s, double e, int64_t tid = kTidMain) {
    return op(name, s, e, EventKind::UserAnnotation, tid);
  }
  // A runtime (or driver) call made inside op `op_id`; returns its correlation id.
  uint32_t call(uint64_t op_id, CUpti_CallbackId cbid, double s, double dur, bool driver = false,
                uint32_t thread = kCuptiMain) {
    const uint32_t c = corr_++;
    feed(test::ext_record(c, op_id));
    feed(test::api_record(driver, cbid, c, at(s), at(s + dur), thread, kPid));
    return c;
  }
  void kernel(const char* name, uint32_t c, double s, double e, uint32_t stream = 7,
              uint32_t grid = 528, uint32_t block = 256, uint32_t regs = 32) {
    CUpti_ActivityKernel10 k = test::kernel_record(name, c, at(s), at(e), 0, stream);
    k.gridX = grid;
    k.blockX = block;
    k.registersPerThread = regs;
    feed(k);
  }
  // An op that launches one kernel: the op [s, e], cudaLaunchKernel at s+1 for 4 us.
  void launch(const char* op_name, double s, double e, const char* k, double ks, double ke,
              uint32_t stream = 7, uint32_t grid = 528) {
    const uint64_t id = op(op_name, s, e);
    kernel(k, call(id, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, s + 1, 4), ks, ke, stream,
           grid);
  }
  void copy(uint64_t op_id, uint8_t kind, uint8_t src, uint8_t dst, double call_s, double s,
            double e, uint32_t stream = 7) {
    const uint32_t c = call(op_id, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, call_s, 5);
    feed(test::memcpy_record(kind, src, dst, 1 << 20, c, at(s), at(e), 0, stream));
  }
  template <typename R>
  void feed(const R& r) {
    test::feed(dec_, cor_, r);
  }

  Trace& finish(double end_us) {
    CorrelationWindow w;
    w.start_ns = kStart;
    w.end_ns = static_cast<int64_t>(at(end_us));
    w.unix_offset_ns = kUnixOffset;
    w.clock = GpuClock::identity();
    t_.window_start_ns = kStart + kUnixOffset;
    t_.window_end_ns = w.end_ns + kUnixOffset;
    cor_.finish(w, {{kCuptiMain, kTidMain}, {kCuptiWorker, kTidWorker}}, t_);
    t_.rebuild_tree();
    return t_;
  }

 private:
  Trace t_;
  ActivityDecoder dec_;
  Correlator cor_;
  uint64_t next_id_ = 1;
  uint32_t corr_ = 100000;  // CUPTI ids are large; HTA mistypes ids under 128 (int8)
};

// A training loop: a slow data loader, a pageable input copy, a forward pass with Tensor Core
// and plain kernels, a stretch of tiny kernels launched one by one, item() with a DtoH copy
// and a stream sync, a driver-API launch, an allocation, a copy on a side stream. The last
// step is cut short (fewer kernels), as when the window closes early.
Trace& training(Scenario& s) {
  const int steps = 5;
  for (int i = 0; i < steps; ++i) {
    const double b = 100 + i * 2000;
    const bool last = i == steps - 1;
    const std::string step = "ProfilerStep#" + std::to_string(i + 1);
    s.range(step.c_str(), b, b + 1900);
    s.range("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", b,
            b + 300 - 50 * (i % 2));
    s.op("aten::stack", b + 10, b + 250);
    const uint64_t to = s.op("aten::to", b + 300, b + 340);
    s.copy(to, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE,
           CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, b + 305, b + 320, b + 360);
    s.range("forward", b + 350, b + 900);
    s.launch("aten::conv2d", b + 360, b + 400, "ampere_s16816gemm_fp16_128x128_ldg8_nhwc", b + 400,
             b + 700);
    s.launch("aten::relu", b + 410, b + 430, "void at::native::relu_kernel<float>", b + 700,
             b + 720, 7, 2);  // 2 blocks on 132 SMs: low occupancy
    if (!last) {
      for (int k = 0; k < 8; ++k) {
        const double o = b + 730 + k * 20;
        s.launch("aten::add_", o, o + 15, "void at::native::vectorized_elementwise_kernel<4>",
                 o + 13, o + 16, 7, 4);
      }
    }
    s.op("aten::item", b + 900, b + 1000);
    const uint64_t dense = s.op("aten::_local_scalar_dense", b + 905, b + 995);
    s.copy(dense, CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
           CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE, b + 908, b + 915, b + 920);
    const uint32_t sync =
        s.call(dense, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, b + 913, 12);
    s.feed(test::sync_record(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, sync,
                             Scenario::at(b + 913), Scenario::at(b + 925), 7));
    const uint64_t zero = s.op("aten::zero_", b + 1000, b + 1050);
    const uint32_t ms = s.call(zero, CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020, b + 1010, 5);
    s.feed(test::memset_record(4096, ms, Scenario::at(b + 1020), Scenario::at(b + 1025)));
    const uint64_t mm = s.op("aten::mm", b + 1100, b + 1200);
    s.kernel("triton_poi_fused_mm_0",
             s.call(mm, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, b + 1110, 8, true), b + 1120,
             b + 1500);
    const uint64_t empty = s.op("aten::empty", b + 1510, b + 1600);
    s.call(empty, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, b + 1520, 60);
    const uint64_t side = s.op("aten::copy_", b + 1600, b + 1650);
    s.copy(side, CUPTI_ACTIVITY_MEMCPY_KIND_DTOD, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
           CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, b + 1610, b + 1620, b + 1680, 13);
    s.launch("aten::add", b + 1700, b + 1720, "void at::native::vectorized_elementwise_kernel<4>",
             b + 1725, b + 1760);
  }
  return s.finish(100 + steps * 2000);
}

// Two host threads launching on two streams at once (kernels overlap), a device-wide sync at
// each step's end, and one slow step.
Trace& two_streams(Scenario& s) {
  for (int i = 0; i < 4; ++i) {
    const double len = i == 2 ? 1600 : 1000;
    const double b = 100 + i * 1800;
    const std::string step = "ProfilerStep#" + std::to_string(i + 10);
    s.range(step.c_str(), b, b + len);
    s.launch("aten::mm", b + 10, b + 60,
             "sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64_wgmma", b + 70, b + 400);
    s.launch("aten::mm", b + 60, b + 90,
             "sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64_wgmma", b + 400, b + 500);
    const uint64_t w = s.op("aten::bmm", b + 20, b + 80, EventKind::CpuOp, kTidWorker);
    s.kernel(
        "cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4",
        s.call(w, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, b + 30, 5, false, kCuptiWorker),
        b + 100, b + 450, 20, 264);
    const uint64_t add = s.op("aten::add", b + 500, b + 520);
    s.kernel("void at::native::vectorized_elementwise_kernel<4>",
             s.call(add, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, b + 505, 5), b + 510,
             b + 540 + (len - 1000), 7, 1056);
    const uint64_t sync = s.op("aten::synchronize", b + 600 + (len - 1000), b + 700 + (len - 1000));
    const uint32_t c = s.call(sync, CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020,
                              b + 605 + (len - 1000), 20);
    s.feed(test::sync_record(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE, c,
                             Scenario::at(b + 605 + (len - 1000)),
                             Scenario::at(b + 625 + (len - 1000)),
                             CUPTI_SYNCHRONIZATION_INVALID_VALUE));
    s.launch("aten::relu", b + 800 + (len - 1000), b + 850 + (len - 1000),
             "void at::native::relu_kernel<float>", b + 860 + (len - 1000), b + 900 + (len - 1000));
  }
  return s.finish(100 + 4 * 1800);
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path);
}

}  // namespace
}  // namespace ptprof::detail

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: report_seam_traces OUTDIR\n";
    return 2;
  }
  using namespace ptprof::detail;
  const std::string out = argv[1];
  ::mkdir(out.c_str(), 0755);
  const std::pair<const char*, std::function<ptprof::Trace&(Scenario&)>> scenarios[] = {
      {"training", training}, {"two_streams", two_streams}};
  for (const auto& [name, build] : scenarios) {
    Scenario s;
    const ptprof::Trace& t = build(s);
    const std::string dir = out + "/" + name;
    ::mkdir(dir.c_str(), 0755);
    // In PyTorch's current schema, as chrome_trace_handler writes it (the agreement check
    // gives TensorBoard's plugin the trace without its GPU spans, which it misreads).
    t.save(dir + "/" + name + ".1.pt.trace.json");
    write_file(out + "/" + name + ".report.json", ptprof::Report(t).to_json());
    ptprof::ReportOptions with_last;
    with_last.hta_include_last_step = true;
    write_file(out + "/" + name + ".report_last.json", ptprof::Report(t, with_last).to_json());
    std::cout << dir << "\n";
  }
  return 0;
}
