// Test helpers: hand-built CUPTI records of the real struct types, a fake CuptiApi that behaves
// like CUPTI where the backend depends on it (buffers requested and completed through the
// registered callbacks, completion inside FlushAll, per-thread external-correlation stack,
// ExternalCorrelation records preceding API records, dropped-record counting), and a device
// description.
#pragma once

#include <pthread.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "trace/clock.h"
#include "gpu/cupti_api.h"
#include "gpu/cupti_correlator.h"
#include "gpu/cupti_decode.h"
#include "ptprof/trace.h"

namespace ptprof::test {

using detail::GpuDeviceInfo;

// An H100 SXM as cudaGetDeviceProperties describes it (132 SMs, sm_90).
inline GpuDeviceInfo h100(int id = 0) {
  GpuDeviceInfo d;
  d.props.id = id;
  d.props.name = "NVIDIA H100 80GB HBM3";
  d.props.total_global_mem = 85045460992;
  d.props.compute_major = 9;
  d.props.compute_minor = 0;
  d.props.max_threads_per_block = 1024;
  d.props.max_threads_per_multiprocessor = 2048;
  d.props.regs_per_block = 65536;
  d.props.warp_size = 32;
  d.props.shared_mem_per_block = 49152;
  d.props.num_sms = 132;
  d.props.regs_per_multiprocessor = 65536;
  d.props.shared_mem_per_block_optin = 232448;
  d.props.shared_mem_per_multiprocessor = 233472;
  d.reserved_shared_mem_per_block = 1024;
  return d;
}

inline CUpti_ActivityKernel10 kernel_record(const char* name, uint32_t correlation, uint64_t start,
                                            uint64_t end, uint32_t device = 0,
                                            uint32_t stream = 7) {
  CUpti_ActivityKernel10 k;
  std::memset(&k, 0, sizeof(k));
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.name = name;
  k.correlationId = correlation;
  k.start = start;
  k.end = end;
  k.deviceId = device;
  k.contextId = 1;
  k.streamId = stream;
  k.gridX = 528;
  k.gridY = 1;
  k.gridZ = 1;
  k.blockX = 256;
  k.blockY = 1;
  k.blockZ = 1;
  k.registersPerThread = 32;
  return k;
}

inline CUpti_ActivityMemcpy6 memcpy_record(uint8_t copy_kind, uint8_t src, uint8_t dst,
                                           uint64_t bytes, uint32_t correlation, uint64_t start,
                                           uint64_t end, uint32_t device = 0, uint32_t stream = 7) {
  CUpti_ActivityMemcpy6 m;
  std::memset(&m, 0, sizeof(m));
  m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  m.copyKind = copy_kind;
  m.srcKind = src;
  m.dstKind = dst;
  m.bytes = bytes;
  m.start = start;
  m.end = end;
  m.deviceId = device;
  m.contextId = 1;
  m.streamId = stream;
  m.correlationId = correlation;
  return m;
}

inline CUpti_ActivityMemset4 memset_record(uint64_t bytes, uint32_t correlation, uint64_t start,
                                           uint64_t end, uint32_t device = 0, uint32_t stream = 7) {
  CUpti_ActivityMemset4 m;
  std::memset(&m, 0, sizeof(m));
  m.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  m.value = 0;
  m.bytes = bytes;
  m.start = start;
  m.end = end;
  m.deviceId = device;
  m.contextId = 1;
  m.streamId = stream;
  m.correlationId = correlation;
  m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  return m;
}

inline CUpti_ActivityAPI api_record(bool driver, CUpti_CallbackId cbid, uint32_t correlation,
                                    uint64_t start, uint64_t end, uint32_t thread,
                                    uint32_t process = 4242) {
  CUpti_ActivityAPI a;
  std::memset(&a, 0, sizeof(a));
  a.kind = driver ? CUPTI_ACTIVITY_KIND_DRIVER : CUPTI_ACTIVITY_KIND_RUNTIME;
  a.cbid = cbid;
  a.start = start;
  a.end = end;
  a.processId = process;
  a.threadId = thread;
  a.correlationId = correlation;
  return a;
}

inline CUpti_ActivityExternalCorrelation ext_record(
    uint32_t correlation, uint64_t id,
    CUpti_ExternalCorrelationKind kind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2) {
  CUpti_ActivityExternalCorrelation x;
  std::memset(&x, 0, sizeof(x));
  x.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
  x.externalKind = kind;
  x.externalId = id;
  x.correlationId = correlation;
  return x;
}

inline CUpti_ActivitySynchronization2 sync_record(CUpti_ActivitySynchronizationType type,
                                                  uint32_t correlation, uint64_t start,
                                                  uint64_t end, uint32_t stream,
                                                  uint32_t context = 1) {
  CUpti_ActivitySynchronization2 s;
  std::memset(&s, 0, sizeof(s));
  s.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
  s.type = type;
  s.start = start;
  s.end = end;
  s.correlationId = correlation;
  s.contextId = context;
  s.streamId = stream;
  s.cudaEventId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
  return s;
}

inline CUpti_ActivityOverhead3 overhead_record(CUpti_ActivityOverheadKind kind, uint64_t start,
                                               uint64_t end) {
  CUpti_ActivityOverhead3 o;
  std::memset(&o, 0, sizeof(o));
  o.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
  o.overheadKind = kind;
  o.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
  o.start = start;
  o.end = end;
  return o;
}

inline uint32_t cupti_thread_id() {
  return static_cast<uint32_t>(pthread_self());
}

// Buffer layout of the fake: [uint32 size][record bytes, padded to 8] repeated.
class FakeCuptiApi : public detail::CuptiApi {
 public:
  // ---- knobs ----
  std::string driver_problem_text;
  CUptiResult version_result = CUPTI_SUCCESS;
  uint32_t version = 130001;
  cudaError_t device_count_result = cudaSuccess;
  int devices = 1;
  bool torch_active = false;
  CUptiResult subscribe_result = CUPTI_SUCCESS;
  std::string subscriber_holder;
  CUptiResult timestamp_callback_result = CUPTI_SUCCESS;
  std::set<CUpti_ActivityKind> failing_kinds;
  // CUPTI's own clock (used when our timestamp callback was refused, or replaced by another
  // profiler's): ours + this.
  int64_t cupti_clock_offset_ns = 0;
  bool timestamp_callback_replaced = false;
  // Completes buffers on another thread while flush_all waits (CUPTI's worker thread).
  bool complete_on_other_thread = false;
  std::set<std::pair<CUpti_CallbackDomain, CUpti_CallbackId>> failing_callbacks;
  // time_launches: ns per launch with no activity kind enabled and with some; a negative
  // value fails the call (a CUDA error).
  int64_t launch_ns_untraced = 1500;
  int64_t launch_ns_traced = 3700;

