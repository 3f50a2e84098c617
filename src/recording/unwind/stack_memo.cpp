#include "recording/unwind/stack_memo.h"

#include <new>

namespace ptprof::detail {

StackMemo* new_stack_memo(int max_depth) {
#ifdef PTPROF_CFI_UNWINDER
  auto* m = new (std::nothrow) StackMemo(max_depth);
  if (!m) return nullptr;
  m->frames.reset(new (std::nothrow) unwind::MemoFrame[StackMemo::kLevels * max_depth]);
  if (!m->frames) {
    delete m;
    return nullptr;
  }
  return m;
#else
  (void)max_depth;
  return nullptr;
#endif
}

void delete_stack_memo(StackMemo* memo) {
  delete memo;
}

}  // namespace ptprof::detail
