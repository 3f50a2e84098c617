// ptprof/report.h: why is my step slow, and what do I change — a diagnosis computed from a Trace.
//
//   ptprof::Report report(trace);
//   std::cout << report.summary();          // a short note for the terminal
//   write(report.to_json());                 // the same, as JSON (keys in docs/report.md)
//
// Each number says which convention it follows: TensorBoard's PyTorch Profiler plugin (TB, its
// last source), Holistic Trace Analysis (HTA), or ptprof's own. What the trace cannot support
// is said so ("cannot be determined"), never replaced by a number that looks right.
// Times are int64 nanoseconds; only the outputs print microseconds or milliseconds.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ptprof {

class Trace;

// Every threshold of the report's passes and rules, by name: one member per line of
// ptprof/report_thresholds.def, which gives each its default, unit, source and meaning. Those
// from TB, HTA or torch are the peers' own values; change them to ask a different question,
// not to match a peer.
struct ReportThresholds {
#define PTPROF_REPORT_THRESHOLD(type, name, value, unit, source, description) type name = value;
#include "ptprof/report_thresholds.def"
#undef PTPROF_REPORT_THRESHOLD
};

struct ReportOptions {
  ReportThresholds thresholds;
  int32_t top_n = 10;  // rows of the operator and kernel tables
  // HTA's window: by default HTA drops the last ProfilerStep (load_traces'
  // include_last_profiler_step=False); set to true to match include_last_profiler_step=True.
  bool hta_include_last_step = false;
  // Buckets of each device's utilization series (Report::Device::utilization_series) over the
  // steps' window, for the HTML page's chart; 0: no series.
  int32_t utilization_buckets = 200;
};

// TB's step-time categories, in its priority order (a moment of the step belongs to the first
// category active then).
enum class StepCategory : uint8_t {
  Kernel,
  Memcpy,
  Memset,
  Communication,
  Runtime,
  DataLoader,
  CpuExec,
  Other,
};
inline constexpr int kStepCategories = 8;
const char* step_category_name(StepCategory c);  // "Kernel", ..., "CPU Exec", "Other"

// What the launching host thread was doing while the GPU sat idle inside a step.
enum class IdleCause : uint8_t {
  DataLoader,    // inside a DataLoader range ("enumerate(DataLoader)#...")
  Collective,    // inside a collective (nccl:, gloo:, c10d:: ops)
  DeviceToHost,  // blocked in item() / a device-to-host copy
  Sync,          // blocked in a synchronization (cudaStreamSynchronize, ...)
  Allocator,     // in cudaMalloc / cudaFree and kin
  OpOverhead,    // inside an operator, no blocking call: its host-side work and launches
  OutsideOps,    // in no operator: the program's own code between ops
  Unknown,       // no host thread could be tied to the gap
};
inline constexpr int kIdleCauses = 8;
const char* idle_cause_name(IdleCause c);  // "data_loader", "collective", "device_to_host", ...

class Report {
 public:
  explicit Report(const Trace& trace, const ReportOptions& options = {});

  // ---- the trace it was computed from (the HTML page's header) ----
  struct Source {
    std::string process_name;
    std::string worker_name;
    int64_t pid = 0;
    int64_t window_start_ns = 0, window_end_ns = 0;  // the profiling window, Unix epoch ns
    int64_t window_index = 0;
    int64_t events = 0;  // CPU and GPU events
  };
  Source source;

  // ---- trace quality: what the findings rest on ----
  struct QualityItem {
    std::string id;                    // stable key, e.g. "dropped_events", "no_gpu_data"
    std::string message;               // plain words
    std::vector<std::string> affects;  // which parts of the report it limits
  };
  std::vector<QualityItem> quality;
  // "Cannot be determined" statements: part of the report -> why.
  std::vector<std::pair<std::string, std::string>> undetermined;

