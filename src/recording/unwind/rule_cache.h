// rule_cache.h: the unwind rules of code addresses, computed once per address and cached.
//
// Two levels: a process-wide table (rule_cache.cpp says how it stays lock-free to read) and a
// small per-thread copy of the rules a thread used last (LocalRule). The per-thread lookup runs
// for every captured frame, so it is inline here; the shared table is a call away.
#pragma once

#include <cstdint>

#include "recording/unwind/rule.h"

namespace ptprof::detail::unwind {

// ---- The shared table ------------------------------------------------------------------------

struct Slot;

// The table, allocated at the first call (warm_up_stack_capture makes that the session's start).
// Once per capture, out of line: inlined, it changed capture_stack's register allocation (the
// output pointer spilled) for 45 more instructions a capture at depth 32.
Slot* slots();

// The rule of `key` in the table; on a miss, from the .eh_frame of the loaded object holding
// it, then cached. Out of line, as it always was: only a frame the thread's copy misses
// (LocalRule below) comes here.
Rule rule_for(Slot* table, uint64_t key);

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
// marks an empty one), then the shared table. no_sanitize like the unwinder it is inlined
// into: instrumented, its locals' use-after-scope marks would land in the unwinder's frame,
// which has no ASan epilogue to clear them, and stay poisoned for whatever frame comes next.
__attribute__((always_inline, no_sanitize("address"))) inline Rule local_rule_for(
    LocalRule* local, Slot* table, uint64_t key) {
  LocalRule* set = local + ((key * 0x9E3779B97F4A7C15ull) >> (64 - kLocalRuleBits) & ~1ull);
  if (set[0].key == key) return set[0].rule;
  if (set[1].key == key) return set[1].rule;
  const Rule r = rule_for(table, key);
  set[1] = set[0];
  set[0] = LocalRule{key, r};
  return r;
}

}  // namespace ptprof::detail::unwind
