// The CUPTI Activity API backend.
//
// Lifecycle (driven by the session): enable() at warmup subscribes nothing (the Activity API
// needs no subscriber; a probe only checks that no other tool holds CUPTI), registers our
// timestamp and buffer callbacks and enables the activity kinds, so CUPTI's start-up cost falls
// before the window. begin_window() drops what warmup collected. end_window() synchronizes the
// GPU, force-flushes, decodes every completed buffer and hands the records to the correlator,
// which keeps only the window's. disable() turns the kinds off again.
//
// CUPTI's buffer callbacks and the hot-path hooks are plain C functions, so they reach the
// backend's pool and the API table through globals. Only one session (so one backend) is active
// at a time in a process.
#include "gpu/cupti_backend.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "trace/clock.h"
#include "gpu/cupti_buffers.h"
#include "gpu/cupti_clock.h"
#include "gpu/cupti_correlator.h"
#include "gpu/cupti_decode.h"

namespace ptprof::detail {
namespace {

std::atomic<BufferPool*> g_pool{nullptr};
std::atomic<CuptiApi*> g_hot_api{nullptr};

struct ThreadIds {
  std::mutex mu;
  std::unordered_map<uint32_t, int64_t> ids;
};
ThreadIds& thread_ids() {
  static ThreadIds* t = new ThreadIds();  // leaked: threads may register during exit
  return *t;
}

void CUPTIAPI on_buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *max_records = 0;  // as many as fit
  BufferPool* pool = g_pool.load(std::memory_order_acquire);
  if (pool == nullptr) {
    *buffer = nullptr;
    *size = 0;
    return;
  }
  pool->request(buffer, size);
}

void CUPTIAPI on_buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid_size) {
  BufferPool* pool = g_pool.load(std::memory_order_acquire);
  // A buffer of a pool that is gone stays leaked: freeing memory we cannot vouch for is worse.
  if (pool != nullptr) pool->complete(buffer, valid_size);
}

uint64_t CUPTIAPI cupti_timestamp() {
  return static_cast<uint64_t>(now_ns());
}

void push_correlation(uint64_t id) {
  thread_local bool registered = false;
  if (__builtin_expect(!registered, 0)) {
    register_cupti_thread();
    registered = true;
  }
  if (CuptiApi* api = g_hot_api.load(std::memory_order_relaxed)) api->push_external_id(id);
}

void pop_correlation(uint64_t) {
  if (CuptiApi* api = g_hot_api.load(std::memory_order_relaxed)) api->pop_external_id();
}

const char* kind_name(CUpti_ActivityKind k) {
  switch (k) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      return "CONCURRENT_KERNEL";
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      return "MEMCPY";
    case CUPTI_ACTIVITY_KIND_MEMSET:
      return "MEMSET";
    case CUPTI_ACTIVITY_KIND_RUNTIME:
      return "RUNTIME";
    case CUPTI_ACTIVITY_KIND_DRIVER:
      return "DRIVER";
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
      return "SYNCHRONIZATION";
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
      return "EXTERNAL_CORRELATION";
    case CUPTI_ACTIVITY_KIND_OVERHEAD:
      return "OVERHEAD";
    default:
      return "?";
  }
}

// Without these the trace has no kernels, no copies, or nothing to join them to ops with.
constexpr CUpti_ActivityKind kRequiredKinds[] = {
    CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
    CUPTI_ACTIVITY_KIND_RUNTIME,
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
    CUPTI_ACTIVITY_KIND_MEMCPY,
    CUPTI_ACTIVITY_KIND_MEMSET,
};
constexpr CUpti_ActivityKind kOptionalKinds[] = {
    CUPTI_ACTIVITY_KIND_DRIVER,
    CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
    CUPTI_ACTIVITY_KIND_OVERHEAD,
};

