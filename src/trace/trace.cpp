#include "ptprof/trace.h"

#include <algorithm>
#include <deque>
#include <numeric>
#include <unordered_map>

#include "trace/chrome_trace.h"
#include "trace/collectives.h"
#include "trace/json_writer.h"

namespace ptprof {

const char* category(EventKind kind) {
  switch (kind) {
    case EventKind::CpuOp:
      return "cpu_op";
    case EventKind::UserAnnotation:
      return "user_annotation";
    case EventKind::Kernel:
      return "kernel";
    case EventKind::Memcpy:
      return "gpu_memcpy";
    case EventKind::Memset:
      return "gpu_memset";
    case EventKind::CudaRuntime:
      return "cuda_runtime";
    case EventKind::CudaDriver:
      return "cuda_driver";
    case EventKind::CudaSync:
      return "cuda_sync";
    case EventKind::GpuUserAnnotation:
      return "gpu_user_annotation";
    case EventKind::Overhead:
      return "overhead";
  }
  return "unknown";
}

bool is_step_name(std::string_view name) {
  return name.rfind("ProfilerStep#", 0) == 0;
}

bool is_dataloader_name(std::string_view name) {
  constexpr std::string_view kLoader = "enumerate(DataLoader)#", kNext = ".__next__";
  return (name.rfind(kLoader, 0) == 0 && name.size() >= kLoader.size() + kNext.size() &&
          name.compare(name.size() - kNext.size(), kNext.size(), kNext) == 0) ||
         name.rfind("enumerate(DataPipe)#", 0) == 0;
}

bool is_gpu(EventKind kind) {
  switch (kind) {
    case EventKind::Kernel:
    case EventKind::Memcpy:
    case EventKind::Memset:
    case EventKind::CudaSync:
    case EventKind::GpuUserAnnotation:
    case EventKind::Overhead:
      return true;
    default:
      return false;
  }
}

namespace {
struct StringStore {
  std::deque<std::string> strings;  // deque: elements never move
  std::unordered_map<std::string_view, std::string_view> index;
};
}  // namespace

Trace::Trace() : strings_(std::make_shared<StringStore>()) {}

std::string_view Trace::intern(std::string_view s) {
  auto* store = static_cast<StringStore*>(strings_.get());
  auto it = store->index.find(s);
  if (it != store->index.end()) return it->second;
  const std::string& kept = store->strings.emplace_back(s);
  std::string_view v(kept);
  store->index.emplace(v, v);
  return v;
}

void Trace::rebuild_tree() {
  // Group CPU events by thread, order by start (parents first on ties), then nest with a
  // stack: an event is the child of the innermost open event that contains it.
  std::unordered_map<int64_t, std::vector<int64_t>> by_thread;
  for (int64_t i = 0; i < static_cast<int64_t>(events.size()); ++i) {
    Event& e = events[i];
    if (is_gpu(e.kind) || e.kind == EventKind::CudaRuntime || e.kind == EventKind::CudaDriver)
      continue;
    e.parent = -1;
    e.depth = 0;
    e.self_ns = e.duration_ns;
    by_thread[e.tid].push_back(i);
  }
  std::vector<int64_t> stack;
  for (auto& [tid, idx] : by_thread) {
    std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) {
      const Event& x = events[a];
      const Event& y = events[b];
      if (x.start_ns != y.start_ns) return x.start_ns < y.start_ns;
      return x.duration_ns > y.duration_ns;
    });
    stack.clear();
    for (int64_t i : idx) {
      Event& e = events[i];
      const int64_t end = e.start_ns + e.duration_ns;
      while (!stack.empty()) {
        const Event& top = events[stack.back()];
        if (e.start_ns < top.start_ns + top.duration_ns && end <= top.start_ns + top.duration_ns)
          break;
        stack.pop_back();
      }
      if (!stack.empty()) {
        e.parent = stack.back();
        e.depth = static_cast<int32_t>(stack.size());
        events[e.parent].self_ns -= e.duration_ns;
      }
      stack.push_back(i);
    }
  }
}

void Trace::attribute_memory() {
  std::stable_sort(
      memory_events.begin(), memory_events.end(),
      [](const MemoryEvent& a, const MemoryEvent& b) { return a.time_ns < b.time_ns; });
  std::unordered_map<int64_t, std::vector<int64_t>> by_thread;
  for (int64_t i = 0; i < static_cast<int64_t>(events.size()); ++i) {
    const Event& e = events[i];
    if (e.kind == EventKind::CpuOp || e.kind == EventKind::UserAnnotation)
      by_thread[e.tid].push_back(i);
  }
  for (auto& [tid, idx] : by_thread) {
    std::stable_sort(idx.begin(), idx.end(),
                     [&](int64_t a, int64_t b) { return events[a].start_ns < events[b].start_ns; });
  }
  for (MemoryEvent& m : memory_events) {
    m.op = -1;
    auto it = by_thread.find(m.tid);
    if (it == by_thread.end()) continue;
    const auto& idx = it->second;
    // The last op starting at or before the event, then up to the first that contains it.
    auto pos = std::upper_bound(idx.begin(), idx.end(), m.time_ns,
                                [&](int64_t t, int64_t i) { return t < events[i].start_ns; });
    if (pos == idx.begin()) continue;
    int64_t k = *(pos - 1);
    while (k >= 0 && events[k].start_ns + events[k].duration_ns < m.time_ns) k = events[k].parent;
    m.op = k;
  }
}

std::string Trace::to_json() const {
  detail::JsonWriter w;
  detail::write_chrome_trace(*this, w, "");
  return w.take();
}

void Trace::save(const std::string& path, const SaveOptions& options) const {
  detail::check_metadata(*this);  // before any file exists (the writer checks again)
  detail::write_file_atomically(path, [&](detail::Sink& sink) {
    detail::JsonWriter w(&sink);
    detail::write_chrome_trace(*this, w, path, options);
  });
}

}  // namespace ptprof

namespace ptprof::detail {

void share_collectives_with_kernels(Trace& t) {
  if (t.collectives.empty()) return;
  std::unordered_map<uint64_t, int64_t> op_of;  // External id -> CPU event
  for (std::size_t i = 0; i < t.events.size(); ++i) {
    const Event& e = t.events[i];
    if (!is_gpu(e.kind) && e.external_id != 0)
      op_of.emplace(e.external_id, static_cast<int64_t>(i));
  }
  constexpr int kMaxLevels = 4;  // record_param_comms inside c10d::allreduce_ inside a range...
  for (Event& k : t.events) {
    // NCCL's own kernels: a copy kernel launched inside the op is not the collective.
    if (k.kind != EventKind::Kernel || k.collective >= 0 || k.external_id == 0 ||
        (k.name.find("nccl") == std::string_view::npos &&
         k.name.find("NCCL") == std::string_view::npos))
      continue;
    auto it = op_of.find(k.external_id);
    if (it == op_of.end()) continue;
    int64_t at = it->second;
    for (int level = 0; at >= 0 && level < kMaxLevels; ++level) {
      const Event& op = t.events[static_cast<std::size_t>(at)];
      if (op.collective >= 0) {
        k.collective = op.collective;
        break;
      }
      at = op.parent;
    }
  }
}

}  // namespace ptprof::detail
