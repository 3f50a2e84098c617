// ptprof/memory_snapshot.h: CUDA memory snapshots, the caching allocator's state and history
// as torch.cuda.memory._snapshot() and torch::cuda::_memory_snapshot_pickled() give them (the
// pickle pytorch.org/memory_viz reads), read and analysed without libtorch or CUDA.
//
// A snapshot holds each device's segments (what cudaMalloc gave the allocator) split into
// blocks, and, when the allocator's history was recorded (Options::cuda_memory_history, or
// torch.cuda.memory._record_memory_history), each device's trace of allocator actions with the
// stack that made them. summarize() replays the trace as memory_viz's "Active Memory Timeline"
// does: bytes allocated over time per device and stream, the peak and what was live at it,
// the largest allocations, each segment's unallocated bytes, and each out-of-memory error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ptprof {

struct MemoryFrame {
  std::string name;      // function
  std::string filename;
  int64_t line = 0;
};

enum class MemoryBlockState { kActiveAllocated, kActivePendingFree, kInactive };

struct MemoryBlock {
  uint64_t address = 0;
  int64_t size = 0;            // bytes the block takes (rounded up by the allocator)
  int64_t requested_size = 0;  // bytes asked for
  MemoryBlockState state = MemoryBlockState::kInactive;
  int32_t stack = -1;  // MemorySnapshot::stacks index; -1: none recorded
};

struct MemorySegment {
  int device = 0;
  uint64_t address = 0;
  int64_t total_size = 0;
  int64_t allocated_size = 0;
  int64_t active_size = 0;
  int64_t requested_size = 0;
  int64_t stream = 0;
  bool large = true;  // the allocator's large pool (blocks > 1 MB)
  bool expandable = false;
  std::vector<MemoryBlock> blocks;  // in address order
  int32_t stack = -1;
};

enum class MemoryAction {
  kAlloc,
  kFreeRequested,  // "free_requested" (older releases: "free")
  kFreeCompleted,
  kSegmentAlloc,
  kSegmentFree,
  kSegmentMap,    // expandable segments
  kSegmentUnmap,
  kSnapshot,
  kOom,
  kOther,  // an action this reader does not know; kept, not replayed
};

struct MemoryTraceEntry {
  MemoryAction action = MemoryAction::kOther;
  uint64_t address = 0;     // none for kOom
  int64_t size = 0;         // kOom: the bytes asked for
  int64_t stream = 0;
  int64_t time_us = 0;      // the allocator's clock, microseconds
  int64_t device_free = 0;  // kOom: what CUDA reported free
  int32_t stack = -1;
};

struct MemorySnapshot {
  std::vector<MemorySegment> segments;
  std::vector<std::vector<MemoryTraceEntry>> device_traces;  // [device] in time order
  // The distinct stacks, innermost frame first as the snapshot lists them.
  std::vector<std::vector<MemoryFrame>> stacks;

  // Reads a snapshot; throws ptprof::Error naming the file and what is wrong with it (a byte
  // offset for a damaged pickle, the key for a missing or mistyped field).
  static MemorySnapshot load(const std::string& path);
  static MemorySnapshot parse(std::string bytes, const std::string& name = "snapshot");
};

// What summarize() finds, per device.
struct MemoryTimelinePoint {
  int64_t time_us = 0;
  int64_t bytes = 0;
};

struct MemoryAllocationInfo {
  uint64_t address = 0;
  int64_t size = 0;
  int64_t stream = 0;
  int64_t alloc_time_us = -1;  // -1: allocated before the trace began
  int64_t free_time_us = -1;   // -1: not freed when the snapshot was taken
  int32_t stack = -1;
};

// Live bytes at the peak that share one stack.
struct MemoryStackShare {
  int32_t stack = -1;
  int64_t bytes = 0;
  int64_t count = 0;
};

struct MemorySegmentUse {
  uint64_t address = 0;
  int64_t stream = 0;
  bool large = true;
  int64_t total_size = 0;
  int64_t allocated_size = 0;
  int64_t largest_free_block = 0;  // the largest inactive block
  int64_t free_blocks = 0;
};

struct MemoryOomInfo {
  int64_t time_us = 0;
  int64_t stream = 0;
  int64_t requested = 0;       // bytes the failed allocation asked for
  int64_t device_free = 0;     // what CUDA reported free on the device then
  int64_t allocated = 0;       // the allocator's allocated bytes then (the timeline)
  int64_t reserved = 0;        // its reserved bytes then (segments at the end, less the trace's)
  int32_t stack = -1;
};

struct MemoryStreamTimeline {
  int64_t stream = 0;
  std::vector<MemoryTimelinePoint> points;
  int64_t peak_bytes = 0;
};

struct MemoryDeviceSummary {
  int device = 0;
  // The allocator's state when the snapshot was taken (segments and blocks).
  int64_t reserved = 0;
  int64_t allocated = 0;
  int64_t active = 0;
  int64_t requested = 0;
  int64_t segment_count = 0;
  int64_t largest_free_block = 0;
  // The trace replayed: allocated bytes before its first entry, then after each alloc and free.
  std::size_t trace_entries = 0;
  int64_t trace_start_us = 0;  // the first entry's time, and the latest (0 without a trace)
  int64_t trace_end_us = 0;
  int64_t start_bytes = 0;
  std::vector<MemoryTimelinePoint> timeline;
  std::vector<MemoryStreamTimeline> streams;
  int64_t peak_bytes = 0;
  int64_t peak_time_us = 0;  // first time the peak was reached (0 without a trace)
  std::vector<MemoryAllocationInfo> live_at_peak;  // the largest first (at most `top`)
  int64_t live_at_peak_count = 0;
  std::vector<MemoryStackShare> peak_by_stack;     // the most bytes first (at most `top`)
  std::vector<MemoryAllocationInfo> largest;       // the largest allocations of the trace and
                                                   // the state (at most `top`)
  std::vector<MemorySegmentUse> segments;          // the most unallocated bytes first (`top`)
  std::vector<MemoryOomInfo> ooms;
};

struct MemorySnapshotSummary {
  std::vector<MemoryDeviceSummary> devices;  // by device index; those with segments or a trace

  std::string text(const MemorySnapshot& snapshot) const;   // for a terminal
  std::string json(const MemorySnapshot& snapshot) const;   // keys in docs/memory-snapshots.md
  // A self-contained HTML page (no script, nothing loaded): the timeline per device, the
  // peak's stacks, the largest allocations, the segments, the OOMs. Written atomically;
  // throws ptprof::Error naming the path.
  void save_html(const MemorySnapshot& snapshot, const std::string& path,
                 const std::string& title) const;
};

// `top`: how many rows each list keeps.
MemorySnapshotSummary summarize(const MemorySnapshot& snapshot, std::size_t top = 10);

// Where ptprof writes a window's snapshot: beside its trace file, the trace's name with
// ".pt.trace.json[.gz]" (or ".json[.gz]") replaced by ".memory_snapshot.pickle".
std::string memory_snapshot_path_for_trace(const std::string& trace_path);

}  // namespace ptprof
