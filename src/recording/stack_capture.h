// stack_capture.h: with_stack's native stack capture at op entry.
//
// Capture is on the hot path (every op, any thread, inside RecordFunction callbacks), so it
// only walks the stack with cached unwind rules and stores return addresses; turning them into
// names happens once per distinct address when a window closes (recording/symbolizer.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ptprof::detail {

// Writes the return addresses of the calling thread's stack into out[0..n), innermost first,
// starting with the return address into the caller of capture_stack, and returns n <=
// max_depth. A deeper stack is cut at max_depth (innermost frames kept): pass one more than
// you keep to tell a cut stack from one exactly that deep.
//
// x86-64 Linux: a DWARF CFI unwinder (.eh_frame, so no frame pointers needed) whose per-address
// rules are cached process-wide; after warm-up a capture takes no lock and does not allocate.
// The first capture on a thread asks pthread for its stack bounds (every read is checked
// against them). Elsewhere, and on stacks outside those bounds (sigaltstack, fibers), it
// falls back to _Unwind_Backtrace.
int capture_stack(void** out, int max_depth);

// The stacks of the ops open on one thread, kept for the ops nested in them. Below an op's
// RecordFunction a nested op's stack is its own; above it, it is the open op's, the same live
// frames: a nested op unwinds its own frames only and takes the rest from the memo. Owned by
// one thread, used by it alone.
class StackMemo;
// For captures of at most `max_depth` frames; nullptr when out of memory.
StackMemo* new_stack_memo(int max_depth);
void delete_stack_memo(StackMemo* memo);

struct NestedOp {
  uint32_t level = 0;           // how many ops are open on this thread around this one
  uint64_t parent_id = 0;       // id of the innermost of them (0: none)
  uint64_t id = 0;              // this op's id, nonzero and never reused
  const void* owner = nullptr;  // the op's RecordFunction (live frames are those above it)
};

// Where an unwind starts: a function's registers at one point in it, taken by
// unwind_start_here() inlined into that function, while that function is still running.
struct UnwindStart {
  uint64_t rip = 0;  // 0: none taken (not x86-64 Linux)
  uint64_t rsp = 0;
  uint64_t rbp = 0;
};

// The registers of the function this is inlined into, at this point: its unwind rules at
// `rip` describe its own frame, so an unwind from them starts with its caller.
__attribute__((always_inline)) inline void unwind_start_here(UnwindStart* r) {
#if defined(__x86_64__) && defined(__linux__)
  asm volatile(
      "leaq 0(%%rip), %0\n\t"
      "movq %%rsp, %1\n\t"
      "movq %%rbp, %2"
      : "=r"(r->rip), "=r"(r->rsp), "=r"(r->rbp));
#else
  r->rip = 0;
#endif
}

// capture_stack for the op `op`, the same frames, through `memo` (nullptr: none): it takes
// the frames it shares with the op it is nested in from the memo, and leaves its own there.
// With `from` (taken in a function that is running this call), the frames start at that
// function's caller: the frames between are neither unwound nor returned. Where the fast
// unwinder cannot run, the frames start at the caller of capture_stack_nested, as without.
int capture_stack_nested(void** out, int max_depth, StackMemo* memo, const NestedOp& op,
                         const UnwindStart* from = nullptr);

// The same stack through libgcc's _Unwind_Backtrace (slow: no caching of rules). The fallback
// of capture_stack and the reference the tests compare it against.
int capture_stack_reference(void** out, int max_depth);

// Allocates the rule cache now rather than at the first capture (call at session start).
void warm_up_stack_capture();

struct StackCaptureStats {
  uint64_t rule_misses = 0;  // addresses whose rule was computed from .eh_frame
  uint64_t unsupported = 0;  // addresses without a usable rule (a capture ends there)
  uint64_t fallbacks = 0;    // captures that went through _Unwind_Backtrace
};
StackCaptureStats stack_capture_stats();

// How many capture_stack_nested calls on this thread took frames from a parent's capture.
uint64_t shared_stack_captures_on_this_thread();

}  // namespace ptprof::detail
