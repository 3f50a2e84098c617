// live_record.h: a flight record (src/trace/flight_format.h) as the recorder keeps it in
// memory: the same eight words, as atomics, so a dumper may copy it while its writer runs.
//
// The words are atomics (a seqlock's data must be atomic to be race-free, Boehm 2012): the
// writer stores kEndSeq odd, then the data, then kBegin and kEndSeq to the new version; a reader
// loads kBegin, the data, then kEndSeq, and keeps the copy only when both are the same even
// version. Stores are releases and loads acquires, which orders each against the ones before it
// with no fence (ThreadSanitizer models no fences); on x86 both are plain moves. A crash
// handler's write(2) copies front to back, which is the reader's order.
#pragma once

#include <atomic>
#include <cstdint>

#include "trace/flight_format.h"

namespace ptprof::detail::flight {

struct alignas(64) LiveRecord {
  std::atomic<uint64_t> w[kWords];

  // Writes words[kStart..kBits] as version `v` (even). One writer at a time.
  void store(const uint64_t* words, uint64_t v) {
    w[kEndSeq].store(v | 1, std::memory_order_relaxed);
    // Each a release: a reader that sees any new word sees the odd kEndSeq before it.
    for (int i = kStart; i < kEndSeq; ++i) w[i].store(words[i], std::memory_order_release);
    w[kBegin].store(v, std::memory_order_release);
    w[kEndSeq].store(v, std::memory_order_release);
  }

  // A copy; whole(*out) says whether it is one version's. Retries a copy caught mid-write a
  // few times (a writer finishes a record in nanoseconds), then gives up: the caller drops it.
  void load(Record* out) const {
    for (int attempt = 0; attempt < 4; ++attempt) {
      out->w[kBegin] = w[kBegin].load(std::memory_order_acquire);
      // Acquires: kEndSeq is read after every word, and sees the odd mark of a write any of
      // them caught.
      for (int i = kStart; i < kEndSeq; ++i) out->w[i] = w[i].load(std::memory_order_acquire);
      out->w[kEndSeq] = w[kEndSeq].load(std::memory_order_acquire);
      if (whole(*out) || (out->w[kBegin] == 0 && out->w[kEndSeq] == 0)) return;
    }
  }

  // The owner's own read of a word (no other thread writes it).
  uint64_t get(int i) const { return w[i].load(std::memory_order_relaxed); }
};
static_assert(sizeof(LiveRecord) == sizeof(Record), "laid out as the dump's records");
static_assert(std::atomic<uint64_t>::is_always_lock_free, "a signal handler copies them raw");

}  // namespace ptprof::detail::flight
