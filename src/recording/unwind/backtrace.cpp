#include "recording/unwind/backtrace.h"

#include <cstdint>

#include "recording/stack_capture.h"

namespace ptprof::detail {

namespace unwind {

_Unwind_Reason_Code backtrace_frame(_Unwind_Context* ctx, void* arg) {
  auto* s = static_cast<BacktraceState*>(arg);
  const uintptr_t ip = _Unwind_GetIP(ctx);
  if (ip == 0) return _URC_END_OF_STACK;
  if (s->skip > 0) {
    --s->skip;
    return _URC_NO_REASON;
  }
  if (s->n >= s->max) return _URC_END_OF_STACK;
  s->out[s->n++] = reinterpret_cast<void*>(ip);
  return _URC_NO_REASON;
}

}  // namespace unwind

__attribute__((noinline)) int capture_stack_reference(void** out, int max_depth) {
  if (max_depth <= 0) return 0;
  // The first frame _Unwind_Backtrace reports is this function's (called here, not in a helper
  // that a tail call could remove), so skipping one starts at the caller.
  unwind::BacktraceState s{out, 0, max_depth, 1};
  _Unwind_Backtrace(unwind::backtrace_frame, &s);
  return s.n;
}

}  // namespace ptprof::detail
