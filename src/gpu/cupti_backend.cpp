// The CUPTI backend, in two modes (Options::cuda_tracing).
//
// Lifecycle (driven by the session): enable() at warmup registers our timestamp and buffer
// callbacks and enables the activity kinds, so CUPTI's start-up cost falls before the window.
// begin_window() drops what warmup collected. end_window() synchronizes the GPU, force-flushes,
// decodes every completed buffer and hands the records to the correlator, which keeps only the
// window's. disable() turns everything off again.
//
// Classic: kernel, copy, memset, sync, overhead records plus runtime and driver API records of
// every call, and each op's id pushed as external correlation (Kineto's set). It subscribes
// nothing: a probe only checks that no other tool holds CUPTI.
// Lean: kernel, copy, memset and sync records only; CUPTI's callbacks on the calls that cause
// them (cupti_callbacks.h) give each call's correlation id, times and op, and graph node
// creation. It holds CUPTI's subscriber from enable() to disable(). Should this CUPTI leave GPU
// records without correlation ids when no API records are on (as its docs say it may), the
// first window finds none linked and turns on API records for the launch calls alone.
//
// CUPTI's callbacks and the hot-path hooks are plain C functions, so they reach the backend's
// pool and the API table through globals. Only one session (so one backend) is active at a
// time in a process.
#include "gpu/cupti_backend.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "trace/clock.h"
#include "gpu/cupti_buffers.h"
#include "gpu/cupti_call_log.h"
#include "gpu/cupti_callbacks.h"
#include "gpu/cupti_clock.h"
#include "gpu/cupti_correlator.h"
#include "gpu/cupti_decode.h"
#include "gpu/cupti_graphs.h"

namespace ptprof::detail {
namespace {

Status unavailable(std::string why) {
  return Status(StatusCode::kUnavailable, std::move(why));
}

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

// Lean mode's: the recorder's ticks (rdtsc where the CPU has an invariant TSC).
uint64_t CUPTIAPI cupti_ticks() {
  return static_cast<uint64_t>(now_ticks());
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
    case CUPTI_ACTIVITY_KIND_GRAPH_TRACE:
      return "GRAPH_TRACE";
    default:
      return "?";
  }
}

// Without these the trace has no kernels, no copies, or nothing to join them to ops with.
constexpr CUpti_ActivityKind kClassicRequiredKinds[] = {
    CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
    CUPTI_ACTIVITY_KIND_RUNTIME,
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
    CUPTI_ACTIVITY_KIND_MEMCPY,
    CUPTI_ACTIVITY_KIND_MEMSET,
};
constexpr CUpti_ActivityKind kClassicOptionalKinds[] = {
    CUPTI_ACTIVITY_KIND_DRIVER,
    CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
    CUPTI_ACTIVITY_KIND_OVERHEAD,
};
// Lean: the GPU's records only; the callbacks stand in for the API records.
constexpr CUpti_ActivityKind kLeanRequiredKinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
    CUPTI_ACTIVITY_KIND_MEMCPY,
    CUPTI_ACTIVITY_KIND_MEMSET,
};
constexpr CUpti_ActivityKind kLeanOptionalKinds[] = {
    CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
};

// Lean mode's buffers, allocated at enable() so that no step allocates one: CUPTI's host
// buffers (4 of the configured size) and the call log's chunks (64 of 64 KiB: 131,072 calls).
constexpr std::size_t kReservedBuffers = 4;
constexpr std::size_t kReservedCallChunks = 64;

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

std::string subscriber_conflict(const std::string& holder) {
  // An unnamed holder is most often libtorch's own profiler from earlier in this process: its
  // Kineto keeps CUPTI's subscriber after it stops (seen with torch 2.11 on an H200) unless
  // TEARDOWN_CUPTI=1 was in the environment when it ran.
  const bool unnamed = holder.empty() || holder.find("<not provided>") != std::string::npos;
  return "CUPTI is already in use by another profiler (" +
         (unnamed ? std::string("libtorch's own profiler if it ran earlier in this process, "
                                "which keeps CUPTI unless TEARDOWN_CUPTI=1 is set before it "
                                "starts; or Nsight Systems, Nsight Compute, cuda-gdb, "
                                "compute-sanitizer")
                  : holder) +
         "): cuptiSubscribe returned CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED";
}

