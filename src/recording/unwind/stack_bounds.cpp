#include "recording/unwind/stack_bounds.h"

#include <pthread.h>

#include <cstddef>

namespace ptprof::detail::unwind {

StackBounds query_stack_bounds() {
  StackBounds b{0, 0, true, false};
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    void* addr = nullptr;
    std::size_t size = 0;
    if (pthread_attr_getstack(&attr, &addr, &size) == 0 && addr) {
      b.lo = reinterpret_cast<uint64_t>(addr);
      b.hi = b.lo + size;
      b.ok = true;
    }
    pthread_attr_destroy(&attr);
  }
  return b;
}

}  // namespace ptprof::detail::unwind
