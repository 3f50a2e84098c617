// Idle causes (ptprof's own, docs/report.md): for every moment inside a step that no kernel,
// copy or memset runs on a device, what the thread that launches the device's next work was
// doing. The thread's time is cut into segments of one cause each (HostClass priority, the
// innermost name); a blocking call in progress when the GPU ran dry takes the whole gap but
// its data-loader and collective moments.
#include <algorithm>
#include <array>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analysis/names.h"
#include "analysis/report/analysis.h"

namespace ptprof::detail {

namespace {

// What the host thread is doing, by priority: a moment belongs to the first class active then.
enum HostClass : int {
  kHostDataLoader = 0,
  kHostCollective,
  kHostDeviceToHost,
  kHostSync,
  kHostAllocator,
  kHostOp,
  kHostClasses,
};
IdleCause cause_of(int host_class) {
  switch (host_class) {
    case kHostDataLoader:
      return IdleCause::DataLoader;
    case kHostCollective:
      return IdleCause::Collective;
    case kHostDeviceToHost:
      return IdleCause::DeviceToHost;
    case kHostSync:
      return IdleCause::Sync;
    case kHostAllocator:
      return IdleCause::Allocator;
    case kHostOp:
      return IdleCause::OpOverhead;
    default:
      return IdleCause::OutsideOps;
  }
}

// One stretch of a host thread's time with one cause, and the name that explains it.
struct HostSegment {
  int64_t start, end;
  IdleCause cause;
  int32_t label;  // Labels id
};

class IdleCauses {
 public:
  explicit IdleCauses(Analysis& a) : a_(a), t_(a.t), index_(a.index), labels_(a.facts.labels) {}

  void run();

 private:
  const std::vector<HostSegment>& segments(int64_t tid);
  int blocking_class(int64_t i) const;
  const std::vector<std::pair<int64_t, int>>& blocking_events(int64_t tid);
  std::optional<std::pair<IdleCause, int32_t>> blocking_at(int64_t tid, int64_t gap_start);

