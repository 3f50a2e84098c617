// recorder.h: the CPU hot path. RecordFunction global callbacks write fixed-size records
// into per-thread chunked buffers; the session thread collects them when a window closes.
//
// Concurrency, in short (details in recorder.cpp):
// - Each thread owns its ThreadState and is the only writer of it. Records are published by a
//   release store of the buffer size; the collector reads up to that size.
// - A global generation number names the current window. Each thread keeps two buffer halves
//   and writes into half[gen & 1]; closing a window bumps the generation, so the collector can
//   read the old half while threads already write the new one. Only the owner ever resets a
//   half, and only after the session thread finished reading it.
// - The per-op path takes no lock and allocates nothing once a thread has its chunks; a lock
//   is taken to register a thread, intern a new name, or collect.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gpu/gpu_backend.h"
#include "ptprof/event.h"
#include "recording/name_cache.h"
#include "trace/clock.h"

namespace ptprof::detail {

// One recorded op or range, as collected (plain copy of the hot-path record). A memory
// record (scope == kScopeMemory) uses bytes (negative: a free) and reuses the others:
// correlation = address, seq_nr = total allocated, fwd_tid = total reserved, name_id = its
// device (pack_memory_device).
struct RawRecord {
  int64_t start;  // ticks (see clock.h)
  int64_t end;    // ticks; 0: had not ended when the window closed
  uint64_t correlation;
  uint64_t bytes;
  int64_t seq_nr;
  uint64_t fwd_tid;
  uint32_t name_id;
  uint8_t scope;  // at::RecordScope, or kScopeMemory
  uint8_t flags;  // kFlagAsync
  // Serialized inputs/stack of the op (record_shapes, with_flops, with_stack): details_len
  // bytes at this offset into CollectedThread::details, or kNoDetails.
  uint16_t details_len;
  uint64_t details;
};
static_assert(sizeof(RawRecord) <= 64, "a collected record stays within a cache line");
constexpr uint8_t kFlagAsync = 1;
constexpr uint8_t kFlagDetails = 2;  // the hot path wrote details for this record
constexpr uint8_t kScopeMemory = 0xFE;
constexpr uint64_t kNoDetails = ~uint64_t{0};

// A memory record's device (c10::DeviceType, index; -1: none), in its name_id.
struct MemoryDevice {
  int8_t type;
  int8_t index;
};
inline uint32_t pack_memory_device(uint8_t type, int8_t index) {
  return (uint32_t{type} << 8) | static_cast<uint8_t>(index + 1);
}
inline MemoryDevice unpack_memory_device(uint32_t name_id) {
  return {static_cast<int8_t>(name_id >> 8),
          static_cast<int8_t>(static_cast<int>(name_id & 0xff) - 1)};
}

// What the callback captures beyond the fixed record.
struct CaptureOptions {
  bool inputs = false;  // record_shapes or with_flops: RecordFunction boxes op inputs
  bool inputs_for_flops_only = false;  // with_flops alone: only ops with a FLOP formula keep them
  bool stacks = false;                 // with_stack: native stack addresses at op entry
  bool memory = false;                 // profile_memory: allocation events through c10's reporter
  int stack_depth = 64;                // frames kept; deeper stacks are cut and marked
};

struct CollectedThread {
  int64_t os_tid = 0;
  uint64_t logical_tid = 0;
  std::string name;
  std::vector<RawRecord> records;
  std::string details;  // bytes RawRecord::details points into (format: details.h)
};

struct Collected {
  TickConverter clock;  // ticks of the records -> CLOCK_MONOTONIC ns
  std::vector<CollectedThread> threads;
  // Collective ops' arguments, by their record's correlation (RawRecord::correlation).
  std::vector<std::pair<uint64_t, CollectiveInfo>> collectives;
  std::vector<std::string_view> names;  // by name_id (every name interned so far)
  uint64_t dropped = 0;                 // ops and ranges
  uint64_t dropped_memory = 0;          // memory events
};

class Recorder {
 public:
  static Recorder& get();

  // Registers the RecordFunction callback (again, if the capture options changed).
  void install(const CaptureOptions& capture);
  void uninstall();
  // The flight recorder's rings (flight/rings.h, sized by FlightRecorder::start) written by
  // the callback, with or without a window: it stays registered while they are.
  void set_flight(bool on);
  bool flight() const;
  bool installed() const;

  // Opens a window: whatever was recorded before (warmup) is discarded.
  void begin_window(std::size_t max_event_bytes);
  // Closes the window and returns its records. Called by the session thread only.
  Collected end_window();
  // Closes without collecting (discard).
  void discard_window();

  // The GPU backend's (gpu_backend.h); nullptr: none.
  void set_correlation_hooks(CorrelationHook push, CorrelationHook pop);

  // Bytes of host memory one recorded op costs while recording (for the memory benchmark).
  static std::size_t record_bytes();
  // What one record costs through its window: the record, its collected copy and the Event
  // built from it. The window budget is counted in these, so a full window's records plus its
  // Trace stay within Options::max_event_memory_bytes.
  static std::size_t window_bytes_per_record();
};

}  // namespace ptprof::detail
