// The production CuptiApi: straight calls into libcupti, the CUDA runtime and libtorch.
#include "gpu/cupti_api.h"

#include <dlfcn.h>
#include <torch/csrc/autograd/profiler_kineto.h>
#include <torch/csrc/profiler/orchestration/observer.h>

#include "trace/clock.h"

#include <cstring>
#include <mutex>
#include <vector>

namespace ptprof::detail {
namespace {

void CUPTIAPI ignore_callback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

class RealCuptiApi final : public CuptiApi {
 public:
  std::string driver_problem() override {
    // The runtime reports a missing driver only as "insufficient driver"; dlopen names it.
    void* h = ::dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (h == nullptr) {
      const char* why = ::dlerror();
      return std::string("no NVIDIA driver: libcuda.so.1 cannot be loaded (") +
             (why ? why : "unknown error") + ")";
    }
    ::dlclose(h);
    return "";
  }
  CUptiResult get_version(uint32_t* version) override { return cuptiGetVersion(version); }
  std::string result_string(CUptiResult result) override {
    const char* s = nullptr;
    if (cuptiGetResultString(result, &s) != CUPTI_SUCCESS || s == nullptr)
      return "CUPTI error " + std::to_string(static_cast<int>(result));
    return s;
  }
  cudaError_t device_count(int* count) override { return cudaGetDeviceCount(count); }
  std::string cuda_error_string(cudaError_t error) override {
    return std::string(cudaGetErrorName(error)) + " (" + cudaGetErrorString(error) + ")";
  }
  cudaError_t device_info(int device, GpuDeviceInfo* info) override {
    cudaDeviceProp p;
    std::memset(&p, 0, sizeof(p));
    const cudaError_t err = cudaGetDeviceProperties(&p, device);
    if (err != cudaSuccess) return err;
    DeviceProperties& d = info->props;
    d.id = device;
    d.name = p.name;
    d.total_global_mem = static_cast<int64_t>(p.totalGlobalMem);
    d.compute_major = p.major;
    d.compute_minor = p.minor;
    d.max_threads_per_block = p.maxThreadsPerBlock;
    d.max_threads_per_multiprocessor = p.maxThreadsPerMultiProcessor;
    d.regs_per_block = p.regsPerBlock;
    d.warp_size = p.warpSize;
    d.shared_mem_per_block = static_cast<int64_t>(p.sharedMemPerBlock);
    d.num_sms = p.multiProcessorCount;
    d.regs_per_multiprocessor = p.regsPerMultiprocessor;
    d.shared_mem_per_block_optin = static_cast<int64_t>(p.sharedMemPerBlockOptin);
    d.shared_mem_per_multiprocessor = static_cast<int64_t>(p.sharedMemPerMultiprocessor);
    info->reserved_shared_mem_per_block = static_cast<int64_t>(p.reservedSharedMemPerBlock);
    return cudaSuccess;
  }
  int runtime_version() override {
    int v = 0;
    return cudaRuntimeGetVersion(&v) == cudaSuccess ? v : 0;
  }
  int driver_version() override {
    int v = 0;
    return cudaDriverGetVersion(&v) == cudaSuccess ? v : 0;
  }
  cudaError_t synchronize_device(int device) override {
    int prev = -1;
    cudaError_t err = cudaGetDevice(&prev);
    if (err != cudaSuccess) return err;
    if (device < 0) device = prev;
    if (prev != device && (err = cudaSetDevice(device)) != cudaSuccess) return err;
    err = cudaDeviceSynchronize();
    if (prev != device) cudaSetDevice(prev);
    return err;
  }

  int64_t time_launches(int launches) override {
    // One stream and one byte per device the calibration ran on, kept for the process: they
    // are made once, outside any window (the first enable()).
    struct Target {
      int device = -1;
      cudaStream_t stream = nullptr;
      void* byte = nullptr;
    };
    static std::mutex mu;
    static std::vector<Target> targets;
    std::lock_guard<std::mutex> lock(mu);
    int device = -1;
    if (cudaGetDevice(&device) != cudaSuccess) return -1;
    Target* t = nullptr;
    for (Target& x : targets)
      if (x.device == device) t = &x;
    if (!t) {
      Target made;
      made.device = device;
      if (cudaStreamCreateWithFlags(&made.stream, cudaStreamNonBlocking) != cudaSuccess) return -1;
      if (cudaMalloc(&made.byte, 1) != cudaSuccess) {
        cudaStreamDestroy(made.stream);
        return -1;
      }
      targets.push_back(made);
      t = &targets.back();
    }
    const int64_t start = now_ns();
    for (int i = 0; i < launches; ++i)
      if (cudaMemsetAsync(t->byte, 0, 1, t->stream) != cudaSuccess) return -1;
    const int64_t spent = now_ns() - start;
    return cudaStreamSynchronize(t->stream) == cudaSuccess ? spent : -1;
  }

