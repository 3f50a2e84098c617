// cupti_backend.h: the CUPTI implementation of GpuBackend, exposed for tests, which build it
// over a fake CuptiApi.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>

#include "gpu/cupti_api.h"
#include "gpu/gpu_backend.h"

namespace ptprof::detail {

// `api` must outlive the backend.
std::unique_ptr<GpuBackend> make_cupti_backend(const GpuOptions& options, CuptiApi& api);

// Records the calling thread's CUPTI thread id (the low 32 bits of pthread_self, which is what
// CUPTI writes into API records) -> OS thread id. The push hook does it once per thread.
void register_cupti_thread();
std::unordered_map<uint32_t, int64_t> cupti_thread_ids();

}  // namespace ptprof::detail
