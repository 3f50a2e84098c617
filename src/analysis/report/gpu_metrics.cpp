// GPU metrics per device, as TensorBoard's plugin computes them (profiler/gpu_metrics_parser.py,
// tensor_cores_parser.py) over the steps' window: utilization, est. SM efficiency, est.
// achieved occupancy, Tensor Core shares, the memory peak; the utilization series of the page;
// HTA's launch queue (trace_counters.py); TB's Tensor-Core-eligible share.
#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analysis/names.h"
#include "analysis/report/analysis.h"

namespace ptprof::detail {

namespace {

// HTA's launch queue per stream: +1 at each launch call with GPU work, -1 when that work
// starts (trace_counters.py). A host blocked on a full queue is waiting for the GPU.
void queue_lengths(Analysis& a) {
  const Trace& t = a.t;
  const TraceIndex& index = a.index;
  const int64_t full_at = a.th.launch_queue_full;
  struct Change {
    int64_t time;
    int delta;
  };
  std::map<std::pair<int32_t, int64_t>, std::vector<Change>> by_stream;
  index.activities_of.for_each([&](uint64_t corr, const ActivitiesByCorrelation::Events& acts) {
    auto l = index.launch_of.find(corr);
    if (l == index.launch_of.end() || !is_queue_launch(t.events[l->second].name)) return;
    for (int64_t act : acts) {
      const Event& e = t.events[act];
      auto& v = by_stream[{device_of(e), stream_of(e)}];
      v.push_back({t.events[l->second].start_ns, +1});
      v.push_back({e.start_ns, -1});
    }
  });
  for (auto& [key, v] : by_stream) {
    std::sort(v.begin(), v.end(), [](const Change& x, const Change& y) {
      return x.time != y.time ? x.time < y.time : x.delta < y.delta;
    });
    int64_t q = 0, max_q = 0, full = 0, since = 0;
    for (const Change& c : v) {
      const bool was_full = q >= full_at;
      q += c.delta;
      max_q = std::max(max_q, q);
      if (!was_full && q >= full_at) since = c.time;
      if (was_full && q < full_at) full += c.time - since;
    }
    for (auto& dev : a.r.devices) {
      if (dev.id != key.first) continue;
      dev.max_queue_length = std::max(dev.max_queue_length, max_q);
      dev.full_queue_ns += full;
    }
  }
}

// TB's Tensor-Core-eligible share: kernel time launched by the bottom-most eligible ops over
// kernel time launched by all ops (tensor_cores_parser.py), on the ops' nesting per thread.
void tensor_core_eligibility(Analysis& a) {
  const Trace& t = a.t;
  TraceIndex& index = a.index;
  double& tc_ops_ns = a.facts.tc_ops_ns;
  double& tc_eligible_ns = a.facts.tc_eligible_ns;
  struct Own {
    int64_t kernel_ns = 0;
    int64_t tensor_core_ns = 0;
  };
  std::unordered_map<uint64_t, Own> own_by_op;  // External id -> the op's own kernels
  for (int64_t i : index.activities) {
    const Event& k = t.events[i];
    if (k.kind != EventKind::Kernel) continue;
    const int64_t l = index.launch(k);
    // TB links kernels to runtime calls only (it does not read cuda_driver).
    if (l < 0 || t.events[l].kind != EventKind::CudaRuntime) continue;
    const uint64_t ext = t.events[l].external_id;
    if (ext == 0) continue;
    own_by_op[ext].kernel_ns += k.duration_ns;
    if (index.tensor_core_bits(k.name) & 1) own_by_op[ext].tensor_core_ns += k.duration_ns;
  }
  if (own_by_op.empty()) return;
  auto own = [&](const Event& e) -> Own {
    if (e.external_id == 0) return {};
    auto it = own_by_op.find(e.external_id);
    return it == own_by_op.end() ? Own{} : it->second;
  };
  struct Node {
    int64_t event;
    bool eligible;
    bool eligible_below;
  };
  for (auto& [tid, idx] : index.host_events) {
    std::vector<int64_t> ops;
    for (int64_t i : idx)
      if (is_host_range(t.events[i].kind)) ops.push_back(i);
    std::stable_sort(ops.begin(), ops.end(), [&](int64_t x_i, int64_t y_i) {
      const Event& x = t.events[x_i];
      const Event& y = t.events[y_i];
      return x.start_ns != y.start_ns ? x.start_ns < y.start_ns : x.duration_ns > y.duration_ns;
    });
    // Post-order over the nesting (TB node.py fill_stats): an op is eligible by name, or, a
    // CPU op, when a child is or when its own kernels use Tensor Cores. The bottom eligible
    // ops (none eligible below them) count.
    std::vector<Node> stack;
    auto close = [&]() {
      const Node n = stack.back();
      stack.pop_back();
      const Event& e = t.events[n.event];
      const bool is_op = e.kind == EventKind::CpuOp && !is_step_name(e.name) &&
                         !is_tb_dataloader(e.name) && !starts_with(e.name, "Optimizer.") &&
                         e.name != "DataParallel.forward" &&
                         e.name != "DistributedDataParallel.forward";
      const Own o = own(e);
      if (is_op) tc_ops_ns += static_cast<double>(o.kernel_ns);
      if (n.eligible && !n.eligible_below) tc_eligible_ns += static_cast<double>(o.kernel_ns);
      if (!stack.empty()) {
        Node& parent = stack.back();
        parent.eligible_below |= n.eligible || n.eligible_below;
        const Event& p = t.events[parent.event];
        if (p.kind == EventKind::CpuOp && !is_step_name(p.name) && n.eligible)
          parent.eligible = true;
      }
    };
    for (int64_t i : ops) {
      const Event& e = t.events[i];
      while (!stack.empty() && end_of(t.events[stack.back().event]) <= e.start_ns) close();
      const bool eligible =
          is_tb_tensor_core_op(e.name) || (e.kind == EventKind::CpuOp && own(e).tensor_core_ns > 0);
      stack.push_back({i, eligible, false});
    }
    while (!stack.empty()) close();
  }
  if (tc_ops_ns > 0) a.r.tensor_core_eligible_share = tc_eligible_ns / tc_ops_ns;
}

}  // namespace

void gpu_metrics(Analysis& a) {
  const Trace& t = a.t;
  Report& r = a.r;
  TraceIndex& index = a.index;
  if (!r.has_gpu_data) return;
  const int64_t window_start = a.facts.window_start, window_end = a.facts.window_end;
  std::map<int32_t, std::vector<int64_t>> kernels_by_device;
  std::set<int32_t> ids;
  for (int64_t i : index.activities) {
    const Event& e = t.events[i];
    ids.insert(device_of(e));
    a.facts.busy_by_device[device_of(e)].push_back({e.start_ns, end_of(e)});
    if (e.kind == EventKind::Kernel) kernels_by_device[device_of(e)].push_back(i);
  }
  for (auto& [d, v] : a.facts.busy_by_device) v = merge(std::move(v));
  for (const MemoryEvent& m : t.memory_events)
    if (m.device_type == 1 && m.device_index >= 0) ids.insert(m.device_index);

  bool any_kernel_args = false;
  double tc_all = 0, tc_tb = 0;
  for (int32_t d : ids) {
    Report::Device dev;
    dev.id = d;
    for (const DeviceProperties& p : t.devices) {
      if (p.id != d) continue;
      dev.name = p.name;
      if (p.total_global_mem > 0) dev.total_memory_bytes = p.total_global_mem;
    }
    dev.window_start_ns = window_start;
    dev.window_end_ns = window_end;
    const int64_t window = window_end - window_start;
    const auto& ks = kernels_by_device[d];
    Intervals kernel_set;
    struct Edge {
      int64_t time;
      int kind;  // 0 start, 1 end: starts first at equal times, as TB sorts them
      double value;
    };
    std::vector<Edge> edges;
    double occ_weighted = 0, occ_time = 0, tc_time = 0, tc90_time = 0, k_time = 0;
    for (int64_t i : ks) {
      const Event& e = t.events[i];
      kernel_set.push_back({e.start_ns, end_of(e)});
      const bool args = kernel_args_present(e.kernel);
      any_kernel_args |= args;
      if (args && e.kernel.blocks_per_sm > 0) {
        edges.push_back({e.start_ns, 0, e.kernel.blocks_per_sm});
        edges.push_back({end_of(e), 1, e.kernel.blocks_per_sm});
      }
      if (args) {
        const int64_t lo = std::max(e.start_ns, window_start);
        const int64_t hi = std::min(end_of(e), window_end);
        if (lo < hi) {
          occ_weighted += static_cast<double>(e.kernel.occupancy_pct) * (hi - lo);
          occ_time += static_cast<double>(hi - lo);
        }
      }
      const double dur = static_cast<double>(e.duration_ns);
      k_time += dur;
      const uint8_t tc = index.tensor_core_bits(e.name);
      if (tc & 1) tc_time += dur;
      if (tc != 0) tc90_time += dur;
    }
    tc_all += k_time;
    tc_tb += tc_time;
    kernel_set = merge(std::move(kernel_set));
    if (window > 0) {
      dev.kernel_busy_ns = total_within(kernel_set, window_start, window_end);
      dev.utilization = static_cast<double>(dev.kernel_busy_ns) / static_cast<double>(window);
      // Est. SM efficiency: blocks per SM of concurrent kernels summed, capped at 1, over the
      // window (TB merge_ranges_with_value, then divided by the window, not kernel time).
      std::sort(edges.begin(), edges.end(), [](const Edge& x, const Edge& y) {
        return x.time != y.time ? x.time < y.time : x.kind < y.kind;
      });
      double value = 0, integral = 0;
      bool any_piece = false;
      for (std::size_t k = 0; k < edges.size(); ++k) {
        if (k > 0 && edges[k].time > edges[k - 1].time && value > 0) {
          const int64_t lo = std::max(edges[k - 1].time, window_start);
          const int64_t hi = std::min(edges[k].time, window_end);
          if (lo < hi) {
            integral += std::min(value, 1.0) * static_cast<double>(hi - lo);
            any_piece = true;
          }
        }
        value += edges[k].kind == 0 ? edges[k].value : -edges[k].value;
      }
      if (any_piece) dev.sm_efficiency = integral / static_cast<double>(window);
      if (a.opt.utilization_buckets > 0) {
        const int64_t buckets = a.opt.utilization_buckets;
        const int64_t width = std::max<int64_t>(1, window / buckets + (window % buckets != 0));
        dev.utilization_bucket_ns = width;
        for (int64_t lo = window_start; lo < window_end; lo += width) {
          const int64_t hi = std::min(lo + width, window_end);
          dev.utilization_series.push_back(static_cast<double>(total_within(kernel_set, lo, hi)) /
                                           static_cast<double>(hi - lo));
        }
      }
    }
    if (occ_time > 0) dev.achieved_occupancy = occ_weighted / occ_time;
    if (k_time > 0) {
      dev.tensor_core_share = tc_time / k_time;
      dev.tensor_core_share_sm90 = tc90_time / k_time;
    }
    for (const MemoryEvent& m : t.memory_events) {
      if (m.device_type != 1 || m.device_index != d) continue;
      dev.peak_allocated_bytes = std::max(dev.peak_allocated_bytes.value_or(0), m.total_allocated);
    }
    r.devices.push_back(std::move(dev));
  }
  if (tc_all > 0) r.tensor_core_share = tc_tb / tc_all;
  if (!kernels_by_device.empty() && !any_kernel_args) {
    a.quality("no_kernel_args",
              "kernels carry no launch details (grid, blocks per SM, occupancy): the trace or "
              "its reader left them out",
              {"gpu.sm_efficiency", "gpu.achieved_occupancy", "findings.low_occupancy"});
    a.undetermined("gpu.sm_efficiency", "kernels have no 'blocks per SM'");
    a.undetermined("gpu.achieved_occupancy", "kernels have no 'est. achieved occupancy %'");
  }
  if (t.memory_events.empty()) {
    a.undetermined("memory_peak", "no [memory] events (record with profile_memory)");
  } else if (t.devices.empty()) {
    a.undetermined("memory_peak", "the trace has no device properties (totalGlobalMem)");
  }
  queue_lengths(a);
  tensor_core_eligibility(a);
}

}  // namespace ptprof::detail
