// The caching allocator's calls through libtorch_cuda (torch/csrc/cuda/memory_snapshot.h,
// c10/cuda/CUDACachingAllocator.h). Built only where libtorch has CUDA (PTPROF_HAVE_TORCH_CUDA).
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <torch/csrc/cuda/memory_snapshot.h>

#include <exception>
#include <mutex>

#include "recording/cuda_allocator_api.h"

namespace ptprof::detail {

namespace {

class TorchCudaAllocator final : public CudaAllocatorApi {
 public:
  std::string unavailable_reason() override {
    try {
      if (c10::cuda::device_count() == 0) return "no CUDA device is visible";
    } catch (const std::exception& e) {
      return std::string("CUDA could not be initialised: ") + e.what();
    }
    return "";
  }

  Status record_history(bool enabled, std::size_t max_entries, bool cpp_stacks) override {
    try {
      // The bool overload: context of allocations (trace_alloc_record_context) and of the
      // state's blocks (record_context), C++ frames when asked.
      torch::cuda::_record_memory_history(enabled, /*record_context=*/enabled,
                                          static_cast<int64_t>(max_entries),
                                          /*trace_alloc_record_context=*/enabled,
                                          /*record_cpp_context=*/enabled && cpp_stacks);
      return ok_status();
    } catch (const std::exception& e) {
      return Status(StatusCode::kInternal,
                    std::string("torch::cuda::_record_memory_history failed: ") + e.what());
    }
  }

  StatusOr<std::string> snapshot_pickle() override {
    try {
      return torch::cuda::_memory_snapshot_pickled();
    } catch (const std::exception& e) {
      return Status(StatusCode::kInternal,
                    std::string("torch::cuda::_memory_snapshot_pickled failed: ") + e.what());
    }
  }

  Status attach_oom_observer(OomObserverFn fn) override {
    static std::once_flag once;
    Status st;
    try {
      std::call_once(once, [&] {
        c10::cuda::CUDACachingAllocator::attachOutOfMemoryObserver(
            [fn](int64_t device, size_t allocated, size_t device_total, size_t device_free) {
              fn(device, allocated, device_total, device_free);
            });
      });
    } catch (const std::exception& e) {
      st = Status(StatusCode::kInternal,
                  std::string("attaching the allocator's OOM observer failed: ") + e.what());
    }
    return st;
  }
};

}  // namespace

std::unique_ptr<CudaAllocatorApi> make_cuda_allocator_api() {
  return std::make_unique<TorchCudaAllocator>();
}

}  // namespace ptprof::detail
