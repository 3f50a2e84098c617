#include "gpu/cupti_correlator.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <tuple>

namespace ptprof::detail {
namespace {

bool is_gpu_op(EventKind k) {
  return k == EventKind::Kernel || k == EventKind::Memcpy || k == EventKind::Memset;
}
bool is_api(EventKind k) {
  return k == EventKind::CudaRuntime || k == EventKind::CudaDriver;
}

// Every user range gets a GPU span, ProfilerStep#N too, as torch.profiler writes them (seen on
// an H200 with torch 2.11). Unlike Kineto, which gives a GPU op to its innermost range only, a
// range spans the GPU work of all the ops beneath it, so a step's span covers its whole GPU
// work. TensorBoard's writer leaves the step spans out (Trace::SaveOptions).
bool projects_onto_gpu(const Event& e) {
  return e.kind == EventKind::UserAnnotation;
}

}  // namespace

void Correlator::add_external(const ExternalCorrelationRecord& r) {
  if (r.kind != kPtprofCorrelationKind) {
    ++foreign_external_;
    return;
  }
  external_[r.correlation] = r.external_id;
}

std::size_t Correlator::api_calls_within(const GpuClock& clock, int64_t start_ns,
                                         int64_t end_ns) const {
  std::size_t n = 0;
  for (const DecodedActivity& a : activities_) {
    if (!is_api(a.event.kind) || a.host_clock) continue;
    const int64_t t = clock.to_cpu(static_cast<uint64_t>(a.event.start_ns));
    n += t >= start_ns && t <= end_ns;
  }
  return n;
}

CorrelationStats Correlator::finish(const CorrelationWindow& w,
                                    const std::unordered_map<uint32_t, int64_t>& threads,
                                    Trace& trace, const GraphCaptureMap* graphs) {
  CorrelationStats st;
  st.foreign_external = foreign_external_;
  const std::size_t n = activities_.size();
  auto in_window = [&](int64_t t) { return t >= w.start_ns && t <= w.end_ns; };

  // Times onto our clock (still monotonic; the Unix offset is added when appending).
  for (DecodedActivity& a : activities_) {
    if (a.host_clock) continue;
    const uint64_t raw_start = static_cast<uint64_t>(a.event.start_ns);
    a.event.start_ns = w.clock.to_cpu(raw_start);
    a.event.duration_ns =
        a.event.duration_ns > 0 ? w.clock.duration_to_cpu(a.event.duration_ns) : 0;
  }

  // Sync records know only their context; GPU work tells which device a context is on.
  std::unordered_map<uint32_t, int32_t> context_device;
  // Correlation id -> its runtime call (preferred) or driver call.
  std::unordered_map<uint32_t, std::size_t> api_of;
  for (std::size_t i = 0; i < n; ++i) {
    const Event& e = activities_[i].event;
    if (is_gpu_op(e.kind)) context_device.emplace(activities_[i].context, e.device);
    if (!is_api(e.kind)) continue;
    const uint32_t c = static_cast<uint32_t>(e.correlation);
    auto [it, inserted] = api_of.emplace(c, i);
    if (!inserted && e.kind == EventKind::CudaRuntime &&
        activities_[it->second].event.kind == EventKind::CudaDriver)
      it->second = i;
  }

  // The window's CPU ops by their id, and the op tree (for user ranges' subtrees).
  trace.rebuild_tree();
  std::unordered_map<uint64_t, int64_t> op_index;
  for (int64_t i = 0; i < static_cast<int64_t>(trace.events.size()); ++i) {
    const Event& e = trace.events[i];
    if ((e.kind == EventKind::CpuOp || e.kind == EventKind::UserAnnotation) && e.external_id != 0)
      op_index.emplace(e.external_id, i);
  }
  auto op_of = [&](uint32_t correlation) -> uint64_t {
    auto it = external_.find(correlation);
    return it == external_.end() ? 0 : it->second;
  };
  // Graph nodes of this trace: one entry per node (and per graph, for whole-graph records).
  std::unordered_map<uint64_t, int32_t> graph_index;
  auto graph_node = [&](const DecodedActivity& a, const GraphCapture* c) -> int32_t {
    const uint64_t key = a.graph_launch ? (uint64_t{1} << 63) | a.graph_id : a.graph_node;
    auto [it, fresh] = graph_index.try_emplace(key, 0);
    if (!fresh) return it->second;
    GraphNodeInfo g;
    g.graph_id = a.graph_id;
    g.node_id = a.graph_launch ? 0 : a.graph_node;
    if (c != nullptr && c->named) {
      g.captured_by = trace.intern(c->captured_by);
      for (const std::string& r : c->ranges) g.capture_ranges.push_back(trace.intern(r));
    }
    it->second = static_cast<int32_t>(trace.graph_nodes.size());
    trace.graph_nodes.push_back(std::move(g));
    return it->second;
  };

  std::vector<uint8_t> keep(n, 0);
  std::vector<uint8_t> api_has_gpu(n, 0);
  std::vector<std::size_t> launch_of(n, SIZE_MAX);
  for (std::size_t i = 0; i < n; ++i) {
    const Event& e = activities_[i].event;
    if (is_api(e.kind) || e.kind == EventKind::Overhead) {
      keep[i] = in_window(e.start_ns);
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    const Event& e = activities_[i].event;
    if (!is_gpu_op(e.kind) && e.kind != EventKind::CudaSync) continue;
    auto it = api_of.find(static_cast<uint32_t>(e.correlation));
    if (it != api_of.end()) {
      keep[i] = keep[it->second];
      if (keep[i]) {
        launch_of[i] = it->second;
        api_has_gpu[it->second] = 1;
      }
    } else {
      const uint64_t op = op_of(static_cast<uint32_t>(e.correlation));
      keep[i] = (op != 0 && op_index.count(op) != 0) || in_window(e.start_ns);
    }
  }
  // Driver calls are many and mostly noise; shown are launches and calls that launched
  // something in the trace.
  for (std::size_t i = 0; i < n; ++i) {
    const DecodedActivity& a = activities_[i];
    if (a.event.kind == EventKind::CudaDriver && keep[i] && !a.launch && !api_has_gpu[i])
      keep[i] = 0;
  }

  std::vector<Event> out;
  out.reserve(n);
  // (annotation event index, device, stream) -> [start, end] on our clock.
  std::map<std::tuple<int64_t, int32_t, int64_t>, std::pair<int64_t, int64_t>> spans;
  for (std::size_t i = 0; i < n; ++i) {
    if (!keep[i]) {
      ++st.outside_window;
      continue;
    }
    DecodedActivity& a = activities_[i];
    Event e = a.event;
    const uint32_t corr = static_cast<uint32_t>(e.correlation);
    switch (e.kind) {
      case EventKind::CudaRuntime:
      case EventKind::CudaDriver: {
        if (!a.host_clock) {
          auto t = threads.find(a.raw_thread);
          if (t != threads.end()) e.tid = t->second;
        }
        e.external_id = op_of(corr);
        e.flow_start = a.launch && api_has_gpu[i];
        (e.kind == EventKind::CudaRuntime ? st.runtime_calls : st.driver_calls)++;
        break;
      }
      case EventKind::Kernel:
      case EventKind::Memcpy:
      case EventKind::Memset:
      case EventKind::CudaSync: {
        // The op the launch was in: its user ranges are what the work ran under.
        const uint64_t launch_op = op_of(corr);
        e.external_id = launch_op;
        if (a.graph_node != 0 || a.graph_launch) {
          const GraphCapture* c = nullptr;
          if (graphs != nullptr && !a.graph_launch) {
            auto g = graphs->find(a.graph_node);
            if (g != graphs->end()) c = &g->second;
          }
          e.graph_node = graph_node(a, c);
          ++st.graph_work;
          if (c != nullptr && !c->ops.empty() && op_index.count(c->ops.back()) != 0) {
            e.external_id = c->ops.back();
            ++st.graph_work_captured;
          }
        }
        if (e.kind == EventKind::CudaSync) {
          auto d = context_device.find(a.context);
          e.device = d == context_device.end() ? 0 : d->second;
          e.pid = e.device;
          ++st.syncs;
        }
        if (launch_of[i] != SIZE_MAX) {
          const DecodedActivity& l = activities_[launch_of[i]];
          e.flow_end = l.launch;
          if (e.kind != EventKind::CudaSync && e.start_ns < l.event.start_ns)
            ++st.gpu_starts_before_launch;
        }
        if (!is_gpu_op(e.kind)) break;
        ++st.gpu_ops;
        if (e.kind == EventKind::Kernel) ++st.kernels;
        if (e.kind == EventKind::Memcpy) ++st.memcpys;
        if (e.kind == EventKind::Memset) ++st.memsets;
        if (launch_of[i] != SIZE_MAX) ++st.gpu_with_launch;
        if (e.external_id != 0 && op_index.count(e.external_id) != 0) ++st.gpu_with_op;
        auto op = launch_op != 0 ? op_index.find(launch_op) : op_index.end();
        if (op == op_index.end()) break;
        for (int64_t p = op->second; p >= 0; p = trace.events[p].parent) {
          if (!projects_onto_gpu(trace.events[p])) continue;
          auto [s, fresh] =
              spans.try_emplace({p, e.device, e.stream}, e.start_ns, e.start_ns + e.duration_ns);
          if (!fresh) {
            s->second.first = std::min(s->second.first, e.start_ns);
            s->second.second = std::max(s->second.second, e.start_ns + e.duration_ns);
          }
        }
        break;
      }
      case EventKind::Overhead:
        ++st.overheads;
        break;
      default:
        break;
    }
    e.start_ns += w.unix_offset_ns;
    out.push_back(e);
  }

  for (const auto& [key, range] : spans) {
    const auto& [ann, device, stream] = key;
    const Event& u = trace.events[ann];
    Event g;
    g.kind = EventKind::GpuUserAnnotation;
    g.name = u.name;
    // Kineto widens the span by 1 ns each side so it strictly encloses its kernels.
    g.start_ns = range.first - 1 + w.unix_offset_ns;
    g.duration_ns = range.second - range.first + 2;
    g.pid = device;
    g.tid = stream;
    g.device = device;
    g.stream = stream;
    g.external_id = u.external_id;
    out.push_back(g);
    ++st.gpu_user_annotations;
  }

  std::stable_sort(out.begin(), out.end(),
                   [](const Event& a, const Event& b) { return a.start_ns < b.start_ns; });
  trace.events.insert(trace.events.end(), out.begin(), out.end());
  activities_.clear();
  external_.clear();
  foreign_external_ = 0;
  return st;
}

}  // namespace ptprof::detail
