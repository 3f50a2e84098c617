// Used when ptprof is built without CUPTI.
#include "gpu/gpu_backend.h"

namespace ptprof::detail {
namespace {

class NoGpuBackend final : public GpuBackend {
 public:
  std::string unavailable_reason() override {
    return "ptprof was built without CUPTI (the CUDA toolkit's CUPTI was not found at build time)";
  }
  Status enable() override { return Status(StatusCode::kUnavailable, unavailable_reason()); }
  void begin_window(int64_t) override {}
  void end_window(int64_t, int64_t, int64_t, Trace&, std::vector<Status>*) override {}
  void disable() override {}
  CorrelationHook push_hook() override { return nullptr; }
  CorrelationHook pop_hook() override { return nullptr; }
  void set_open_ops_hook(OpenOpsHook) override {}
  std::optional<double> launch_cost_ns() const override { return std::nullopt; }
};

}  // namespace

std::unique_ptr<GpuBackend> make_gpu_backend(const GpuOptions&) {
  return std::make_unique<NoGpuBackend>();
}

}  // namespace ptprof::detail
