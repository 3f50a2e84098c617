// cuda_allocator_api.h: the seam between ptprof and libtorch_cuda's caching allocator: the
// few calls CUDA memory snapshots need (recording its history, its pickled snapshot, its OOM
// observer). cuda_allocator_api_torch.cpp makes them where libtorch has CUDA;
// cuda_allocator_api_none.cpp says why not elsewhere; tests put a fake in their place.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "base/status.h"

namespace ptprof::detail {

// c10::cuda::CUDACachingAllocator::OutOfMemoryObserver's arguments: the device, the bytes
// the allocator had allocated, the device's total, and what CUDA reported free.
using OomObserverFn = void (*)(int64_t device, std::size_t allocated, std::size_t device_total,
                               std::size_t device_free);

class CudaAllocatorApi {
 public:
  virtual ~CudaAllocatorApi() = default;
  // "" when the calls below can be made (libtorch with CUDA, a GPU visible); else why not.
  virtual std::string unavailable_reason() = 0;
  // torch::cuda::_record_memory_history: on (every action, with its stack when cpp_stacks,
  // at most max_entries per device) or off.
  virtual Status record_history(bool enabled, std::size_t max_entries, bool cpp_stacks) = 0;
  // torch::cuda::_memory_snapshot_pickled().
  virtual StatusOr<std::string> snapshot_pickle() = 0;
  // The allocator keeps its observers for the life of the process and has no way to remove
  // one: `fn` is a plain function, attached at most once however often this is called.
  virtual Status attach_oom_observer(OomObserverFn fn) = 0;
};

std::unique_ptr<CudaAllocatorApi> make_cuda_allocator_api();

}  // namespace ptprof::detail
