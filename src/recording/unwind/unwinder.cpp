// unwinder.cpp: capture_stack and capture_stack_nested (stack_capture.h), the CFI unwinder
// inlined into them, and the thread-local state it reads on every frame. That state (the
// thread's rule copy and stack bounds) is defined here, in the one translation unit that
// reads it, so that reading it takes no TLS wrapper call.
#include <algorithm>
#include <atomic>
#include <cstdint>

#include "recording/stack_capture.h"
#include "recording/unwind/backtrace.h"
#include "recording/unwind/platform.h"
#include "recording/unwind/rule_cache.h"
#include "recording/unwind/stack_bounds.h"
#include "recording/unwind/stack_memo.h"

namespace ptprof::detail {

namespace {

using namespace unwind;

std::atomic<uint64_t> g_fallbacks{0};

// _Unwind_Backtrace from the function this is inlined into, its own frame left out: the
// fallback of the entry points below.
__attribute__((always_inline)) inline int backtrace_from_caller(void** out, int max_depth) {
  g_fallbacks.fetch_add(1, std::memory_order_relaxed);
  BacktraceState s{out, 0, max_depth, 1};
  _Unwind_Backtrace(backtrace_frame, &s);
  return s.n;
}

#ifdef PTPROF_CFI_UNWINDER

// Key 0, which no frame has, marks an entry empty. Rule's default member values give
// LocalRule a constructor, so a TLS init guard runs once per capture (a compare and a branch,
// next to the 15 instructions of each frame's lookup).
thread_local LocalRule t_rules[1 << kLocalRuleBits];
thread_local uint64_t t_shared_captures = 0;  // captures that took a parent's frames
thread_local StackBounds t_bounds;            // trivial type: no TLS init guard on the hot path

const StackBounds& stack_bounds() {
  StackBounds& b = t_bounds;
  if (!b.init) b = query_stack_bounds();
  return b;
}

// The unwinder, inlined into each entry point so that the registers it starts from are that
// function's own (its CFI at `rip` describes its frame). With `own`, every frame is also kept
// there with its state; with `parent` (the capture of an op this one is nested in), unwinding
// stops at the first frame both share among the parent's live ones, and the parent's frames
// from there on are taken as they are: below the parent's RecordFunction the stacks differ,
// above it the frames are the same live frames, their return addresses and saved registers
// unchanged, so unwinding them again would give the same result.
__attribute__((always_inline, no_sanitize("address"))) inline int unwind_frames(
    uint64_t rip, uint64_t rsp, uint64_t rbp, void** out, int max_depth, MemoLevel* own,
    MemoFrame* own_frames, const MemoLevel* parent, const MemoFrame* parent_frames,
    uint64_t owner) {
  const StackBounds& b = stack_bounds();
  if (!b.ok || rsp < b.lo || rsp >= b.hi) return backtrace_from_caller(out, max_depth);
  // Kept in registers: the stores into `out` and `own_frames` below could alias them.
  const uint64_t lo = b.lo;
  const uint64_t hi = b.hi;
  // A parent whose RecordFunction is not above us is not a caller of ours.
  if (parent && parent->live_above <= rsp) parent = nullptr;
  const uint64_t live_above = parent ? parent->live_above : ~uint64_t{0};
  const int parent_n = parent ? parent->n : 0;
  const bool parent_cut = parent && parent->cut;
  Slot* table = slots();
  LocalRule* local = t_rules;
  bool rbp_known = true;
  uint64_t key = rip;
  int n = 0;
  int pi = 0;  // the parent's first frame not below the current CFA
  bool cut = true;
  while (n < max_depth) {
    const Rule r = local_rule_for(local, table, key);
    uint64_t cfa;
    bool ok = true;
    switch (r.cfa) {
      case kCfaRsp:
        cfa = rsp + r.cfa_off;
        break;
      case kCfaRbp:
        ok = rbp_known;
        cfa = rbp + r.cfa_off;
        break;
      case kCfaRbpDeref: {
        const uint64_t at = rbp + r.cfa_off;
        ok = rbp_known && at >= rsp && at + 8 <= hi;
        cfa = ok ? load_word(at) : 0;
        break;
      }
      default:  // outermost frame, or no rule
        ok = false;
        cfa = 0;
    }
    // The caller's frame lies above this one, on this thread's stack: every read below is
    // inside [rsp, hi), which is mapped.
    if (!ok || cfa < rsp + 8 || cfa > hi) {
      cut = false;
      break;
    }
    const uint64_t ra = load_word(cfa - 8);
    if (r.rbp == kRbpSaved) {
      const uint64_t at = cfa + r.rbp_off;
      if (at < rsp || at + 8 > hi) {
        cut = false;
        break;
      }
      rbp = load_word(at);
    } else if (r.rbp == kRbpLost) {
      rbp_known = false;
    }
    rsp = cfa;
    if (ra == 0) {
      cut = false;
      break;
    }
    out[n] = reinterpret_cast<void*>(ra);
    if (own_frames) own_frames[n] = MemoFrame{ra, cfa, rbp, rbp_known};
    ++n;
    key = ra - 1;  // the call instruction, which may be the last of its function
    if (parent && cfa > live_above) {
      while (pi < parent_n && parent_frames[pi].cfa < cfa) ++pi;
      if (pi == parent_n) {
        parent = nullptr;
        continue;
      }
      const MemoFrame& f = parent_frames[pi];
      if (f.cfa != cfa || f.ra != ra || f.rbp_known != rbp_known || (rbp_known && f.rbp != rbp))
        continue;
      // From here on the stack is the parent's.
      ++t_shared_captures;
      const int take = std::min(parent_n - pi - 1, max_depth - n);
      for (int i = 0; i < take; ++i) {
        const MemoFrame& pf = parent_frames[pi + 1 + i];
        out[n + i] = reinterpret_cast<void*>(pf.ra);
        if (own_frames) own_frames[n + i] = pf;
      }
      n += take;
      if (n == max_depth || !parent_cut) {
        cut = n == max_depth || parent_cut;
        break;
      }
      // The parent's capture stopped at its own max_depth before the stack ended, and this
      // one is not as deep yet: unwind on from the parent's last frame.
      const MemoFrame& last = parent_frames[parent_n - 1];
      rsp = last.cfa;
      key = last.ra - 1;
      rbp = last.rbp;
      rbp_known = last.rbp_known != 0;
      parent = nullptr;
    }
  }
  if (own) {
    own->n = n;
    own->cut = cut;
    own->live_above = owner >= lo && owner < hi ? owner : ~uint64_t{0};
  }
  return n;
}

#endif  // PTPROF_CFI_UNWINDER

}  // namespace

// Reads of other frames' stack slots are deliberate, so AddressSanitizer must not instrument
// them (a saved register next to a redzone is not a bug).
__attribute__((noinline, no_sanitize("address"))) int capture_stack(void** out, int max_depth) {
  if (max_depth <= 0) return 0;
#ifdef PTPROF_CFI_UNWINDER
  UnwindStart here;
  unwind_start_here(&here);
  return unwind_frames(here.rip, here.rsp, here.rbp, out, max_depth, nullptr, nullptr, nullptr,
                       nullptr, 0);
#else
  return backtrace_from_caller(out, max_depth);
#endif
}

__attribute__((noinline, no_sanitize("address"))) int capture_stack_nested(
    void** out, int max_depth, StackMemo* memo, const NestedOp& op, const UnwindStart* from) {
  if (max_depth <= 0) return 0;
#ifdef PTPROF_CFI_UNWINDER
  UnwindStart here;
  unwind_start_here(&here);
  // `from` is a caller's, so its frame lies above this one's on the same stack.
  if (from && from->rip != 0 && from->rsp > here.rsp) here = *from;
  MemoLevel* own = nullptr;
  MemoFrame* own_frames = nullptr;
  const MemoLevel* parent = nullptr;
  const MemoFrame* parent_frames = nullptr;
  if (memo && max_depth <= memo->max_depth && op.level < StackMemo::kLevels && op.id != 0) {
    own = &memo->levels[op.level];
    own->id = 0;  // until it is complete
    own_frames = memo->frames.get() + op.level * memo->max_depth;
    if (op.level > 0 && op.parent_id != 0 && memo->levels[op.level - 1].id == op.parent_id) {
      parent = &memo->levels[op.level - 1];
      parent_frames = own_frames - memo->max_depth;
    }
  }
  const int n = unwind_frames(here.rip, here.rsp, here.rbp, out, max_depth, own, own_frames, parent,
                              parent_frames, reinterpret_cast<uint64_t>(op.owner));
  if (own) own->id = op.id;
  return n;
#else
  (void)memo;
  (void)op;
  (void)from;
  return backtrace_from_caller(out, max_depth);
#endif
}

void warm_up_stack_capture() {
#ifdef PTPROF_CFI_UNWINDER
  slots();
  stack_bounds();
#endif
}

uint64_t shared_stack_captures_on_this_thread() {
#ifdef PTPROF_CFI_UNWINDER
  return t_shared_captures;
#else
  return 0;
#endif
}

StackCaptureStats stack_capture_stats() {
  const RuleCacheStats rules = rule_cache_stats();
  StackCaptureStats s;
  s.rule_misses = rules.misses;
  s.unsupported = rules.unsupported;
  s.fallbacks = g_fallbacks.load(std::memory_order_relaxed);
  return s;
}

}  // namespace ptprof::detail