// Calls made very often that would only clutter the trace (Kineto turns off the same).
constexpr std::pair<CUpti_CallbackDomain, CUpti_CallbackId> kQuietApis[] = {
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaSetDevice_v3020},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuKernelGetAttribute},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxGetState},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent},
};

std::string size_text(std::size_t bytes) {
  if (bytes >= (std::size_t{1} << 20) && bytes % (std::size_t{1} << 20) == 0)
    return std::to_string(bytes >> 20) + " MiB";
  return std::to_string(bytes) + " bytes";
}

// A CUPTI timestamp more than this far from our clock means our callback is not in use.
constexpr int64_t kSameClockToleranceNs = 1000000;

std::vector<std::unique_ptr<BufferPool>>& retired_pools() {
  // Pools of destroyed backends: CUPTI may still call back into one from its own thread, so
  // they are emptied but never deleted.
  static auto* pools = new std::vector<std::unique_ptr<BufferPool>>();
  return *pools;
}

class CuptiBackend final : public GpuBackend {
 public:
  CuptiBackend(const GpuOptions& options, CuptiApi& api) : options_(options), api_(api) {}

  ~CuptiBackend() override {
    disable();
    CuptiApi* expected = &api_;
    g_hot_api.compare_exchange_strong(expected, nullptr);
    if (pool_) {
      BufferPool* mine = pool_.get();
      g_pool.compare_exchange_strong(mine, nullptr);
      pool_->trim();
      static std::mutex mu;
      std::lock_guard<std::mutex> lock(mu);
      retired_pools().push_back(std::move(pool_));
    }
  }

  std::string unavailable_reason() override {
    if (!checked_) {
      checked_ = true;
      reason_ = check_availability();
    }
    return reason_;
  }

  bool enable(std::string* error) override {
    if (enabled_) return true;
    const std::string reason = unavailable_reason();
    if (!reason.empty()) {
      *error = reason;
      return false;
    }
    if (api_.torch_profiler_active()) {
      *error =
          "CUPTI is in use by libtorch's own profiler (torch.profiler / "
          "torch::autograd::profiler, i.e. Kineto), which is active in this process; stop it "
          "before asking ptprof for CUDA activity";
      return false;
    }
    std::string holder;
    CUptiResult r = api_.probe_subscriber(&holder);
    if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
      // An unnamed holder is most often libtorch's own profiler from earlier in this process:
      // its Kineto keeps CUPTI's subscriber after it stops (seen with torch 2.11 on an H200)
      // unless TEARDOWN_CUPTI=1 was in the environment when it ran.
      const bool unnamed = holder.empty() || holder.find("<not provided>") != std::string::npos;
      *error = "CUPTI is already in use by another profiler (" +
               (unnamed ? std::string("libtorch's own profiler if it ran earlier in this "
                                      "process, which keeps CUPTI unless TEARDOWN_CUPTI=1 is set "
                                      "before it starts; or Nsight Systems, Nsight Compute, "
                                      "cuda-gdb, compute-sanitizer")
                        : holder) +
               "): cuptiSubscribe returned CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED";
      return false;
    }
    if (r != CUPTI_SUCCESS) {
      *error = "CUPTI could not be initialized: cuptiSubscribe failed: " + api_.result_string(r);
      return false;
    }