  // ---- steps (TB's StepParser and OverallParser) ----
  struct Step {
    std::string name;  // N of ProfilerStep#N; "0" for the whole trace when it has no steps
    int64_t host_start_ns = 0, host_end_ns = 0;          // the ProfilerStep range
    int64_t start_ns = 0, end_ns = 0;                    // after extension to the step's GPU work
    std::array<int64_t, kStepCategories> category_ns{};  // sums exactly to end - start
    int64_t gpu_activities = 0;  // GPU activities launched by runtime calls inside the step
    bool outlier = false;
    int64_t total_ns() const { return end_ns - start_ns; }
  };
  bool has_steps = false;  // ProfilerStep#N ranges were found
  bool breakdown_determined = false;
  std::vector<Step> steps;                           // after TB's tail trimming
  std::vector<std::string> trimmed_steps;            // names of steps TB's tail trimming removed
  std::array<double, kStepCategories> average_ns{};  // mean over `steps`
  double average_step_ns = 0;
  struct Spread {
    double p50_ns = 0, p90_ns = 0, min_ns = 0, max_ns = 0;
  };
  std::array<Spread, kStepCategories> category_spread{};
  Spread step_spread;
  bool spread_determined = false;  // needs 3 steps or more

  // ---- GPU ----
  bool has_gpu_data = false;  // kernels, copies or memsets in the trace
  struct Device {
    int32_t id = 0;
    std::string name;                                // from the trace's device properties, if any
    int64_t window_start_ns = 0, window_end_ns = 0;  // TB's: first step start .. last step end
    int64_t kernel_busy_ns = 0;                      // union of kernels in the window
    int64_t idle_in_steps_ns = 0;         // ptprof: no kernel, copy or memset running, inside steps
    double utilization = 0;               // TB: kernel_busy / window
    std::optional<double> sm_efficiency;  // TB: est. SM efficiency, 0..1
    std::optional<double> achieved_occupancy;      // TB: est. achieved occupancy, %
    std::optional<double> tensor_core_share;       // kernel time in TB's Tensor Core names
    std::optional<double> tensor_core_share_sm90;  // the same, adding sm90+ names
    std::optional<int64_t> peak_allocated_bytes;   // profile_memory's peak "Total Allocated"
    std::optional<int64_t> total_memory_bytes;     // totalGlobalMem
    int64_t max_queue_length = 0;  // HTA's launch queue, largest on any of its streams
    int64_t full_queue_ns = 0;     // time some stream's queue was at launch_queue_full
    // Kernel busy share over time (TB's utilization, resolved in time): the window split into
    // buckets of utilization_bucket_ns from window_start_ns (the last one may be shorter), each
    // entry the union of kernels in its bucket / the bucket's length. Their mean weighted by
    // bucket length is `utilization`. Empty without a window or ReportOptions::
    // utilization_buckets.
    int64_t utilization_bucket_ns = 0;
    std::vector<double> utilization_series;
  };
  std::vector<Device> devices;
  std::optional<double> tensor_core_share;  // TB: kernel time in TB's TC names, all devices
  std::optional<double> tensor_core_eligible_share;  // TB: kernel time of TC-eligible ops

  // HTA's numbers in HTA's window (see ReportOptions::hta_include_last_step).
  struct StreamIdle {
    int32_t device = 0;
    int64_t stream = 0;
    int64_t host_wait_ns = 0;    // the launch came after the stream drained
    int64_t kernel_wait_ns = 0;  // a gap shorter than kernel_wait_ns
    int64_t other_ns = 0;        // any other gap (e.g. waiting on another stream)
    int64_t activities = 0;
  };
  std::vector<StreamIdle> stream_idle;
  struct Temporal {
    bool determined = false;
    int64_t span_ns = 0;  // first GPU event start .. last end
    int64_t idle_ns = 0;
    int64_t compute_ns = 0;      // union of compute-named events
    int64_t non_compute_ns = 0;  // the rest of the busy time (copies, memsets, syncs, nccl)
  };
  Temporal temporal;
  std::string hta_window;  // which events HTA's numbers cover, in words

  // ---- what the host did while the GPU was idle inside steps (ptprof's own) ----
  struct CauseTotal {
    IdleCause cause = IdleCause::Unknown;
    int64_t total_ns = 0;                              // over all steps
    int64_t gaps = 0;                                  // idle gaps with some of this cause
    std::vector<std::pair<std::string, int64_t>> top;  // range/op/call name -> ns
  };
  std::array<CauseTotal, kIdleCauses> idle_causes{};
  int64_t gpu_idle_in_steps_ns = 0;  // all devices together
  bool idle_causes_determined = false;

