// A snapshot's summary as terminal text and as JSON (keys in docs/memory-snapshots.md).
#include <sstream>
#include <string>

#include "ptprof/memory_snapshot.h"
#include "trace/json_writer.h"
#include "trace/memory_snapshot_text.h"

namespace ptprof {

namespace detail {

std::string format_bytes(int64_t bytes) {
  static const char* const kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  const int64_t magnitude = bytes < 0 ? -(bytes + 1) : bytes;
  if (magnitude < 1024) return std::to_string(bytes) + " B";
  double v = static_cast<double>(bytes) / 1024;
  int unit = 0;
  while ((v >= 1024 || v <= -1024) && unit < 4) {
    v /= 1024;
    ++unit;
  }
  return format_fixed(v, 2) + " " + kUnits[unit];
}

std::vector<const MemoryFrame*> shown_frames(const std::vector<MemoryFrame>& stack) {
  static const char* const kNames[] = {"unwind::unwind", "CapturedTraceback::gather",
                                       "gather_with_cpp", "CUDACachingAllocator",
                                       "c10::cuda::", "_start", "__libc_start_main",
                                       "PyEval_", "PyObject_", "PyFunction_"};
  static const char* const kFiles[] = {"core/boxing", "/Register", "/Redispatch", "pythonrun.c",
                                       "Modules/main.c", "Objects/call.c", "ceval.c"};
  std::vector<const MemoryFrame*> out;
  for (const MemoryFrame& f : stack) {
    bool noise = false;
    for (const char* n : kNames) noise |= f.name.find(n) != std::string::npos;
    for (const char* n : kFiles) noise |= f.filename.find(n) != std::string::npos;
    if (!noise) out.push_back(&f);
  }
  if (out.empty())
    for (const MemoryFrame& f : stack) out.push_back(&f);
  return out;
}

std::string frame_text(const MemoryFrame& f) {
  std::string s = f.name.empty() ? "??" : f.name;
  if (!f.filename.empty()) s += " (" + f.filename + ":" + std::to_string(f.line) + ")";
  return s;
}

std::string stack_headline(const MemorySnapshot& snapshot, int32_t index) {
  if (index < 0 || static_cast<std::size_t>(index) >= snapshot.stacks.size())
    return "(no stack recorded)";
  const auto frames = shown_frames(snapshot.stacks[static_cast<std::size_t>(index)]);
  return frames.empty() ? "(empty stack)" : frame_text(*frames.front());
}

}  // namespace detail

namespace {

using detail::format_bytes;
using detail::stack_headline;

std::string time_text(int64_t time_us, int64_t t0) {
  return time_us < 0 ? "before the trace" : detail::format_fixed((time_us - t0) / 1e3, 3) + " ms";
}


}  // namespace

std::string MemorySnapshotSummary::text(const MemorySnapshot& snapshot) const {
  std::ostringstream o;
  if (devices.empty()) o << "The snapshot has no segments and no trace: nothing was allocated.\n";
  for (const MemoryDeviceSummary& d : devices) {
    const int64_t t0 = d.trace_start_us;
    o << "CUDA:" << d.device << "\n";
    o << "  State when taken: reserved " << format_bytes(d.reserved) << " in " << d.segment_count
      << " segments, allocated " << format_bytes(d.allocated) << ", unallocated "
      << format_bytes(d.reserved - d.allocated) << " (largest free block "
      << format_bytes(d.largest_free_block) << ")\n";
    if (d.trace_entries == 0) {
      o << "  No trace: the allocator's history was not recorded (Options::cuda_memory_history, "
           "or torch.cuda.memory._record_memory_history)\n";
    } else {
      o << "  Trace: " << d.trace_entries << " entries over "
        << detail::format_fixed((d.trace_end_us - t0) / 1e3, 3)
        << " ms; allocated at its start " << format_bytes(d.start_bytes) << "\n";
    }
    o << "  Peak allocated: " << format_bytes(d.peak_bytes)
      << (d.trace_entries == 0 ? " (the state; no trace to replay)"
                                : " at " + time_text(d.peak_time_us, t0))
      << ", " << d.live_at_peak_count << " allocations live\n";
    if (!d.peak_by_stack.empty()) {
      o << "  Live at the peak, by the stack that allocated it:\n";
      for (const MemoryStackShare& s : d.peak_by_stack)
        o << "    " << format_bytes(s.bytes) << " in " << s.count << "  "
          << stack_headline(snapshot, s.stack) << "\n";
    }
    if (!d.largest.empty()) {
      o << "  Largest allocations:\n";
      for (const MemoryAllocationInfo& a : d.largest)
        o << "    " << format_bytes(a.size) << " allocated "
          << (a.alloc_time_us < 0 ? "before the trace" : "at " + time_text(a.alloc_time_us, t0))
          << ", " << (a.free_time_us < 0 ? "not freed" : "freed at " + time_text(a.free_time_us, t0))
          << "  " << stack_headline(snapshot, a.stack) << "\n";
    }
    if (!d.segments.empty() && d.reserved > d.allocated) {
      o << "  Segments with the most unallocated bytes:\n";
      for (const MemorySegmentUse& s : d.segments) {
        if (s.total_size == s.allocated_size) break;
        o << "    " << format_bytes(s.total_size - s.allocated_size) << " of "
          << format_bytes(s.total_size) << " unallocated in " << s.free_blocks
          << (s.free_blocks == 1 ? " free block" : " free blocks") << " (largest " << format_bytes(s.largest_free_block) << "), "
          << (s.large ? "large" : "small") << " pool, stream " << s.stream << "\n";
      }
    }
    for (const MemoryOomInfo& oom : d.ooms) {
      o << "  Out of memory at " << time_text(oom.time_us, t0) << ": asked "
        << format_bytes(oom.requested) << " on stream " << oom.stream << "; CUDA had "
        << format_bytes(oom.device_free) << " free; the allocator held " << format_bytes(oom.reserved)
        << " reserved, " << format_bytes(oom.allocated) << " allocated  "
        << stack_headline(snapshot, oom.stack) << "\n";
    }
  }
  return o.str();
}

std::string MemorySnapshotSummary::json(const MemorySnapshot& snapshot) const {
  detail::JsonWriter w;
  auto stack = [&](int32_t index) {
    if (index < 0 || static_cast<std::size_t>(index) >= snapshot.stacks.size()) {
      w.null();
      return;
    }
    w.begin_array();
    for (const MemoryFrame* f : detail::shown_frames(snapshot.stacks[static_cast<std::size_t>(index)]))
      w.value(detail::frame_text(*f));
    w.end_array();
  };
  auto allocation = [&](const MemoryAllocationInfo& a) {
    w.begin_object();
    w.key("address").value(a.address).key("size").value(a.size).key("stream").value(a.stream);
    w.key("alloc_time_us");
    if (a.alloc_time_us < 0) w.null(); else w.value(a.alloc_time_us);
    w.key("free_time_us");
    if (a.free_time_us < 0) w.null(); else w.value(a.free_time_us);
    w.key("stack");
    stack(a.stack);
    w.end_object();
  };
  w.begin_object();
  w.key("devices").begin_array();
  for (const MemoryDeviceSummary& d : devices) {
    w.begin_object();
    w.key("device").value(static_cast<int64_t>(d.device));
    w.key("reserved").value(d.reserved).key("allocated").value(d.allocated);
    w.key("active").value(d.active).key("requested").value(d.requested);
    w.key("segments").value(d.segment_count).key("largest_free_block").value(d.largest_free_block);
    w.key("trace_entries").value(static_cast<uint64_t>(d.trace_entries));
    w.key("trace_start_us").value(d.trace_start_us).key("trace_end_us").value(d.trace_end_us);
    w.key("start_bytes").value(d.start_bytes);
    w.key("peak_bytes").value(d.peak_bytes).key("peak_time_us").value(d.peak_time_us);
    w.key("live_at_peak_count").value(d.live_at_peak_count);
    w.key("peak_by_stack").begin_array();
    for (const MemoryStackShare& s : d.peak_by_stack) {
      w.begin_object().key("bytes").value(s.bytes).key("count").value(s.count).key("stack");
      stack(s.stack);
      w.end_object();
    }
    w.end_array();
    w.key("live_at_peak").begin_array();
    for (const MemoryAllocationInfo& a : d.live_at_peak) allocation(a);
    w.end_array();
    w.key("largest").begin_array();
    for (const MemoryAllocationInfo& a : d.largest) allocation(a);
    w.end_array();
    w.key("segment_use").begin_array();
    for (const MemorySegmentUse& s : d.segments) {
      w.begin_object().key("address").value(s.address).key("stream").value(s.stream);
      w.key("pool").value(s.large ? "large" : "small").key("total_size").value(s.total_size);
      w.key("allocated_size").value(s.allocated_size).key("free_blocks").value(s.free_blocks);
      w.key("largest_free_block").value(s.largest_free_block).end_object();
    }
    w.end_array();
    w.key("ooms").begin_array();
    for (const MemoryOomInfo& o : d.ooms) {
      w.begin_object().key("time_us").value(o.time_us).key("stream").value(o.stream);
      w.key("requested").value(o.requested).key("device_free").value(o.device_free);
      w.key("allocated").value(o.allocated).key("reserved").value(o.reserved).key("stack");
      stack(o.stack);
      w.end_object();
    }
    w.end_array();
    w.key("streams").begin_array();
    for (const MemoryStreamTimeline& s : d.streams) {
      w.begin_object().key("stream").value(s.stream).key("peak_bytes").value(s.peak_bytes).end_object();
    }
    w.end_array();
    // Allocated bytes after each alloc and free (the start's value is start_bytes).
    w.key("timeline").begin_object().key("time_us").begin_array();
    for (const MemoryTimelinePoint& p : d.timeline) w.value(p.time_us);
    w.end_array().key("bytes").begin_array();
    for (const MemoryTimelinePoint& p : d.timeline) w.value(p.bytes);
    w.end_array().end_object();
    w.end_object();
  }
  w.end_array();
  w.end_object();
  w.finish();
  return w.take();
}

}  // namespace ptprof
