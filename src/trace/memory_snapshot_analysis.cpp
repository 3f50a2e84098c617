// summarize(): a snapshot's trace replayed as memory_viz's Active Memory Timeline replays it.
//
// An allocation is live from its "alloc" to the first free of its address after it
// ("free_requested": the program let go of it; the "free_completed" that follows once its
// streams are done is not counted twice). A free with no alloc before it in the trace, and a
// block the state shows allocated with no alloc in the trace, were allocated before the trace
// began (memory_viz's "initially allocated"): they count from its start.
#include <algorithm>
#include <cstdint>
#include <map>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "ptprof/memory_snapshot.h"

namespace ptprof {

namespace {

// Sums of sizes read from a file: saturated, never undefined.
int64_t sat_add(int64_t a, int64_t b) {
  int64_t r;
  if (!__builtin_add_overflow(a, b, &r)) return r;
  return b > 0 ? INT64_MAX : INT64_MIN;
}

void keep_top(std::vector<MemoryAllocationInfo>& v, std::size_t top) {
  std::stable_sort(v.begin(), v.end(), [](const MemoryAllocationInfo& a, const MemoryAllocationInfo& b) {
    return a.size > b.size;
  });
  if (v.size() > top) v.resize(top);
}

// One change of allocated bytes: trace entry `entry` allocated (or freed) allocation `alloc`.
struct Change {
  std::size_t entry = 0;
  std::size_t alloc = 0;
  bool freed = false;
};

// Every allocation of one device's trace and state, and the trace's changes in order.
struct Pairing {
  std::vector<MemoryAllocationInfo> allocs;
  std::vector<Change> changes;
};

Pairing pair_up(const std::vector<MemoryTraceEntry>& trace,
                const std::vector<const MemorySegment*>& segments) {
  Pairing p;
  std::unordered_map<uint64_t, std::size_t> live;    // address -> allocs index
  std::unordered_set<uint64_t> awaiting_completion;  // freed (requested), not yet completed
  std::vector<std::size_t> freed_before;             // changes that free what predates the trace
  for (std::size_t k = 0; k < trace.size(); ++k) {
    const MemoryTraceEntry& e = trace[k];
    if (e.action == MemoryAction::kAlloc) {
      MemoryAllocationInfo a;
      a.address = e.address;
      a.size = e.size;
      a.stream = e.stream;
      a.alloc_time_us = e.time_us;
      a.stack = e.stack;
      awaiting_completion.erase(e.address);
      live[e.address] = p.allocs.size();
      p.changes.push_back({k, p.allocs.size(), false});
      p.allocs.push_back(a);
    } else if (e.action == MemoryAction::kFreeRequested ||
               e.action == MemoryAction::kFreeCompleted) {
      const bool completion = e.action == MemoryAction::kFreeCompleted;
      if (completion && awaiting_completion.erase(e.address)) continue;
      if (!completion) awaiting_completion.insert(e.address);
      const auto it = live.find(e.address);
      if (it != live.end()) {
        p.allocs[it->second].free_time_us = e.time_us;
        p.changes.push_back({k, it->second, true});
        live.erase(it);
        continue;
      }
      MemoryAllocationInfo a;  // allocated before the trace
      a.address = e.address;
      a.size = e.size;
      a.stream = e.stream;
      a.free_time_us = e.time_us;
      a.stack = e.stack;
      p.changes.push_back({k, p.allocs.size(), true});
      p.allocs.push_back(a);
    }
  }
  for (const MemorySegment* s : segments) {
    for (const MemoryBlock& b : s->blocks) {
      if (b.state != MemoryBlockState::kActiveAllocated || live.count(b.address)) continue;
      MemoryAllocationInfo a;  // allocated before the trace, still allocated
      a.address = b.address;
      a.size = b.size;
      a.stream = s->stream;
      a.stack = b.stack;
      p.allocs.push_back(a);
    }
  }
  return p;
}

}  // namespace

MemorySnapshotSummary summarize(const MemorySnapshot& snapshot, std::size_t top) {
  int devices = static_cast<int>(snapshot.device_traces.size());
  for (const MemorySegment& s : snapshot.segments) devices = std::max(devices, s.device + 1);
  MemorySnapshotSummary out;
  static const std::vector<MemoryTraceEntry> kNoTrace;
  std::vector<std::vector<const MemorySegment*>> by_device(static_cast<std::size_t>(devices));
  for (const MemorySegment& s : snapshot.segments) by_device[s.device].push_back(&s);
  for (int d = 0; d < devices; ++d) {
    const std::vector<const MemorySegment*>& segments = by_device[d];
    const std::vector<MemoryTraceEntry>& trace =
        d < static_cast<int>(snapshot.device_traces.size()) ? snapshot.device_traces[d] : kNoTrace;
    if (segments.empty() && trace.empty()) continue;
    MemoryDeviceSummary dev;
    dev.device = d;
    dev.trace_entries = trace.size();
    if (!trace.empty()) dev.trace_start_us = dev.trace_end_us = trace.front().time_us;
    for (const MemoryTraceEntry& e : trace) dev.trace_end_us = std::max(dev.trace_end_us, e.time_us);
    dev.segment_count = static_cast<int64_t>(segments.size());
    for (const MemorySegment* s : segments) {
      dev.reserved = sat_add(dev.reserved, s->total_size);
      dev.allocated = sat_add(dev.allocated, s->allocated_size);
      dev.active = sat_add(dev.active, s->active_size);
      dev.requested = sat_add(dev.requested, s->requested_size);
      MemorySegmentUse use;
      use.address = s->address;
      use.stream = s->stream;
      use.large = s->large;
      use.total_size = s->total_size;
      use.allocated_size = s->allocated_size;
      for (const MemoryBlock& b : s->blocks) {
        if (b.state != MemoryBlockState::kInactive) continue;
        ++use.free_blocks;
        use.largest_free_block = std::max(use.largest_free_block, b.size);
      }
      dev.largest_free_block = std::max(dev.largest_free_block, use.largest_free_block);
      dev.segments.push_back(use);
    }
    std::stable_sort(dev.segments.begin(), dev.segments.end(),
                     [](const MemorySegmentUse& a, const MemorySegmentUse& b) {
                       return a.total_size - a.allocated_size > b.total_size - b.allocated_size;
                     });
    if (dev.segments.size() > top) dev.segments.resize(top);

    const Pairing p = pair_up(trace, segments);
    const std::vector<MemoryAllocationInfo>& allocs = p.allocs;
    // Allocated bytes: what predates the trace from its start, then each change.
    const int64_t t0 = dev.trace_start_us;
    std::map<int64_t, int64_t> stream_bytes;
    for (const MemoryAllocationInfo& a : allocs) {
      if (a.alloc_time_us >= 0) continue;
      dev.start_bytes = sat_add(dev.start_bytes, a.size);
      stream_bytes[a.stream] = sat_add(stream_bytes[a.stream], a.size);
    }
    std::map<int64_t, MemoryStreamTimeline> streams;
    for (const auto& [stream, bytes] : stream_bytes)
      streams[stream] = MemoryStreamTimeline{stream, {{t0, bytes}}, bytes};
    int64_t bytes = dev.start_bytes;
    dev.peak_bytes = bytes;
    dev.peak_time_us = t0;
    std::size_t peak_changes = 0;  // changes applied at the peak
    std::vector<int64_t> bytes_after(p.changes.size());
    for (std::size_t c = 0; c < p.changes.size(); ++c) {
      const MemoryAllocationInfo& a = allocs[p.changes[c].alloc];
      const int64_t delta = p.changes[c].freed ? -a.size : a.size;
      const MemoryTraceEntry& e = trace[p.changes[c].entry];
      bytes = sat_add(bytes, delta);
      bytes_after[c] = bytes;
      dev.timeline.push_back({e.time_us, bytes});
      MemoryStreamTimeline& s = streams[a.stream];
      s.stream = a.stream;
      const int64_t sb = stream_bytes[a.stream] = sat_add(stream_bytes[a.stream], delta);
      s.points.push_back({e.time_us, sb});
      s.peak_bytes = std::max(s.peak_bytes, sb);
      if (bytes > dev.peak_bytes) {
        dev.peak_bytes = bytes;
        dev.peak_time_us = e.time_us;
        peak_changes = c + 1;
      }
    }
    for (auto& [stream, s] : streams) dev.streams.push_back(std::move(s));

    // Live at the peak: what predates the trace, with the changes up to the peak applied.
    std::vector<char> alive(allocs.size(), 0);
    for (std::size_t k = 0; k < allocs.size(); ++k) alive[k] = allocs[k].alloc_time_us < 0;
    for (std::size_t c = 0; c < peak_changes; ++c) alive[p.changes[c].alloc] = !p.changes[c].freed;
    std::map<int32_t, MemoryStackShare> by_stack;
    for (std::size_t k = 0; k < allocs.size(); ++k) {
      if (!alive[k]) continue;
      dev.live_at_peak.push_back(allocs[k]);
      ++dev.live_at_peak_count;
      MemoryStackShare& s = by_stack[allocs[k].stack];
      s.stack = allocs[k].stack;
      s.bytes = sat_add(s.bytes, allocs[k].size);
      ++s.count;
    }
    keep_top(dev.live_at_peak, top);
    for (const auto& [stack, share] : by_stack) dev.peak_by_stack.push_back(share);
    std::stable_sort(dev.peak_by_stack.begin(), dev.peak_by_stack.end(),
                     [](const MemoryStackShare& a, const MemoryStackShare& b) {
                       return a.bytes > b.bytes;
                     });
    if (dev.peak_by_stack.size() > top) dev.peak_by_stack.resize(top);
    dev.largest = allocs;
    keep_top(dev.largest, top);

    // OOMs: allocated from the changes before them; reserved from the segments at the end,
    // less the segment actions after them.
    std::vector<int64_t> reserved_at(trace.size(), 0);
    int64_t added_later = 0;
    for (std::size_t k = trace.size(); k-- > 0;) {
      reserved_at[k] = sat_add(dev.reserved, -added_later);
      const MemoryTraceEntry& e = trace[k];
      if (e.action == MemoryAction::kSegmentAlloc || e.action == MemoryAction::kSegmentMap)
        added_later = sat_add(added_later, e.size);
      if (e.action == MemoryAction::kSegmentFree || e.action == MemoryAction::kSegmentUnmap)
        added_later = sat_add(added_later, -e.size);
    }
    std::size_t c = 0;
    for (std::size_t k = 0; k < trace.size(); ++k) {
      while (c < p.changes.size() && p.changes[c].entry < k) ++c;
      const MemoryTraceEntry& e = trace[k];
      if (e.action != MemoryAction::kOom) continue;
      MemoryOomInfo o;
      o.time_us = e.time_us;
      o.stream = e.stream;
      o.requested = e.size;
      o.device_free = e.device_free;
      o.allocated = c == 0 ? dev.start_bytes : bytes_after[c - 1];
      o.reserved = reserved_at[k];
      o.stack = e.stack;
      dev.ooms.push_back(o);
    }
    out.devices.push_back(std::move(dev));
  }
  return out;
}

}  // namespace ptprof
