// stack_memo.h: what StackMemo (stack_capture.h) keeps of the captures of the ops open on a
// thread, for the ops nested in them.
#pragma once

#include <cstdint>
#include <memory>

#include "recording/stack_capture.h"
#include "recording/unwind/platform.h"

namespace ptprof::detail {

namespace unwind {

// One captured frame with the unwinder's state right after it: enough to recognise the same
// frame in a later capture and to unwind on from it.
struct MemoFrame {
  uint64_t ra;
  uint64_t cfa;
  uint64_t rbp;
  uint64_t rbp_known;
};

// A capture remembered for the ops nested in it (see StackMemo).
struct MemoLevel {
  uint64_t id = 0;          // the op's; 0: nothing remembered
  uint64_t live_above = 0;  // frames whose CFA is above this address stay live while it is open
  int n = 0;
  bool cut = false;  // stopped at max_depth, not at the end of the stack
};

}  // namespace unwind

class StackMemo {
 public:
  static constexpr uint32_t kLevels = 32;
#ifdef PTPROF_CFI_UNWINDER
  explicit StackMemo(int max_depth) : max_depth(max_depth) {}
  const int max_depth;
  unwind::MemoLevel levels[kLevels];
  std::unique_ptr<unwind::MemoFrame[]> frames;  // kLevels * max_depth, level by level
#endif
};

}  // namespace ptprof::detail
