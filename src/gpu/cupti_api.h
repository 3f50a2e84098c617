// cupti_api.h: the CUPTI, CUDA-runtime and torch-profiler calls the CUPTI backend makes, behind
// one interface, so tests can drive the backend without a GPU (they substitute a fake).
//
// real_cupti_api() is the production table. It is a stateless, process-lifetime object: the
// hot-path hooks and CUPTI's buffer callbacks may still reach it after a backend is gone.
#pragma once

#include <cuda_runtime_api.h>
#include <cupti.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "ptprof/trace.h"

namespace ptprof::detail {

// Our external-correlation kind: CUSTOM0 and CUSTOM1 belong to Kineto.
constexpr CUpti_ExternalCorrelationKind kPtprofCorrelationKind =
    CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2;

// A device's properties as the trace shows them, plus what only the occupancy calculator needs.
struct GpuDeviceInfo {
  DeviceProperties props;
  int64_t reserved_shared_mem_per_block = 0;
};

class CuptiApi {
 public:
  virtual ~CuptiApi() = default;

  // ---- availability ----
  // Empty when the CUDA driver library can be loaded, else why not.
  virtual std::string driver_problem() = 0;
  virtual CUptiResult get_version(uint32_t* version) = 0;
  virtual std::string result_string(CUptiResult result) = 0;
  virtual cudaError_t device_count(int* count) = 0;
  virtual std::string cuda_error_string(cudaError_t error) = 0;
  virtual cudaError_t device_info(int device, GpuDeviceInfo* info) = 0;
  virtual int runtime_version() = 0;  // 0 if unknown
  virtual int driver_version() = 0;   // 0 if unknown
  // Waits for `device` (-1: the calling thread's current one) to finish its work, leaving the
  // calling thread's current device as it was.
  virtual cudaError_t synchronize_device(int device) = 0;

  // ---- ptprof's own cost ----
  // Issues `launches` one-byte cudaMemsetAsync calls on a private non-blocking stream of the
  // calling thread's current device and returns the calls' CPU time in ns (the stream is
  // synchronized afterwards, untimed); -1 where a CUDA call failed. The backend times it
  // before and after enabling CUPTI: the difference is what tracing adds per launch.
  virtual int64_t time_launches(int launches) = 0;
  // ---- other profilers ----
  // True while libtorch's own profiler (torch.profiler / autograd profiler, i.e. Kineto) runs.
  virtual bool torch_profiler_active() = 0;
  // Subscribes and unsubscribes at once, to learn whether another tool holds CUPTI. On
  // failure *holder gets the holder's name when CUPTI tells it.
  virtual CUptiResult probe_subscriber(std::string* holder) = 0;

  // ---- callback API (lean mode) ----
  // Subscribes `fn` as "ptprof"; on failure *holder gets the holder's name when CUPTI tells it.
  virtual CUptiResult subscribe(CUpti_CallbackFunc fn, CUpti_SubscriberHandle* handle,
                                std::string* holder) = 0;
  virtual CUptiResult unsubscribe(CUpti_SubscriberHandle handle) = 0;
  virtual CUptiResult enable_callback(CUpti_SubscriberHandle handle, CUpti_CallbackDomain domain,
                                      CUpti_CallbackId cbid, bool enable) = 0;
  // CUPTI's ids of a graph node and of a graph: what GPU records' graphNodeId and graphId hold.
  // Called from CUPTI's resource callbacks.
  virtual CUptiResult graph_node_id(CUgraphNode node, uint64_t* id) = 0;
  virtual CUptiResult graph_id(CUgraph graph, uint32_t* id) = 0;

  // ---- activity API ----
  virtual CUptiResult register_timestamp_callback(CUpti_TimestampCallbackFunc fn) = 0;
  virtual CUptiResult get_timestamp(uint64_t* timestamp) = 0;
  virtual CUptiResult register_callbacks(CUpti_BuffersCallbackRequestFunc request,
                                         CUpti_BuffersCallbackCompleteFunc complete) = 0;
  virtual CUptiResult enable_kind(CUpti_ActivityKind kind) = 0;
  virtual CUptiResult disable_kind(CUpti_ActivityKind kind) = 0;
  // Per-API switches of RUNTIME (domain RUNTIME_API) and DRIVER (DRIVER_API) records.
  virtual CUptiResult enable_api_record(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                        bool enable) = 0;
  virtual CUptiResult enable_cuda_event_device_timestamps(bool enable) = 0;
  virtual CUptiResult flush_all(uint32_t flag) = 0;
  virtual CUptiResult get_next_record(uint8_t* buffer, std::size_t valid_size,
                                      CUpti_Activity** record) = 0;
  virtual CUptiResult get_num_dropped(std::size_t* dropped) = 0;
  // The API's name for a runtime/driver callback id ("cudaLaunchKernel_v7000"), or null.
  virtual const char* callback_name(CUpti_CallbackDomain domain, uint32_t cbid) = 0;

  // ---- hot path (every op entry/exit) ----
  virtual CUptiResult push_external_id(uint64_t id) = 0;
  virtual CUptiResult pop_external_id() = 0;
};

CuptiApi& real_cupti_api();

}  // namespace ptprof::detail
