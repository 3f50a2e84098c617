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
#include <vector>

#include "clock.h"

namespace ptprof::detail {

// One recorded op or range, as collected (plain copy of the hot-path record).
struct RawRecord {
  int64_t start;  // ticks (see clock.h)
  int64_t end;    // ticks; 0: had not ended when the window closed
  uint64_t correlation;
  uint64_t handle;
  int64_t seq_nr;
  uint64_t fwd_tid;
  uint32_t name_id;
  uint8_t scope;  // at::RecordScope
  uint8_t flags;  // kFlagAsync
};
constexpr uint8_t kFlagAsync = 1;

struct CollectedThread {
  int64_t os_tid = 0;
  uint64_t logical_tid = 0;
  std::string name;
  std::vector<RawRecord> records;
};

struct Collected {
  TickConverter clock;  // ticks of the records -> CLOCK_MONOTONIC ns
  std::vector<CollectedThread> threads;
  std::vector<std::string> names;  // by name_id (every name interned so far)
  uint64_t dropped = 0;
};

// Hooks for the GPU side: push/pop a CPU op's id as CUPTI external correlation.
using CorrelationHook = void (*)(uint64_t id);

class Recorder {
 public:
  static Recorder& get();

  // Registers the RecordFunction callback (idempotent); needs_inputs asks RecordFunction to
  // box op inputs, which only shape/FLOP recording needs.
  void install(bool needs_inputs);
  void uninstall();
  bool installed() const;

  // Opens a window: whatever was recorded before (warmup) is discarded.
  void begin_window(std::size_t max_event_bytes);
  // Closes the window and returns its records. Called by the session thread only.
  Collected end_window();
  // Closes without collecting (discard).
  void discard_window();

  void set_correlation_hooks(CorrelationHook push, CorrelationHook pop);

  // Bytes of host memory one recorded op costs (for the memory benchmark).
  static std::size_t record_bytes();
};

}  // namespace ptprof::detail