// The tick `ns` (CLOCK_MONOTONIC) falls on, by `conv`'s line: where the call log stops.
int64_t ticks_at(const TickConverter& conv, int64_t ns) {
  const int64_t t = now_ticks();
  const int64_t span = 1000000000;
  const long double ns_per_tick =
      static_cast<long double>(conv.to_ns(t + span) - conv.to_ns(t)) / span;
  if (ns_per_tick <= 0) return ns;
  return t - static_cast<int64_t>(static_cast<long double>(conv.to_ns(t) - ns) / ns_per_tick);
}

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

  Status enable() override {
    if (enabled_) return ok_status();
    const std::string reason = unavailable_reason();
    if (!reason.empty()) return unavailable(reason);
    if (api_.torch_profiler_active()) {
      return unavailable(
          "CUPTI is in use by libtorch's own profiler (torch.profiler / "
          "torch::autograd::profiler, i.e. Kineto), which is active in this process; stop it "
          "before asking ptprof for CUDA activity");
    }
    // Launches timed before CUPTI is on, once per backend: ptprof's own cost (ProfilerCost).
    const int64_t untraced = launch_cost_probed_ ? -1 : probe_launches();
    std::string holder;
    CUptiResult r = lean_ ? api_.subscribe(&lean::on_callback, &subscriber_, &holder)
                          : api_.probe_subscriber(&holder);
    if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
      return unavailable(subscriber_conflict(holder));
    }
    if (r != CUPTI_SUCCESS)
      return unavailable("CUPTI could not be initialized: cuptiSubscribe failed: " +
                         api_.result_string(r));
    subscribed_ = lean_;

    if (!pool_) {
      pool_ = std::make_unique<BufferPool>(
          options_.buffer_size_bytes, options_.max_buffer_bytes,
          /*may_refuse=*/version_ >= BufferPool::kFirstVersionAcceptingRefusal);
    }
    if (lean_) pool_->reserve(kReservedBuffers);
    // The timestamp callback must be in place before any kind is enabled.
    calibrate_clock();  // lean mode's timestamps are the recorder's ticks
    r = api_.register_timestamp_callback(lean_ ? &cupti_ticks : &cupti_timestamp);
    timestamp_callback_ = r == CUPTI_SUCCESS;
    if (!timestamp_callback_) {
      pending_warnings_.emplace_back(
          StatusCode::kDataLoss,
          "CUPTI refused ptprof's timestamp callback (" + api_.result_string(r) +
              "); GPU times are aligned to CPU times with a measured clock offset instead");
    }
    g_pool.store(pool_.get(), std::memory_order_release);
    g_hot_api.store(&api_, std::memory_order_relaxed);
    r = api_.register_callbacks(&on_buffer_requested, &on_buffer_completed);
    if (r != CUPTI_SUCCESS) {
      unsubscribe();
      return unavailable("cuptiActivityRegisterCallbacks failed: " + api_.result_string(r));
    }
    Status failed;
    auto enable_required = [&](CUpti_ActivityKind k) {
      r = api_.enable_kind(k);
      if (r != CUPTI_SUCCESS) {
        disable_kinds();
        unsubscribe();
        failed = unavailable(std::string("cuptiActivityEnable(CUPTI_ACTIVITY_KIND_") +
                             kind_name(k) + ") failed: " + api_.result_string(r));
        return false;
      }
      enabled_kinds_.push_back(k);
      return true;
    };
    auto enable_optional = [&](CUpti_ActivityKind k, const char* missing) {
      // As Kineto does on CUDA 13: device-side CUDA event timestamps before sync records.
      if (k == CUPTI_ACTIVITY_KIND_SYNCHRONIZATION) api_.enable_cuda_event_device_timestamps(true);
      r = api_.enable_kind(k);
      if (r == CUPTI_SUCCESS) {
        enabled_kinds_.push_back(k);
      } else {
        pending_warnings_.emplace_back(StatusCode::kUnavailable,
                                       std::string("CUPTI activity kind ") + kind_name(k) +
                                           " could not be enabled (" + api_.result_string(r) +
                                           "); " + missing);
      }
    };
    constexpr const char* kMissing = "those records are missing from the trace";
    if (lean_) {
      for (CUpti_ActivityKind k : kLeanRequiredKinds)
        if (!enable_required(k)) return failed;
      for (CUpti_ActivityKind k : kLeanOptionalKinds) enable_optional(k, kMissing);
    } else {
      for (CUpti_ActivityKind k : kClassicRequiredKinds)
        if (!enable_required(k)) return failed;
      for (CUpti_ActivityKind k : kClassicOptionalKinds) enable_optional(k, kMissing);
      for (const auto& [domain, cbid] : kQuietApis) api_.enable_api_record(domain, cbid, false);
    }
    if (options_.graph_launches_only) {
      enable_optional(CUPTI_ACTIVITY_KIND_GRAPH_TRACE,
                      "CUDA graph launches are traced node by node instead");
    }
    if (lean_) {
      Status st = enable_callbacks();
      if (!st.ok()) {
        disable_kinds();
        unsubscribe();
        return st;
      }
    }
    if (devices_.empty()) query_devices();
    register_cupti_thread();
    enabled_ = true;
    if (untraced >= 0) {
      launch_cost_probed_ = true;
      const int64_t traced = probe_launches();
      if (traced >= 0)
        launch_cost_ns_ = std::max(0.0, static_cast<double>(traced - untraced) / kProbeLaunches);
    }
    return ok_status();
  }

  std::optional<double> launch_cost_ns() const override { return launch_cost_ns_; }

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
    if (lean_) {
      CallLog::get().discard();
      CallLog::get().take_dropped();
      GraphCaptures::get().forget_destroyed();
    }
    have_start_pair_ = measure(&start_pair_);
  }

  void end_window(int64_t start_ns, int64_t end_ns, int64_t unix_offset_ns, Trace& trace,
                  std::vector<Status>* warnings) override {
    for (Status& w : pending_warnings_) warnings->push_back(std::move(w));
    pending_warnings_.clear();
    if (!enabled_) return;
    if (api_.torch_profiler_active()) {
      warnings->emplace_back(
          StatusCode::kDataLoss,
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
    const TickConverter ticks = TickConverter::current();
    uint64_t calls = 0;
    uint64_t lost_calls = 0;
    if (lean_) {
      // The window's calls, as the callbacks timed them; one that started after the window
      // stays for the next.
      const int64_t pid = ::getpid();
      CallLog::get().read(ticks_at(ticks, end_ns), [&](int64_t tid, const HostCall& c) {
        ++calls;
        correlator.add(decoder.call(c.driver != 0, c.cbid, c.correlation, ticks.to_ns(c.start),
                                    ticks.to_ns(c.end), pid, tid));
        if (c.op != 0)
          correlator.add_external({kPtprofCorrelationKind, c.correlation, c.op});
      });
      lost_calls = CallLog::get().take_dropped();
    }
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
        // Lean mode's API records (on only to make CUPTI give out correlation ids) add
        // nothing the callbacks did not record.
        if (lean_ && (rec->kind == CUPTI_ACTIVITY_KIND_RUNTIME ||
                      rec->kind == CUPTI_ACTIVITY_KIND_DRIVER))
          continue;
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
    window.clock = choose_clock(correlator, ticks, start_ns, end_ns, warnings);
    GraphCaptureMap graphs;
    if (lean_) {
      GraphCaptures::get().name_from(trace);
      graphs = GraphCaptures::get().snapshot();
    }
    const CorrelationStats st = correlator.finish(window, cupti_thread_ids(), trace, &graphs);
    if (lean_) {
      GraphCaptures::get().forget_destroyed();
      check_correlation_ids(st, calls, warnings);
    }

    trace.devices.clear();
    for (const GpuDeviceInfo& d : devices_) trace.devices.push_back(d.props);
    trace.metadata["cupti_version"] = std::to_string(version_);
    trace.metadata["cuda_runtime_version"] = std::to_string(api_.runtime_version());
    trace.metadata["cuda_driver_version"] = std::to_string(api_.driver_version());
    trace.metadata["ptprof_gpu_clock"] =
        window.clock.is_ours() ? "\"cupti_timestamp_callback\"" : "\"measured_offset\"";
    trace.metadata["ptprof_cuda_tracing"] = lean_ ? "\"lean\"" : "\"classic\"";
    if (lean_ && api_records_) trace.metadata["ptprof_cuda_launch_api_records"] = "true";

    const uint64_t lost = cupti_dropped + overflow_dropped;
    if (lost > 0 || refused > 0) {
      trace.metadata["ptprof_gpu_dropped_records"] = std::to_string(lost);
      trace.metadata["ptprof_gpu_buffers_refused"] = std::to_string(refused);
      warnings->emplace_back(
          StatusCode::kResourceExhausted,
          "GPU activity records were lost: " + std::to_string(lost) + " records dropped, " +
              std::to_string(refused) + " buffer requests refused at the cap of " +
              size_text(options_.max_buffer_bytes) +
              " of CUPTI buffers; the trace lacks some GPU events (shorten the window or raise "
              "the GPU buffer cap)");
    }
    if (lost_calls > 0) {
      trace.metadata["ptprof_gpu_lost_calls"] = std::to_string(lost_calls);
      warnings->emplace_back(StatusCode::kResourceExhausted,
                             std::to_string(lost_calls) +
                          " runtime/driver calls could not be recorded (the call log's cap of " +
                          size_text(call_log_cap() * sizeof(HostCall) * CallLog::kChunkCalls) +
                          "); their GPU work lacks its launch and op");
    }
    if (invalid > 0) {
      warnings->emplace_back(
          StatusCode::kDataLoss,
          std::to_string(invalid) + " CUPTI buffers ended in an incomplete or invalid record");
    }
    if (st.gpu_starts_before_launch > 0) {
      warnings->emplace_back(StatusCode::kDataLoss,
                             std::to_string(st.gpu_starts_before_launch) +
                                 " GPU activities start before the call that launched them: "
                                 "CUPTI's clock and ptprof's disagree");
    }
    if (decoder.unknown_records() > 0) {
      trace.metadata["ptprof_gpu_unknown_records"] = std::to_string(decoder.unknown_records());
    }
  }

  void disable() override {
    if (!enabled_) return;
    enabled_ = false;
    unsubscribe();
    if (api_records_) {
      for (const auto& [domain, cbid] : launch_cbids_) api_.enable_api_record(domain, cbid, false);
      api_records_ = false;
    }
    disable_kinds();
    // Hands back every buffer CUPTI still holds, so the pool owns all of them again.
    api_.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    pool_->recycle_completed();
    pool_->trim();
  }

  CorrelationHook push_hook() override { return lean_ ? &lean::push_op : &push_correlation; }
  CorrelationHook pop_hook() override { return lean_ ? &lean::pop_op : &pop_correlation; }
  void set_open_ops_hook(OpenOpsHook hook) override {
    open_ops_hook_ = hook;
    if (subscribed_) lean::set_callback_context(&api_, hook);
  }

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
        pending_warnings_.emplace_back(StatusCode::kUnavailable,
                                       "cudaGetDeviceProperties(" + std::to_string(i) +
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

  std::size_t call_log_cap() const {
    const std::size_t chunk = sizeof(HostCall) * CallLog::kChunkCalls;
    return std::max(kReservedCallChunks, options_.max_buffer_bytes / chunk);
  }

  // Lean: the callbacks on the launch calls and on graph nodes, the call log filled ahead.
  // What kProbeLaunches launches take on this thread: the fastest of a few rounds, after an
  // untimed one (first-launch setup); -1 where a CUDA call failed.
  static constexpr int kProbeLaunches = 64;
  int64_t probe_launches() {
    if (api_.time_launches(8) < 0) return -1;
    int64_t best = -1;
    for (int round = 0; round < 4; ++round) {
      const int64_t t = api_.time_launches(kProbeLaunches);
      if (t < 0) return -1;
      best = best < 0 ? t : std::min(best, t);
    }
    return best;
  }

  Status enable_callbacks() {
    CallLog::get().reserve(kReservedCallChunks, call_log_cap());
    lean::reset_op_stacks();
    lean::set_callback_context(&api_, open_ops_hook_);
    if (launch_cbids_.empty()) launch_cbids_ = lean::launch_callbacks(api_);
    std::size_t on = 0;
    CUptiResult last = CUPTI_SUCCESS;
    for (const auto& [domain, cbid] : launch_cbids_) {
      const CUptiResult r = api_.enable_callback(subscriber_, domain, cbid, true);
      if (r == CUPTI_SUCCESS) {
        ++on;
      } else {
        last = r;
      }
    }
    if (on == 0) {
      return unavailable("CUPTI's callbacks on the CUDA launch calls could not be enabled (" +
                         (launch_cbids_.empty() ? std::string("CUPTI names no launch call")
                                                : api_.result_string(last)) +
                         "); Options::cuda_tracing = CudaTracing::Classic does without them");
    }
    if (on < launch_cbids_.size()) {
      pending_warnings_.emplace_back(
          StatusCode::kUnavailable,
          std::to_string(launch_cbids_.size() - on) + " of CUPTI's " +
          std::to_string(launch_cbids_.size()) + " launch-call callbacks could not be enabled (" +
          api_.result_string(last) + "); GPU work those calls launch lacks its launch and op");
    }
    for (CUpti_CallbackId cbid : lean::graph_callbacks()) {
      if (api_.enable_callback(subscriber_, CUPTI_CB_DOMAIN_RESOURCE, cbid, true) !=
          CUPTI_SUCCESS) {
        pending_warnings_.emplace_back(
            StatusCode::kUnavailable,
            "CUPTI's CUDA graph node callbacks could not be enabled: kernels replayed by a graph "
            "launch are attributed to the launch's op, not to the op that captured them");
        break;
      }
    }
    if (api_records_) {
      for (const auto& [domain, cbid] : launch_cbids_) api_.enable_api_record(domain, cbid, true);
    }
    return ok_status();
  }

  void unsubscribe() {
    if (!subscribed_) return;
    api_.unsubscribe(subscriber_);
    subscriber_ = nullptr;
    subscribed_ = false;
    lean::set_callback_context(nullptr, nullptr);
  }

  // CUPTI's docs say correlation ids are generated only with runtime or driver API records
  // on. Where this CUPTI holds to that, no GPU record of the window matches a recorded launch:
  // then the launch calls' API records (and those only) are turned on for the next windows.
  void check_correlation_ids(const CorrelationStats& st, uint64_t calls,
                             std::vector<Status>* warnings) {
    if (api_records_ || calls == 0 || st.gpu_ops == 0 || st.gpu_with_launch > 0) return;
    api_records_ = true;
    for (const auto& [domain, cbid] : launch_cbids_) api_.enable_api_record(domain, cbid, true);
    warnings->emplace_back(
        StatusCode::kDataLoss,
        "none of the window's " + std::to_string(st.gpu_ops) +
        " GPU activities carries the correlation id of a launch ptprof's callbacks saw (CUPTI "
        "gives them out only with API records on, as its docs say): API records of the launch "
        "calls are on from the next window, which links them");
  }

  bool measure(ClockPair* p) {
    return measure_clock_pair(
        &now_ns, [this](uint64_t* ts) { return api_.get_timestamp(ts) == CUPTI_SUCCESS; }, 16, p);
  }

  // Our callback normally puts CUPTI on our clock. If it was refused or replaced (Kineto
  // registers its own), a map is fitted from clock pairs; the runtime calls, timestamped on
  // the CPU, then show which of the two candidates puts them inside the window.
  GpuClock choose_clock(const Correlator& c, const TickConverter& ticks, int64_t start_ns,
                        int64_t end_ns, std::vector<Status>* warnings) {
    const GpuClock ours = lean_ ? GpuClock::from_ticks(ticks) : GpuClock::identity();
    ClockPair end_pair;
    const bool have_end = measure(&end_pair);
    if (timestamp_callback_ && have_end) {
      ClockPair mapped = end_pair;
      mapped.cupti_ns = static_cast<uint64_t>(ours.to_cpu(end_pair.cupti_ns));
      if (same_clock(mapped, kSameClockToleranceNs)) return ours;
    }
    if (!have_end) return ours;
    const GpuClock fitted = have_start_pair_ ? GpuClock::from_pairs(start_pair_, end_pair)
                                             : GpuClock::from_pair(end_pair);
    const std::size_t with_ours = c.api_calls_within(ours, start_ns, end_ns);
    const std::size_t with_fitted = c.api_calls_within(fitted, start_ns, end_ns);
    if (with_ours > with_fitted) return ours;
    if (timestamp_callback_) {
      warnings->emplace_back(
          StatusCode::kDataLoss,
          "CUPTI's timestamps are not on ptprof's clock (another profiler replaced CUPTI's "
          "timestamp callback?); GPU times were aligned with a measured clock offset");
    }
    return fitted;
  }

  const GpuOptions options_;
  CuptiApi& api_;
  const bool lean_ = options_.tracing == CudaTracing::Lean;
  CUpti_SubscriberHandle subscriber_ = nullptr;
  bool subscribed_ = false;
  OpenOpsHook open_ops_hook_ = nullptr;
  std::vector<std::pair<CUpti_CallbackDomain, CUpti_CallbackId>> launch_cbids_;
  bool api_records_ = false;  // lean: API records of the launch calls, for correlation ids
  bool checked_ = false;
  std::string reason_;
  uint32_t version_ = 0;
  int device_count_ = 0;
  bool enabled_ = false;
  bool launch_cost_probed_ = false;
  std::optional<double> launch_cost_ns_;
  bool timestamp_callback_ = false;
  std::unique_ptr<BufferPool> pool_;
  std::vector<CUpti_ActivityKind> enabled_kinds_;
  std::vector<GpuDeviceInfo> devices_;
  std::set<int32_t> seen_devices_;
  std::vector<Status> pending_warnings_;
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
