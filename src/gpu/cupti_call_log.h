// cupti_call_log.h: the runtime/driver calls lean mode records from CUPTI's callbacks, per
// thread, until the window that holds them closes.
//
// A call is appended once, at its exit, on the thread that made it: no lock and no allocation
// in steady state. Each thread writes into its own list of fixed-size chunks, publishing each
// record with a release store of its chunk's count; chunks come from a pool filled ahead
// (reserve()) and go back to it once read. The session's thread reads what is published at
// window end (read()), and leaves a chunk to its writer until the writer has moved past it.
// The mutex guards the pool and the list of threads: a thread takes it when it first records
// and once per chunk, never per call.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

namespace ptprof::detail {

// One runtime or driver call, as the callback saw it.
struct HostCall {
  int64_t start = 0;         // ptprof's ticks (trace/clock.h): the callback's entry
  int64_t end = 0;           // and exit
  uint64_t op = 0;           // the innermost op open on the thread, 0 if none
  uint32_t correlation = 0;  // CUPTI's correlation id of the call
  uint16_t cbid = 0;
  uint8_t driver = 0;  // 1: a driver API call, 0: a runtime API call
};

class CallLog {
 public:
  static constexpr uint32_t kChunkCalls = 2048;  // 64 KiB of calls per chunk

  // The process's log: CUPTI's callbacks are plain functions. Never destroyed.
  static CallLog& get();

  // Fills the pool to `chunks` chunks and caps what it may hold at `max_chunks` (a window
  // that outgrows the cap loses calls, counted by take_dropped()).
  void reserve(std::size_t chunks, std::size_t max_chunks);
  // Appends to the calling thread's list (the hot path).
  void append(const HostCall& call);

  // Hands each call published so far whose start is at or before `until` (ticks) to `fn`, with
  // the OS id of the thread that made it, thread by thread in the order each thread made them;
  // a later call stays for the next read. Only one thread reads at a time.
  void read(int64_t until, const std::function<void(int64_t tid, const HostCall&)>& fn);
  // Drops everything published so far.
  void discard();
  // Calls that found no chunk (the pool at its cap) since the last call.
  uint64_t take_dropped();

  std::size_t pooled_chunks() const;     // free in the pool
  std::size_t allocated_chunks() const;  // in existence

  struct Chunk;      // opaque: defined in the .cpp
  struct ThreadLog;  // one per thread that recorded

 private:
  CallLog() = default;
  ThreadLog* register_thread();
  Chunk* take_chunk();  // null at the cap
  void give_back(Chunk* c);

  mutable std::mutex mu_;
  std::vector<Chunk*> free_;
  std::size_t allocated_ = 0;
  std::size_t max_chunks_ = 0;
  std::vector<ThreadLog*> threads_;
  std::atomic<uint64_t> dropped_{0};
};

}  // namespace ptprof::detail