  bool torch_profiler_active() override {
    return torch::profiler::impl::profilerEnabled() ||
           torch::autograd::profiler::isProfilerEnabledInMainThread();
  }
  CUptiResult probe_subscriber(std::string* holder) override {
    CUpti_SubscriberHandle h = nullptr;
    const CUptiResult r = subscribe(&ignore_callback, &h, holder);
    if (r == CUPTI_SUCCESS) cuptiUnsubscribe(h);
    return r;
  }
  CUptiResult subscribe(CUpti_CallbackFunc fn, CUpti_SubscriberHandle* handle,
                        std::string* holder) override {
#if defined(CUPTI_API_VERSION) && CUPTI_API_VERSION >= 130000
    char old_name[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN + 1] = {0};
    CUpti_SubscriberParams params;
    std::memset(&params, 0, sizeof(params));
    params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
    params.subscriberName = "ptprof";
    params.oldSubscriberName = old_name;
    params.oldSubscriberSize = sizeof(old_name) - 1;
    const CUptiResult r = cuptiSubscribe_v2(handle, fn, nullptr, &params);
    if (r != CUPTI_SUCCESS) *holder = old_name;
    return r;
#else
    return cuptiSubscribe(handle, fn, nullptr);
#endif
  }
  CUptiResult unsubscribe(CUpti_SubscriberHandle handle) override {
    return cuptiUnsubscribe(handle);
  }
  CUptiResult enable_callback(CUpti_SubscriberHandle handle, CUpti_CallbackDomain domain,
                              CUpti_CallbackId cbid, bool enable) override {
    return cuptiEnableCallback(enable ? 1 : 0, handle, domain, cbid);
  }
  CUptiResult graph_node_id(CUgraphNode node, uint64_t* id) override {
    return cuptiGetGraphNodeId(node, id);
  }
  CUptiResult graph_id(CUgraph graph, uint32_t* id) override { return cuptiGetGraphId(graph, id); }

  CUptiResult register_timestamp_callback(CUpti_TimestampCallbackFunc fn) override {
    return cuptiActivityRegisterTimestampCallback(fn);
  }
  CUptiResult get_timestamp(uint64_t* timestamp) override {
    return cuptiGetTimestamp(timestamp);
  }
  CUptiResult register_callbacks(CUpti_BuffersCallbackRequestFunc request,
                                 CUpti_BuffersCallbackCompleteFunc complete) override {
    return cuptiActivityRegisterCallbacks(request, complete);
  }
  CUptiResult enable_kind(CUpti_ActivityKind kind) override {
    return cuptiActivityEnable(kind);
  }
  CUptiResult disable_kind(CUpti_ActivityKind kind) override {
    return cuptiActivityDisable(kind);
  }
  CUptiResult enable_api_record(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                bool enable) override {
    const uint8_t on = enable ? 1 : 0;
    return domain == CUPTI_CB_DOMAIN_DRIVER_API ? cuptiActivityEnableDriverApi(cbid, on)
                                                : cuptiActivityEnableRuntimeApi(cbid, on);
  }
  CUptiResult enable_cuda_event_device_timestamps(bool enable) override {
#if defined(CUPTI_API_VERSION) && CUPTI_API_VERSION >= 130000
    return cuptiActivityEnableCudaEventDeviceTimestamps(enable ? 1 : 0);
#else
    return CUPTI_ERROR_NOT_SUPPORTED;
#endif
  }
  CUptiResult flush_all(uint32_t flag) override {
    return cuptiActivityFlushAll(flag);
  }
  CUptiResult get_next_record(uint8_t* buffer, std::size_t valid_size,
                              CUpti_Activity** record) override {
    return cuptiActivityGetNextRecord(buffer, valid_size, record);
  }
  CUptiResult get_num_dropped(std::size_t* dropped) override {
    return cuptiActivityGetNumDroppedRecords(nullptr, 0, dropped);
  }
  const char* callback_name(CUpti_CallbackDomain domain, uint32_t cbid) override {
    const char* name = nullptr;
    return cuptiGetCallbackName(domain, cbid, &name) == CUPTI_SUCCESS ? name : nullptr;
  }

  CUptiResult push_external_id(uint64_t id) override {
    return cuptiActivityPushExternalCorrelationId(kPtprofCorrelationKind, id);
  }
  CUptiResult pop_external_id() override {
    return cuptiActivityPopExternalCorrelationId(kPtprofCorrelationKind, nullptr);
  }
};

}  // namespace

CuptiApi& real_cupti_api() {
  // Leaked on purpose: CUPTI may call back into ptprof during static destruction.
  static CuptiApi* api = new RealCuptiApi();
  return *api;
}

}  // namespace ptprof::detail
