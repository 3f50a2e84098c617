// rule_cache.h: the unwind rules of code addresses, computed once per address and cached.
//
// Two levels: a process-wide table (rule_cache.cpp says how it stays lock-free to read) and a
// small per-thread copy of the rules a thread used last (LocalRule). The lookups run for every
// captured frame, so they are inline here; only a miss, which reads .eh_frame, is a call.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "recording/unwind/rule.h"

namespace ptprof::detail::unwind {

// ---- The shared table ------------------------------------------------------------------------

constexpr int kSlotBits = 15;
constexpr std::size_t kSlots = std::size_t{1} << kSlotBits;
constexpr int kMaxProbes = 32;

struct Slot {
  std::atomic<uint64_t> key{0};
  std::atomic<uint64_t> rule{0};
};

extern std::atomic<Slot*> g_slots;
Slot* allocate_slots();

// The table, allocated at the first call (warm_up_stack_capture makes that the session's start).
inline Slot* slots() {
  Slot* s = g_slots.load(std::memory_order_acquire);
  return s ? s : allocate_slots();
}

inline std::size_t slot_of(uint64_t key) {
  return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ull) >> (64 - kSlotBits));
}

inline bool cached_rule(const Slot* table, uint64_t key, Rule* out) {
  std::size_t i = slot_of(key);
  for (int p = 0; p < kMaxProbes; ++p, i = (i + 1) & (kSlots - 1)) {
    const uint64_t k = table[i].key.load(std::memory_order_acquire);
    if (k == key) {
      *out = unpack(table[i].rule.load(std::memory_order_relaxed));
      return true;
    }
    if (k == 0) return false;
  }
  return false;
}

// A miss: the rule from the .eh_frame of the loaded object holding `key`, then cached.
Rule compute_and_cache_rule(Slot* table, uint64_t key);

inline Rule rule_for(Slot* table, uint64_t key) {
  Rule r;
  if (cached_rule(table, key, &r)) return r;
  return compute_and_cache_rule(table, key);
}

struct RuleCacheStats {
  uint64_t misses = 0;       // addresses whose rule was computed from .eh_frame
  uint64_t unsupported = 0;  // of them, those without a usable rule
};
RuleCacheStats rule_cache_stats();

// ---- The per-thread copy ---------------------------------------------------------------------
//
// A thread's own small copy of the rules it used last. The shared table is 512 KiB, probed at
// a hash of each frame's address: a cache miss per frame once the training step has pushed it
// out of the cache. A stack's frames repeat from op to op, and 8 KiB of them stay close. Two
// ways per set: direct-mapped, pairs of frames that many ops' stacks hold and that hash to one
// slot evicted each other on every capture. In bench_step's training step (callgrind, 1837
// captures) the shared table was looked up 1850 times direct-mapped, 798 times with two ways
// (2048 entries would make it 204, at 32 KiB of static TLS in every thread of the process).
//
// The thread_local array itself is the unwinder's (unwinder.cpp): defined in the TU that
// reads it, it needs no TLS wrapper call.

struct LocalRule {
  uint64_t key;
  Rule rule;  // as it is used, not packed: read on every frame
};
constexpr int kLocalRuleBits = 9;

// The rule of `key` through the thread's copy `local` (1 << kLocalRuleBits entries, key 0
// marks an empty one), then the shared table.
__attribute__((always_inline)) inline Rule local_rule_for(LocalRule* local, Slot* table,
                                                          uint64_t key) {
  LocalRule* set = local + ((key * 0x9E3779B97F4A7C15ull) >> (64 - kLocalRuleBits) & ~1ull);
  if (set[0].key == key) return set[0].rule;
  if (set[1].key == key) return set[1].rule;
  const Rule r = rule_for(table, key);
  set[1] = set[0];
  set[0] = LocalRule{key, r};
  return r;
}

}  // namespace ptprof::detail::unwind