    if (!pool_) {
      pool_ = std::make_unique<BufferPool>(
          options_.buffer_size_bytes, options_.max_buffer_bytes,
          /*may_refuse=*/version_ >= BufferPool::kFirstVersionAcceptingRefusal);
    }
    // The timestamp callback must be in place before any kind is enabled.
    r = api_.register_timestamp_callback(&cupti_timestamp);
    timestamp_callback_ = r == CUPTI_SUCCESS;
    if (!timestamp_callback_) {
      pending_warnings_.push_back(
          "CUPTI refused ptprof's timestamp callback (" + api_.result_string(r) +
          "); GPU times are aligned to CPU times with a measured clock offset instead");
    }
    g_pool.store(pool_.get(), std::memory_order_release);
    g_hot_api.store(&api_, std::memory_order_relaxed);
    r = api_.register_callbacks(&on_buffer_requested, &on_buffer_completed);
    if (r != CUPTI_SUCCESS) {
      *error = "cuptiActivityRegisterCallbacks failed: " + api_.result_string(r);
      return false;
    }
    for (CUpti_ActivityKind k : kRequiredKinds) {
      r = api_.enable_kind(k);
      if (r != CUPTI_SUCCESS) {
        *error = std::string("cuptiActivityEnable(CUPTI_ACTIVITY_KIND_") + kind_name(k) +
                 ") failed: " + api_.result_string(r);
        disable_kinds();
        return false;
      }
      enabled_kinds_.push_back(k);
    }
    for (CUpti_ActivityKind k : kOptionalKinds) {
      // As Kineto does on CUDA 13: device-side CUDA event timestamps before sync records.
      if (k == CUPTI_ACTIVITY_KIND_SYNCHRONIZATION) api_.enable_cuda_event_device_timestamps(true);
      r = api_.enable_kind(k);
      if (r == CUPTI_SUCCESS) {
        enabled_kinds_.push_back(k);
      } else {
        pending_warnings_.push_back(std::string("CUPTI activity kind ") + kind_name(k) +
                                    " could not be enabled (" + api_.result_string(r) +
                                    "); those records are missing from the trace");
      }
    }
    for (const auto& [domain, cbid] : kQuietApis) api_.enable_api_record(domain, cbid, false);
    if (devices_.empty()) query_devices();
    register_cupti_thread();
    enabled_ = true;
    return true;
  }

  void begin_window(int64_t) override {
    if (!enabled_) return;
    // Last registration wins process-wide; take the buffers back if another profiler took
    // them while it ran and has finished since.
    if (!api_.torch_profiler_active())
      api_.register_callbacks(&on_buffer_requested, &on_buffer_completed);
    pool_->recycle_completed();
    pool_->take_refused();
    std::size_t ignored = 0;
    api_.get_num_dropped(&ignored);  // the count resets on each read
    have_start_pair_ = measure(&start_pair_);
  }

  void end_window(int64_t start_ns, int64_t end_ns, int64_t unix_offset_ns, Trace& trace,
                  std::vector<std::string>* warnings) override {
    for (std::string& w : pending_warnings_) warnings->push_back(std::move(w));
    pending_warnings_.clear();
    if (!enabled_) return;
    if (api_.torch_profiler_active()) {
      warnings->push_back(
          "libtorch's own profiler became active during the window; it owns CUPTI's activity "
          "buffers while it runs, so GPU events of this window may be missing");
    }

    // Kernels launched in the window must finish and their records reach us. FlushAll calls
    // on_buffer_completed on this thread, which takes the pool mutex: none is held here.
    api_.synchronize_device(-1);
    for (int32_t d : seen_devices_) api_.synchronize_device(d);
    api_.flush_all(0);
    api_.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    std::size_t cupti_dropped = 0;
    api_.get_num_dropped(&cupti_dropped);
    const uint64_t refused = pool_->take_refused();

    ActivityDecoder decoder(trace, devices_, [this](CUpti_CallbackDomain d, uint32_t cbid) {
      return api_.callback_name(d, cbid);
    });
    Correlator correlator;
    uint64_t overflow_dropped = 0;
    uint64_t invalid = 0;
    for (const CompletedBuffer& b : pool_->take_completed()) {
      CUpti_Activity* rec = nullptr;
      CUptiResult r;
      while ((r = api_.get_next_record(b.data, b.valid_size, &rec)) == CUPTI_SUCCESS) {
        if (b.overflow) {
          ++overflow_dropped;
          continue;
        }
        DecodedActivity a;
        ExternalCorrelationRecord x;
        switch (decoder.decode(*rec, &a, &x)) {
          case RecordRole::Activity:
            if (a.event.device >= 0) seen_devices_.insert(a.event.device);
            correlator.add(a);
            break;
          case RecordRole::ExternalCorrelation:
            correlator.add_external(x);
            break;
          case RecordRole::Skipped:
            break;
        }
      }
      // MAX_LIMIT_REACHED is the normal end; INVALID_KIND an incomplete record.
      if (r != CUPTI_ERROR_MAX_LIMIT_REACHED) ++invalid;
      pool_->recycle(b.data);
    }

    CorrelationWindow window;
    window.start_ns = start_ns;
    window.end_ns = end_ns;
    window.unix_offset_ns = unix_offset_ns;
    window.clock = choose_clock(correlator, start_ns, end_ns, warnings);
    const CorrelationStats st = correlator.finish(window, cupti_thread_ids(), trace);

    trace.devices.clear();
    for (const GpuDeviceInfo& d : devices_) trace.devices.push_back(d.props);
    trace.metadata["cupti_version"] = std::to_string(version_);
    trace.metadata["cuda_runtime_version"] = std::to_string(api_.runtime_version());
    trace.metadata["cuda_driver_version"] = std::to_string(api_.driver_version());
    trace.metadata["ptprof_gpu_clock"] =
        window.clock.is_identity() ? "\"cupti_timestamp_callback\"" : "\"measured_offset\"";

    const uint64_t lost = cupti_dropped + overflow_dropped;
    if (lost > 0 || refused > 0) {
      trace.metadata["ptprof_gpu_dropped_records"] = std::to_string(lost);
      trace.metadata["ptprof_gpu_buffers_refused"] = std::to_string(refused);
      warnings->push_back(
          "GPU activity records were lost: " + std::to_string(lost) + " records dropped, " +
          std::to_string(refused) + " buffer requests refused at the cap of " +
          size_text(options_.max_buffer_bytes) +
          " of CUPTI buffers; the trace lacks some GPU events (shorten the window or raise "
          "the GPU buffer cap)");
    }
    if (invalid > 0) {
      warnings->push_back(std::to_string(invalid) +
                          " CUPTI buffers ended in an incomplete or invalid record");
    }
    if (st.gpu_starts_before_launch > 0) {
      warnings->push_back(std::to_string(st.gpu_starts_before_launch) +
                          " GPU activities start before the call that launched them: CUPTI's "
                          "clock and ptprof's disagree");
    }
    if (decoder.unknown_records() > 0) {
      trace.metadata["ptprof_gpu_unknown_records"] = std::to_string(decoder.unknown_records());
    }
  }

  void disable() override {
    if (!enabled_) return;
    enabled_ = false;
    disable_kinds();
    // Hands back every buffer CUPTI still holds, so the pool owns all of them again.
    api_.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    pool_->recycle_completed();
    pool_->trim();
  }

  CorrelationHook push_hook() override { return &push_correlation; }
  CorrelationHook pop_hook() override { return &pop_correlation; }

 private:
  std::string check_availability() {
    std::string problem = api_.driver_problem();
    if (!problem.empty()) return problem;
    uint32_t v = 0;
    const CUptiResult r = api_.get_version(&v);
    if (r != CUPTI_SUCCESS)
      return "CUPTI is not usable: cuptiGetVersion failed: " + api_.result_string(r);
    version_ = v;
    int count = 0;
    const cudaError_t e = api_.device_count(&count);
    if (e == cudaErrorNoDevice || (e == cudaSuccess && count <= 0)) {
      return "no CUDA GPU: " + (e == cudaSuccess ? std::string("cudaGetDeviceCount found 0 devices")
                                                 : api_.cuda_error_string(e));
    }
    if (e != cudaSuccess)
      return "the CUDA runtime cannot use the GPU: cudaGetDeviceCount failed: " +
             api_.cuda_error_string(e);
    device_count_ = count;
    return "";
  }

  void query_devices() {
    for (int i = 0; i < device_count_; ++i) {
      GpuDeviceInfo info;
      const cudaError_t e = api_.device_info(i, &info);
      if (e != cudaSuccess) {
        pending_warnings_.push_back("cudaGetDeviceProperties(" + std::to_string(i) +
                                    ") failed: " + api_.cuda_error_string(e));
        continue;
      }
      info.props.id = i;
      devices_.push_back(std::move(info));
    }
  }

  void disable_kinds() {
    for (auto it = enabled_kinds_.rbegin(); it != enabled_kinds_.rend(); ++it)
      api_.disable_kind(*it);
    enabled_kinds_.clear();
  }

  bool measure(ClockPair* p) {
    return measure_clock_pair(
        &now_ns, [this](uint64_t* ts) { return api_.get_timestamp(ts) == CUPTI_SUCCESS; }, 16, p);
  }

  // Our callback normally puts CUPTI on our clock. If it was refused or replaced (Kineto
  // registers its own), a map is fitted from clock pairs; the runtime calls, timestamped on
  // the CPU, then show which of the two candidates puts them inside the window.
  GpuClock choose_clock(const Correlator& c, int64_t start_ns, int64_t end_ns,
                        std::vector<std::string>* warnings) {
    ClockPair end_pair;
    const bool have_end = measure(&end_pair);
    if (timestamp_callback_ && have_end && same_clock(end_pair, kSameClockToleranceNs))
      return GpuClock::identity();
    if (!have_end) return GpuClock::identity();
    const GpuClock fitted = have_start_pair_ ? GpuClock::from_pairs(start_pair_, end_pair)
                                             : GpuClock::from_pair(end_pair);
    const std::size_t with_identity = c.api_calls_within(GpuClock::identity(), start_ns, end_ns);
    const std::size_t with_fitted = c.api_calls_within(fitted, start_ns, end_ns);
    if (with_identity > with_fitted) return GpuClock::identity();
    if (timestamp_callback_) {
      warnings->push_back(
          "CUPTI's timestamps are not on ptprof's clock (another profiler replaced CUPTI's "
          "timestamp callback?); GPU times were aligned with a measured clock offset");
    }
    return fitted;
  }

  const GpuOptions options_;
  CuptiApi& api_;
  bool checked_ = false;
  std::string reason_;
  uint32_t version_ = 0;
  int device_count_ = 0;
  bool enabled_ = false;
  bool timestamp_callback_ = false;
  std::unique_ptr<BufferPool> pool_;
  std::vector<CUpti_ActivityKind> enabled_kinds_;
  std::vector<GpuDeviceInfo> devices_;
  std::set<int32_t> seen_devices_;
  std::vector<std::string> pending_warnings_;
  ClockPair start_pair_;
  bool have_start_pair_ = false;
};

}  // namespace

void register_cupti_thread() {
  // pthread_t is an unsigned long on Linux; CUPTI keeps its low 32 bits.
  const uint32_t cupti_id = static_cast<uint32_t>(pthread_self());
  const int64_t os_tid = static_cast<int64_t>(::syscall(SYS_gettid));
  ThreadIds& t = thread_ids();
  std::lock_guard<std::mutex> lock(t.mu);
  t.ids[cupti_id] = os_tid;
}

std::unordered_map<uint32_t, int64_t> cupti_thread_ids() {
  ThreadIds& t = thread_ids();
  std::lock_guard<std::mutex> lock(t.mu);
  return t.ids;
}

std::unique_ptr<GpuBackend> make_cupti_backend(const GpuOptions& options, CuptiApi& api) {
  return std::make_unique<CuptiBackend>(options, api);
}

std::unique_ptr<GpuBackend> make_gpu_backend(const GpuOptions& options) {
  return make_cupti_backend(options, real_cupti_api());
}

}  // namespace ptprof::detail
