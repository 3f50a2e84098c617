// Built where libtorch has no CUDA: CUDA memory snapshots are unavailable, and say why.
#include "recording/cuda_allocator_api.h"

namespace ptprof::detail {

namespace {

class NoCudaAllocator final : public CudaAllocatorApi {
 public:
  std::string unavailable_reason() override {
    return "ptprof was built against a libtorch without CUDA (no libtorch_cuda)";
  }
  Status record_history(bool, std::size_t, bool) override { return unavailable(); }
  StatusOr<std::string> snapshot_pickle() override { return unavailable(); }
  Status attach_oom_observer(OomObserverFn) override { return unavailable(); }

 private:
  Status unavailable() { return Status(StatusCode::kUnavailable, unavailable_reason()); }
};

}  // namespace

std::unique_ptr<CudaAllocatorApi> make_cuda_allocator_api() {
  return std::make_unique<NoCudaAllocator>();
}

}  // namespace ptprof::detail