  Analysis& a_;
  const Trace& t_;
  const TraceIndex& index_;
  Labels& labels_;
  std::unordered_map<int64_t, std::vector<HostSegment>> segments_cache_;
  std::unordered_map<int64_t, std::vector<std::pair<int64_t, int>>> blocking_cache_;
};

// A host thread's time as segments of one cause each (HostClass priority, innermost name).
const std::vector<HostSegment>& IdleCauses::segments(int64_t tid) {
  auto cached = segments_cache_.find(tid);
  if (cached != segments_cache_.end()) return cached->second;
  std::vector<HostSegment>& out = segments_cache_[tid];
  auto it = index_.host_events.find(tid);
  if (it == index_.host_events.end()) return out;
  // 16 bytes, the event, its end and its class packed: a thread of a large trace has millions
  // of edges, and they are the Report's largest working memory.
  struct Edge {
    int64_t time;
    uint64_t bits;  // event << 8 | open << 7 | class
    int64_t event() const { return static_cast<int64_t>(bits >> 8); }
    bool open() const { return (bits >> 7) & 1; }
    // kHostClasses for a plain user range (labels "outside ops" time)
    int cls() const { return static_cast<int>(bits & 0x7f); }
  };
  static_assert(kHostClasses < 0x80, "a class fits in 7 bits");
  auto edge = [](int64_t time, bool open, int64_t event, int cls) {
    return Edge{time, static_cast<uint64_t>(event) << 8 | uint64_t{open} << 7 |
                          static_cast<uint64_t>(cls)};
  };
  std::vector<Edge> edges;
  edges.reserve(2 * it->second.size());
  for (int64_t i : it->second) {
    const Event& e = t_.events[i];
    if (e.duration_ns <= 0) continue;  // no time to attribute
    int cls = -1;
    if (is_host_range(e.kind)) {
      if (is_step_name(e.name)) continue;
      if (is_dataloader_range(e.name))
        cls = kHostDataLoader;
      else if (is_collective(e.name))
        cls = kHostCollective;
      else if (is_item_op(e.name))
        cls = kHostDeviceToHost;
      else if (e.kind == EventKind::CpuOp)
        cls = kHostOp;
      else
        cls = kHostClasses;
    } else {
      cls = blocking_class(i);
      if (cls < 0) cls = is_allocator_call(e.name) ? kHostAllocator : kHostOp;
    }
    edges.push_back(edge(e.start_ns, true, i, cls));
    edges.push_back(edge(end_of(e), false, i, cls));
  }
  // At one time: closes before opens, inner ranges closing first and outer ones opening
  // first, so the back of each open list is the innermost range.
  std::sort(edges.begin(), edges.end(), [&](const Edge& a, const Edge& b) {
    if (a.time != b.time) return a.time < b.time;
    if (a.open() != b.open()) return !a.open();
    const Event& x = t_.events[a.event()];
    const Event& y = t_.events[b.event()];
    if (a.open()) return end_of(x) != end_of(y) ? end_of(x) > end_of(y) : a.event() < b.event();
    return x.start_ns != y.start_ns ? x.start_ns > y.start_ns : a.event() > b.event();
  });
  std::array<std::vector<int64_t>, kHostClasses + 1> open;
  const int32_t no_range = labels_.id("(no range)");
  int64_t prev = kMinNs;
  for (const Edge& ed : edges) {
    if (prev != kMinNs && ed.time > prev) {
      int cls = 0;
      while (cls < kHostClasses && open[cls].empty()) ++cls;
      int32_t lab = no_range;
      if (cls < kHostClasses) {
        int64_t ev = open[cls].back();
        if (cls == kHostOp) {
          // Name the innermost operator, not the launch call inside it.
          for (auto k = open[cls].rbegin(); k != open[cls].rend(); ++k) {
            if (t_.events[*k].kind == EventKind::CpuOp) {
              ev = *k;
              break;
            }
          }
        }
        lab = labels_.id(t_.events[ev].name);
      } else if (!open[kHostClasses].empty()) {
        lab = labels_.id(t_.events[open[kHostClasses].back()].name);
      }
      const IdleCause cause = cause_of(cls);
      if (!out.empty() && out.back().end == prev && out.back().cause == cause &&
          out.back().label == lab) {
        out.back().end = ed.time;
      } else {
        out.push_back({prev, ed.time, cause, lab});
      }
    }
    prev = ed.time;
    auto& st = open[ed.cls()];
    if (ed.open()) {
      st.push_back(ed.event());
    } else {
      auto pos = std::find(st.rbegin(), st.rend(), ed.event());
      if (pos != st.rend()) st.erase(std::next(pos).base());
    }
  }
  return out;
}

// The blocking class of a runtime/driver call, -1 when it does not wait for the device.
int IdleCauses::blocking_class(int64_t i) const {
  const Event& e = t_.events[i];
  if (is_sync_call(e.name) || (e.correlation != 0 && index_.waits.count(e.correlation)))
    return kHostSync;
  if (is_memcpy_call(e.name)) {
    if (contains(e.name, "DtoH")) return kHostDeviceToHost;
    for (int64_t act : index_.activities_of.find(e.correlation)) {  // none for 0
      const Event& c = t_.events[act];
      if (c.kind != EventKind::Memcpy) continue;
      const uint8_t kind =
          c.transfer.copy_kind ? c.transfer.copy_kind : copy_kinds_from_name(c.name).copy;
      if (kind == kCopyDtoH) return kHostDeviceToHost;
    }
  }
  return -1;
}

// Calls and ops on a thread that wait for the device, by start.
const std::vector<std::pair<int64_t, int>>& IdleCauses::blocking_events(int64_t tid) {
  auto cached = blocking_cache_.find(tid);
  if (cached != blocking_cache_.end()) return cached->second;
  auto& out = blocking_cache_[tid];
  auto it = index_.host_events.find(tid);
  if (it == index_.host_events.end()) return out;
  for (int64_t i : it->second) {
    const Event& e = t_.events[i];
    const int cls =
        is_host_range(e.kind) ? (is_item_op(e.name) ? kHostDeviceToHost : -1) : blocking_class(i);
    if (cls >= 0) out.emplace_back(i, cls);
  }
  std::stable_sort(out.begin(), out.end(), [&](const auto& x, const auto& y) {
    return t_.events[x.first].start_ns < t_.events[y.first].start_ns;
  });
  return out;
}

// The host call that was waiting for the device when it ran dry at `gap_start`, if any:
// started before, and ended at most the slack before it.
std::optional<std::pair<IdleCause, int32_t>> IdleCauses::blocking_at(int64_t tid,
                                                                     int64_t gap_start) {
  const auto& calls = blocking_events(tid);
  auto pos = std::lower_bound(calls.begin(), calls.end(), gap_start, [&](const auto& c, int64_t v) {
    return t_.events[c.first].start_ns < v;
  });
  std::optional<std::pair<IdleCause, int32_t>> found;
  // Blocking calls do not overlap on a thread except when nested (a sync inside item()), so
  // the candidates are the few that start last before the gap.
  constexpr int kLookBack = 8;
  for (int k = 0; k < kLookBack && pos != calls.begin(); ++k) {
    --pos;
    const Event& e = t_.events[pos->first];
    if (end_of(e) < gap_start - a_.th.blocking_call_slack_ns) continue;
    // item() names the cause better than the copy or sync inside it.
    if (!found || (pos->second == kHostDeviceToHost && found->first != IdleCause::DeviceToHost) ||
        (pos->second == kHostDeviceToHost && is_host_range(e.kind)))
      found = std::make_pair(cause_of(pos->second), labels_.id(e.name));
  }
  return found;
}

void IdleCauses::run() {
  Report& r = a_.r;
  const Trace& t = t_;
  std::vector<IdlePiece>& idle_pieces = a_.facts.idle_pieces;
  if (!r.has_gpu_data || !r.breakdown_determined) return;
  r.idle_causes_determined = true;
  std::map<int32_t, std::vector<int64_t>> by_start;  // activities per device by start
  std::map<int32_t, std::vector<int64_t>> by_end;
  for (int64_t i : index_.activities) {
    by_start[device_of(t.events[i])].push_back(i);
    by_end[device_of(t.events[i])].push_back(i);
  }
  for (auto& [d, v] : by_start)
    std::sort(v.begin(), v.end(),
              [&](int64_t x, int64_t y) { return t.events[x].start_ns < t.events[y].start_ns; });
  for (auto& [d, v] : by_end)
    std::sort(v.begin(), v.end(),
              [&](int64_t x, int64_t y) { return end_of(t.events[x]) < end_of(t.events[y]); });
  std::array<std::unordered_map<int32_t, int64_t>, kIdleCauses> by_label;
  auto launcher = [&](int64_t activity) -> int64_t {
    const int64_t l = index_.launch(t.events[activity]);
    return l < 0 ? kMinNs : t.events[l].tid;
  };
  for (std::size_t si = 0; si < r.steps.size(); ++si) {
    const auto& step = r.steps[si];
    const int64_t step_tid =
        a_.facts.step_event[si] >= 0 ? t.events[a_.facts.step_event[si]].tid : kMinNs;
    for (const auto& device_busy : a_.facts.busy_by_device) {
      // Named copies: a lambda below captures them (C++17 cannot capture structured bindings).
      const int32_t d = device_busy.first;
      const Intervals& busy = device_busy.second;
      const Intervals gaps = subtract({{step.start_ns, step.end_ns}}, busy);
      const auto& starts = by_start[d];
      const auto& ends = by_end[d];
      Report::Device* device = nullptr;
      for (auto& dev : r.devices)
        if (dev.id == d) device = &dev;
      for (const Interval& g : gaps) {
        r.gpu_idle_in_steps_ns += g.end - g.start;
        if (device) device->idle_in_steps_ns += g.end - g.start;
        // The thread that launches the next GPU work is the one the GPU waits for; at the
        // end of the GPU's work, the one that launched the last of it.
        int64_t tid = kMinNs;
        auto next =
            std::lower_bound(starts.begin(), starts.end(), g.end,
                             [&](int64_t x, int64_t v) { return t.events[x].start_ns < v; });
        if (next != starts.end()) tid = launcher(*next);
        if (tid == kMinNs) {
          auto prev =
              std::upper_bound(ends.begin(), ends.end(), g.start,
                               [&](int64_t v, int64_t x) { return v < end_of(t.events[x]); });
          if (prev != ends.begin()) tid = launcher(*std::prev(prev));
        }
        if (tid == kMinNs) tid = step_tid;
        std::array<bool, kIdleCauses> touched{};
        auto account = [&](int64_t s, int64_t e, IdleCause c, int32_t lab) {
          if (e <= s) return;
          const int ci = static_cast<int>(c);
          r.idle_causes[ci].total_ns += e - s;
          touched[ci] = true;
          if (lab >= 0) by_label[ci][lab] += e - s;
          if (!idle_pieces.empty() && idle_pieces.back().device == d &&
              idle_pieces.back().end == s && idle_pieces.back().cause == c &&
              idle_pieces.back().label == lab) {
            idle_pieces.back().end = e;
          } else {
            idle_pieces.push_back({d, s, e, c, lab});
          }
        };
        if (tid == kMinNs) {
          account(g.start, g.end, IdleCause::Unknown, -1);
        } else {
          const auto blocking = blocking_at(tid, g.start);
          const auto& segs = segments(tid);
          auto seg = std::lower_bound(segs.begin(), segs.end(), g.start,
                                      [](const HostSegment& s, int64_t v) { return s.end <= v; });
          int64_t cur = g.start;
          const int32_t no_range = labels_.id("(no range)");
          for (; seg != segs.end() && seg->start < g.end; ++seg) {
            const int64_t s = std::max(seg->start, g.start);
            const int64_t e = std::min(seg->end, g.end);
            if (s > cur) {
              account(cur, s, blocking ? blocking->first : IdleCause::OutsideOps,
                      blocking ? blocking->second : no_range);
            }
            IdleCause c = seg->cause;
            int32_t lab = seg->label;
            // After a blocking call the queue is empty: the refill is the call's cost,
            // except where the host is loading data or in a collective.
            if (blocking && c != IdleCause::DataLoader && c != IdleCause::Collective) {
              c = blocking->first;
              lab = blocking->second;
            }
            account(s, e, c, lab);
            cur = e;
          }
          if (cur < g.end) {
            account(cur, g.end, blocking ? blocking->first : IdleCause::OutsideOps,
                    blocking ? blocking->second : no_range);
          }
        }
        for (int c = 0; c < kIdleCauses; ++c) r.idle_causes[c].gaps += touched[c];
      }
    }
  }
  for (int c = 0; c < kIdleCauses; ++c) {
    std::vector<std::pair<std::string, int64_t>> top;
    for (const auto& [lab, ns] : by_label[c]) top.emplace_back(labels_.name(lab), ns);
    std::sort(top.begin(), top.end(), [](const auto& x, const auto& y) {
      return x.second != y.second ? x.second > y.second : x.first < y.first;
    });
    if (top.size() > 5) top.resize(5);
    r.idle_causes[c].top = std::move(top);
  }
}

}  // namespace

void idle_causes(Analysis& a) {
  IdleCauses(a).run();
}

}  // namespace ptprof::detail
