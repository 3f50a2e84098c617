// stack_bounds.h: the calling thread's stack, which bounds every read of the unwinder.
#pragma once

#include <cstdint>

namespace ptprof::detail::unwind {

struct StackBounds {
  uint64_t lo;
  uint64_t hi;
  bool init;
  bool ok;  // false: pthread did not say (then captures fall back to _Unwind_Backtrace)
};

// Asks pthread for the calling thread's stack: once per thread, so out of line. The unwinder
// keeps the answer in a thread_local of its own translation unit (unwinder.cpp).
StackBounds query_stack_bounds();

// A plain load (no memcpy call an AddressSanitizer build would intercept); stack slots are
// 8-byte aligned.
__attribute__((always_inline, no_sanitize("address"))) inline uint64_t load_word(uint64_t addr) {
  return *reinterpret_cast<const uint64_t*>(addr);
}

}  // namespace ptprof::detail::unwind
