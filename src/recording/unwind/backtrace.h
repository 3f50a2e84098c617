// backtrace.h: stacks through libgcc's _Unwind_Backtrace, the reference the tests compare the
// CFI unwinder with and its fallback where it cannot run.
#pragma once

#include <unwind.h>

namespace ptprof::detail::unwind {

struct BacktraceState {
  void** out;
  int n;
  int max;
  int skip;  // frames left out first (the caller of _Unwind_Backtrace is the first one)
};

// _Unwind_Backtrace's callback: stores each frame's ip into the BacktraceState `arg`.
_Unwind_Reason_Code backtrace_frame(_Unwind_Context* ctx, void* arg);

}  // namespace ptprof::detail::unwind