  // ---- computation / communication per step (TB's Distributed view; comm_overlap.cpp) ----
  struct StepOverlap {
    std::string step;              // Step::name
    int64_t computation_ns = 0;    // computing, not communicating
    int64_t overlap_ns = 0;        // both at once
    int64_t communication_ns = 0;  // communicating, not computing
    int64_t other_ns = 0;          // neither: the rest of the step
  };
  std::vector<StepOverlap> comm_overlap;  // one per step, with the breakdown
  // What computation is: "kernels" (kernels not of a collective), "host_ops" (host ops, TB's
  // CPU Exec role, where the trace has no kernel); "" without a breakdown.
  std::string comm_overlap_basis;

  // ---- tables ----
  struct OpRow {
    std::string name;
    int64_t calls = 0;
    int64_t self_cpu_ns = 0, cpu_total_ns = 0, self_device_ns = 0, device_total_ns = 0;
  };
  std::vector<OpRow> top_ops_by_self_cpu;
  std::vector<OpRow> top_ops_by_self_device;
  struct KernelRow {
    std::string name;
    int64_t calls = 0, total_ns = 0, min_ns = 0, max_ns = 0;
    std::optional<double> achieved_occupancy;  // duration-weighted, %
    std::optional<double> blocks_per_sm;       // duration-weighted
  };
  std::vector<KernelRow> top_kernels;
  // Every operator (as the tables: user ranges and steps left out), in key_averages' order, and
  // every kernel by total time: the tables above are their top_n; ReportDiff compares these.
  std::vector<OpRow> operators;
  std::vector<KernelRow> kernels;

  // ---- ptprof's own cost (the trace's "ptprof_cost", ptprof/profiler_cost.h) ----
  struct ProfilerOwnCost {
    double op_ns = 0;                  // per recorded op or range, calibrated in the process
    std::optional<double> launch_ns;   // per CUDA launch, where it was measured
    double ops_per_step = 0;           // ops and ranges recorded inside the steps, all threads
    double launches_per_step = 0;      // kernel, copy and memset calls inside the steps
    // ops x op_ns + launches x launch_ns, per step: a lower bound (op_ns is calibrated with
    // warm caches; bench_step measured a step's real cost 1.5-3x above it)
    int64_t ns_per_step = 0;
    double share_of_step = 0;          // of the average step
    int64_t unprofiled_step_ns = 0;    // the average step less ns_per_step: an upper bound
    int64_t close_ns = 0;              // closing the window, after its last step
  };
  // Absent for traces without "ptprof_cost" (another profiler's, or ptprof's before it).
  std::optional<ProfilerOwnCost> profiler_cost;

  // ---- findings, largest possible saving first ----
  struct Evidence {
    std::string what;          // the op, range, kernel or call
    double per_step = 0;       // how often per step
    int64_t ns_per_step = 0;   // its time per step
    double share_of_step = 0;  // ns_per_step / average step
    std::string note;
  };
  struct Finding {
    std::string id;      // stable key: "data_loading", "low_gpu_utilization", ...
    std::string source;  // "tensorboard" (the plugin's rule), "torch" (torch.profiler's
                         // pattern matcher) or "ptprof"
    std::string title;
    // The most this could save per step: an upper bound (if the cause cost nothing), not a
    // forecast. Findings overlap, so their savings do not add up. Absent: not a time saving.
    std::optional<int64_t> saving_ns_per_step;
    double saving_share = 0;  // of the average step
    std::vector<Evidence> evidence;
    std::string recommendation;
  };
  std::vector<Finding> findings;

  ReportOptions options;

  std::string summary() const;  // plain text for a terminal
  std::string to_json() const;  // keys documented in docs/report.md
  // A self-contained HTML page (no scripts, no network; inline SVG charts and CSS): the trace
  // quality, the step-time breakdown per step, GPU utilization over time, the idle causes, the
  // findings and the tables. Well-formed XML (XHTML syntax), so XML tools read it too.
  std::string to_html() const;
  // to_json() / to_html() written to `path` through a temporary file renamed into place, as
  // traces are (a ".gz" path is gzip'ed); throw ptprof::Error naming the path on failure.
  void save_json(const std::string& path) const;
  void save_html(const std::string& path) const;
};

}  // namespace ptprof
