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

}  // namespace ptprof::detail