  // ---- observed state ----
  CUpti_BuffersCallbackRequestFunc request = nullptr;
  CUpti_BuffersCallbackCompleteFunc complete = nullptr;
  CUpti_TimestampCallbackFunc timestamp = nullptr;
  std::set<CUpti_ActivityKind> enabled;
  std::vector<uint64_t> stack;  // external-correlation stack (tests run one thread)
  int flushes = 0;
  int synchronizes = 0;
  int launch_probes = 0;
  uint64_t dropped = 0;
  uint32_t next_correlation = 100;
  CUpti_CallbackFunc callback = nullptr;  // the subscriber's (lean mode)
  std::set<std::pair<CUpti_CallbackDomain, CUpti_CallbackId>> callbacks_on;
  // Per-call API records switched on (cuptiActivityEnableRuntimeApi/DriverApi) or off.
  std::set<std::pair<CUpti_CallbackDomain, CUpti_CallbackId>> api_records_on;

  std::string driver_problem() override { return driver_problem_text; }
  CUptiResult get_version(uint32_t* v) override {
    *v = version;
    return version_result;
  }
  std::string result_string(CUptiResult r) override {
    return "CUPTI_RESULT_" + std::to_string(static_cast<int>(r));
  }
  cudaError_t device_count(int* count) override {
    *count = devices;
    return device_count_result;
  }
  std::string cuda_error_string(cudaError_t e) override {
    return "cudaError_" + std::to_string(static_cast<int>(e));
  }
  cudaError_t device_info(int device, GpuDeviceInfo* info) override {
    *info = h100(device);
    return cudaSuccess;
  }
  int runtime_version() override { return 13000; }
  int driver_version() override { return 13010; }
  int64_t time_launches(int launches) override {
    ++launch_probes;
    const int64_t per = enabled.empty() ? launch_ns_untraced : launch_ns_traced;
    return per < 0 ? -1 : per * launches;
  }
  cudaError_t synchronize_device(int) override {
    ++synchronizes;
    return cudaSuccess;
  }
  bool torch_profiler_active() override { return torch_active; }
  CUptiResult probe_subscriber(std::string* holder) override {
    *holder = subscriber_holder;
    return subscribe_result;
  }
  CUptiResult subscribe(CUpti_CallbackFunc fn, CUpti_SubscriberHandle* handle,
                        std::string* holder) override {
    if (subscribe_result != CUPTI_SUCCESS) {
      *holder = subscriber_holder;
      return subscribe_result;
    }
    callback = fn;
    *handle = reinterpret_cast<CUpti_SubscriberHandle>(this);
    return CUPTI_SUCCESS;
  }
  CUptiResult unsubscribe(CUpti_SubscriberHandle) override {
    callback = nullptr;
    callbacks_on.clear();
    return CUPTI_SUCCESS;
  }
  CUptiResult enable_callback(CUpti_SubscriberHandle, CUpti_CallbackDomain domain,
                              CUpti_CallbackId cbid, bool enable) override {
    if (failing_callbacks.count({domain, cbid})) return CUPTI_ERROR_NOT_SUPPORTED;
    if (enable) {
      callbacks_on.insert({domain, cbid});
    } else {
      callbacks_on.erase({domain, cbid});
    }
    return CUPTI_SUCCESS;
  }
  // A node's or graph's CUPTI id: the fake's handles are their ids.
  CUptiResult graph_node_id(CUgraphNode node, uint64_t* id) override {
    *id = reinterpret_cast<uintptr_t>(node);
    return CUPTI_SUCCESS;
  }
  CUptiResult graph_id(CUgraph graph, uint32_t* id) override {
    *id = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(graph));
    return CUPTI_SUCCESS;
  }
  CUptiResult register_timestamp_callback(CUpti_TimestampCallbackFunc fn) override {
    if (timestamp_callback_result == CUPTI_SUCCESS) timestamp = fn;
    return timestamp_callback_result;
  }
  CUptiResult get_timestamp(uint64_t* ts) override {
    *ts = now();
    return CUPTI_SUCCESS;
  }
  CUptiResult register_callbacks(CUpti_BuffersCallbackRequestFunc req,
                                 CUpti_BuffersCallbackCompleteFunc comp) override {
    request = req;
    complete = comp;
    return CUPTI_SUCCESS;
  }
  CUptiResult enable_kind(CUpti_ActivityKind k) override {
    if (failing_kinds.count(k)) return CUPTI_ERROR_NOT_COMPATIBLE;
    enabled.insert(k);
    return CUPTI_SUCCESS;
  }
  CUptiResult disable_kind(CUpti_ActivityKind k) override {
    enabled.erase(k);
    return CUPTI_SUCCESS;
  }
  CUptiResult enable_api_record(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                bool enable) override {
    if (enable) {
      api_records_on.insert({domain, cbid});
    } else {
      api_records_on.erase({domain, cbid});
    }
    return CUPTI_SUCCESS;
  }
  CUptiResult enable_cuda_event_device_timestamps(bool) override { return CUPTI_SUCCESS; }
  CUptiResult flush_all(uint32_t) override {
    // As CUPTI does: completion runs on the flushing thread, inside this call.
    ++flushes;
    if (complete_on_other_thread) {
      std::thread worker([this] { complete_current(); });
      worker.join();
    } else {
      complete_current();
    }
    return CUPTI_SUCCESS;
  }
  CUptiResult get_next_record(uint8_t* buffer, std::size_t valid,
                              CUpti_Activity** record) override {
    std::size_t off = 0;
    if (*record != nullptr) {
      const uint8_t* prev = reinterpret_cast<uint8_t*>(*record);
      uint32_t size;
      std::memcpy(&size, prev - 8, sizeof(size));
      off = static_cast<std::size_t>(prev - buffer) + pad(size);
    }
    if (off + 8 > valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
    *record = reinterpret_cast<CUpti_Activity*>(buffer + off + 8);
    return CUPTI_SUCCESS;
  }
  CUptiResult get_num_dropped(std::size_t* n) override {
    *n = dropped;
    dropped = 0;
    return CUPTI_SUCCESS;
  }
  const char* callback_name(CUpti_CallbackDomain domain, uint32_t cbid) override {
    // The real table answers without a GPU or driver.
    return detail::real_cupti_api().callback_name(domain, cbid);
  }
  CUptiResult push_external_id(uint64_t id) override {
    stack.push_back(id);
    return CUPTI_SUCCESS;
  }
  CUptiResult pop_external_id() override {
    if (stack.empty()) return CUPTI_ERROR_QUEUE_EMPTY;
    stack.pop_back();
    return CUPTI_SUCCESS;
  }

  // ---- driving the fake like a GPU ----
  // CUPTI's timestamp: our callback's (ns in classic mode, ticks in lean mode) while it is
  // in place, else CUPTI's own clock.
  uint64_t now() const {
    if (timestamp && !timestamp_callback_replaced) return timestamp();
    return static_cast<uint64_t>(detail::now_ns() + cupti_clock_offset_ns);
  }
  int64_t clock_offset() const {
    return timestamp && !timestamp_callback_replaced ? 0 : cupti_clock_offset_ns;
  }

  template <typename Record>
  void emit(const Record& r) {
    emit_bytes(&r, sizeof(r));
  }
  // A runtime/driver call on this thread, preceded (as CUPTI does) by an ExternalCorrelation
  // record when the thread's stack holds an id. Returns its correlation id.
  uint32_t api_call(bool driver, CUpti_CallbackId cbid, uint64_t start, uint64_t end) {
    const uint32_t c = next_correlation++;
    if (!stack.empty() && enabled.count(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION))
      emit(ext_record(c, stack.back()));
    emit(api_record(driver, cbid, c, start, end, cupti_thread_id(),
                    static_cast<uint32_t>(::getpid())));
    return c;
  }
  // A runtime or driver call as CUPTI's callback API reports it to the subscriber: the enter
  // callback, `body` (the call's work: nested calls, GPU records), the exit callback, with one
  // CUpti_CallbackData whose correlationData the subscriber owns across both. Nothing is
  // reported for a call whose callback is off. Returns the call's correlation id.
  template <typename Body>
  uint32_t callback_call(bool driver, CUpti_CallbackId cbid, Body&& body) {
    const CUpti_CallbackDomain domain =
        driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API;
    const uint32_t c = next_correlation++;
    const bool on = callback != nullptr && callbacks_on.count({domain, cbid}) != 0;
    uint64_t correlation_data = 0;
    CUpti_CallbackData d;
    std::memset(&d, 0, sizeof(d));
    d.functionName = callback_name(domain, cbid);
    d.correlationId = c;
    d.correlationData = &correlation_data;
    d.callbackSite = CUPTI_API_ENTER;
    if (on) callback(nullptr, domain, cbid, &d);
    body(c);
    d.callbackSite = CUPTI_API_EXIT;
    if (on) callback(nullptr, domain, cbid, &d);
    return c;
  }
  uint32_t callback_call(bool driver, CUpti_CallbackId cbid) {
    return callback_call(driver, cbid, [](uint32_t) {});
  }
  // CUPTI's resource callback for a graph node (created, cloned from `original`, destroyed).
  void graph_node_event(CUpti_CallbackId cbid, uint64_t node, uint32_t graph,
                        uint64_t original = 0) {
    if (callback == nullptr || callbacks_on.count({CUPTI_CB_DOMAIN_RESOURCE, cbid}) == 0) return;
    CUpti_GraphData g;
    std::memset(&g, 0, sizeof(g));
    g.graph = reinterpret_cast<CUgraph>(static_cast<uintptr_t>(graph));
    g.node = reinterpret_cast<CUgraphNode>(static_cast<uintptr_t>(node));
    g.originalNode = reinterpret_cast<CUgraphNode>(static_cast<uintptr_t>(original));
    CUpti_ResourceData r;
    std::memset(&r, 0, sizeof(r));
    r.resourceDescriptor = &g;
    callback(nullptr, CUPTI_CB_DOMAIN_RESOURCE, cbid, &r);
  }

  void complete_current() {
    if (current_ == nullptr) return;
    uint8_t* b = current_;
    const std::size_t used = used_;
    current_ = nullptr;
    used_ = 0;
    complete(nullptr, 0, b, capacity_, used);
  }
  void emit_bytes(const void* data, std::size_t size) {
    const std::size_t need = 8 + pad(static_cast<uint32_t>(size));
    if (current_ != nullptr && used_ + need > capacity_) complete_current();
    if (current_ == nullptr) {
      std::size_t max_records = 0;
      request(&current_, &capacity_, &max_records);
      used_ = 0;
      if (current_ == nullptr || capacity_ < need) {
        current_ = nullptr;
        ++dropped;
        return;
      }
    }
    const uint32_t s = static_cast<uint32_t>(size);
    std::memcpy(current_ + used_, &s, sizeof(s));
    std::memcpy(current_ + used_ + 8, data, size);
    used_ += need;
  }

 private:
  static std::size_t pad(uint32_t size) { return (size + 7u) & ~std::size_t{7}; }
  uint8_t* current_ = nullptr;
  std::size_t capacity_ = 0;
  std::size_t used_ = 0;
};

// A CPU op or user range as the session puts it into the trace: Unix ns, External id = op id.
inline Event cpu_event(Trace& t, const char* name, uint64_t id, int64_t pid, int64_t tid,
                       int64_t start_ns, int64_t duration_ns, EventKind kind = EventKind::CpuOp) {
  Event e;
  e.kind = kind;
  e.name = t.intern(name);
  e.start_ns = start_ns;
  e.duration_ns = duration_ns;
  e.pid = pid;
  e.tid = tid;
  e.external_id = id;
  return e;
}

inline std::vector<const Event*> events_of(const Trace& t, EventKind kind) {
  std::vector<const Event*> out;
  for (const Event& e : t.events) {
    if (e.kind == kind) out.push_back(&e);
  }
  return out;
}

inline const Event* event_with(const Trace& t, EventKind kind, uint64_t correlation) {
  for (const Event& e : t.events) {
    if (e.kind == kind && e.correlation == correlation) return &e;
  }
  return nullptr;
}

// Decodes one hand-built record and hands it to the correlator, as the backend does.
template <typename Record>
void feed(detail::ActivityDecoder& dec, detail::Correlator& cor, const Record& r) {
  detail::DecodedActivity a;
  detail::ExternalCorrelationRecord x;
  switch (dec.decode(reinterpret_cast<const CUpti_Activity&>(r), &a, &x)) {
    case detail::RecordRole::Activity:
      cor.add(a);
      break;
    case detail::RecordRole::ExternalCorrelation:
      cor.add_external(x);
      break;
    case detail::RecordRole::Skipped:
      break;
  }
}

}  // namespace ptprof::test
