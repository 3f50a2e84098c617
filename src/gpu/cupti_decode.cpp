#include "gpu/cupti_decode.h"

#include <cuda_occupancy.h>
#include <cxxabi.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>

namespace ptprof::detail {

std::string demangle(const char* name) {
  if (name == nullptr) return "<unnamed kernel>";
  int status = 0;
  char* out = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status != 0 || out == nullptr) {
    std::free(out);
    return name;  // extern "C" kernels are not mangled
  }
  std::string s(out);
  std::free(out);
  return s;
}

const char* memcpy_kind_name(uint8_t copy_kind) {
  switch (copy_kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
      return "HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
      return "DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA:
      return "HtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH:
      return "AtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
      return "AtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
      return "AtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA:
      return "DtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
      return "DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH:
      return "HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP:
      return "PtoP";
    default:
      return "<unknown>";
  }
}

const char* memory_kind_name(uint32_t memory_kind) {
  switch (memory_kind) {
    case CUPTI_ACTIVITY_MEMORY_KIND_UNKNOWN:
      return "Unknown";
    case CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE:
      return "Pageable";
    case CUPTI_ACTIVITY_MEMORY_KIND_PINNED:
      return "Pinned";
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE:
      return "Device";
    case CUPTI_ACTIVITY_MEMORY_KIND_ARRAY:
      return "Array";
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED:
      return "Managed";
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC:
      return "Device Static";
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC:
      return "Managed Static";
    default:
      return "Unrecognized";
  }
}

const char* overhead_kind_name(CUpti_ActivityOverheadKind kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_OVERHEAD_UNKNOWN:
      return "Unknown";
    case CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER:
      return "Driver Compiler";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH:
      return "Buffer Flush";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION:
      return "Instrumentation";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_RESOURCE:
      return "Resource";
    case CUPTI_ACTIVITY_OVERHEAD_RUNTIME_TRIGGERED_MODULE_LOADING:
      return "Module Loading";
    case CUPTI_ACTIVITY_OVERHEAD_LAZY_FUNCTION_LOADING:
      return "Lazy Function Loading";
    case CUPTI_ACTIVITY_OVERHEAD_COMMAND_BUFFER_FULL:
      return "Command Buffer Full";
    case CUPTI_ACTIVITY_OVERHEAD_ACTIVITY_BUFFER_REQUEST:
      return "Activity Buffer Request";
    case CUPTI_ACTIVITY_OVERHEAD_UVM_ACTIVITY_INIT:
      return "UVM Activity Init";
    default:
      return "Unrecognized";
  }
}

const char* sync_type_name(CUpti_ActivitySynchronizationType type) {
  switch (type) {
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE:
      return "Event Sync";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT:
      return "Stream Wait Event";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE:
      return "Stream Sync";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE:
      return "Context Sync";
    default:
      return "Unknown Sync";
  }
}

std::string memcpy_name(uint8_t copy_kind, uint8_t src_kind, uint8_t dst_kind) {
  return std::string("Memcpy ") + memcpy_kind_name(copy_kind) + " (" + memory_kind_name(src_kind) +
         " -> " + memory_kind_name(dst_kind) + ")";
}

std::string memset_name(uint32_t memory_kind) {
  return std::string("Memset (") + memory_kind_name(memory_kind) + ")";
}

std::string api_display_name(std::string_view name, CUpti_CallbackDomain domain) {
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    // Runtime names end in the version that introduced them: _v3020, _v7000, _v11060...
    const auto pos = name.rfind("_v");
    if (pos != std::string_view::npos && pos + 2 < name.size() && name.size() - (pos + 2) >= 4 &&
        std::all_of(name.begin() + pos + 2, name.end(),
                    [](char c) { return c >= '0' && c <= '9'; }))
      name = name.substr(0, pos);
    while (name.size() > 2 && name.substr(0, 2) == "__") name.remove_prefix(2);
  }
  return std::string(name);
}

bool is_launch_api(std::string_view n) {
  static constexpr std::string_view kPrefixes[] = {
      "cudaLaunch",
      "cudaGraphLaunch",
      "cudaMemcpy",
      "cudaMemset",
      "cudaStreamSynchronize",
      "cudaDeviceSynchronize",
      "cudaStreamWaitEvent",
      "cudaEventSynchronize",
      "cuLaunch",
      "cuGraphLaunch",
      "cuMemcpy",
      "cuMemset",
      "cuStreamSynchronize",
      "cuCtxSynchronize",
      "cuStreamWaitEvent",
      "cuEventSynchronize",
  };
  for (std::string_view p : kPrefixes) {
    if (n.substr(0, p.size()) == p) {
      // cudaLaunchHostFunc runs on the CPU: no GPU record carries its correlation.
      return n.find("HostFunc") == std::string_view::npos;
    }
  }
  return false;
}

bool is_hidden_runtime_api(CUpti_CallbackId cbid) {
  return cbid == CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020 ||
         cbid == CUPTI_RUNTIME_TRACE_CBID_cudaSetDevice_v3020 ||
         cbid == CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020;
}

KernelOccupancy kernel_occupancy(const GpuDeviceInfo* device, const int32_t grid[3],
                                 const int32_t block[3], int32_t registers_per_thread,
                                 int32_t static_shared, int32_t dynamic_shared,
                                 bool shared_limit_optin) {
  KernelOccupancy o;
  if (device == nullptr || device->props.num_sms <= 0) return o;
  const DeviceProperties& d = device->props;
  const double blocks = static_cast<double>(grid[0]) * grid[1] * grid[2];
  const int threads = block[0] * block[1] * block[2];
  const int warp = d.warp_size > 0 ? d.warp_size : 32;
  const double blocks_per_sm = blocks / d.num_sms;
  o.blocks_per_sm = static_cast<float>(blocks_per_sm);
  o.warps_per_sm = static_cast<float>(blocks_per_sm * threads / warp);
  if (threads <= 0 || d.max_threads_per_multiprocessor <= 0) return o;

  cudaOccDeviceProp p;
  p.computeMajor = d.compute_major;
  p.computeMinor = d.compute_minor;
  p.maxThreadsPerBlock = d.max_threads_per_block;
  p.maxThreadsPerMultiprocessor = d.max_threads_per_multiprocessor;
  p.regsPerBlock = d.regs_per_block;
  p.regsPerMultiprocessor = d.regs_per_multiprocessor;
  p.warpSize = warp;
  p.sharedMemPerBlock = static_cast<size_t>(d.shared_mem_per_block);
  p.sharedMemPerMultiprocessor = static_cast<size_t>(d.shared_mem_per_multiprocessor);
  p.numSms = d.num_sms;
  p.sharedMemPerBlockOptin = static_cast<size_t>(d.shared_mem_per_block_optin);
  p.reservedSharedMemPerBlock = static_cast<size_t>(device->reserved_shared_mem_per_block);
  cudaOccFuncAttributes a;
  a.maxThreadsPerBlock = INT_MAX;
  a.numRegs = registers_per_thread;
  a.sharedSizeBytes = static_cast<size_t>(std::max(static_shared, 0));
  a.partitionedGCConfig = PARTITIONED_GC_OFF;
  // A kernel that opted in to more than the default per-block shared memory is judged
  // against the opt-in limit, as the launch was.
  a.shmemLimitConfig = shared_limit_optin ? FUNC_SHMEM_LIMIT_OPTIN : FUNC_SHMEM_LIMIT_DEFAULT;
  a.maxDynamicSharedSizeBytes = static_cast<size_t>(std::max(dynamic_shared, 0));
  a.numBlockBarriers = 1;
  cudaOccDeviceState state;
  cudaOccResult r;
  if (cudaOccMaxActiveBlocksPerMultiprocessor(&r, &p, &a, &state, threads,
                                              static_cast<size_t>(std::max(dynamic_shared, 0))) !=
      CUDA_OCC_SUCCESS)
    return o;
  const double active = std::min<double>(r.activeBlocksPerMultiprocessor, blocks_per_sm);
  o.occupancy_pct =
      static_cast<int32_t>(0.5 + active * threads / d.max_threads_per_multiprocessor * 100.0);
  return o;
}

ActivityDecoder::ActivityDecoder(Trace& trace, std::vector<GpuDeviceInfo> devices,
                                 CallbackNamer namer)
    : trace_(trace), devices_(std::move(devices)), namer_(std::move(namer)) {}

const GpuDeviceInfo* ActivityDecoder::device(uint32_t id) const {
  for (const GpuDeviceInfo& d : devices_) {
    if (d.props.id == static_cast<int32_t>(id)) return &d;
  }
  return nullptr;
}

std::string_view ActivityDecoder::kernel_name(const char* mangled) {
  if (mangled == nullptr) return trace_.intern("<unnamed kernel>");
  auto it = kernel_names_.find(mangled);
  if (it != kernel_names_.end() && it->second.mangled == mangled) return it->second.demangled;
  KernelName& k = kernel_names_[mangled];
  k.mangled = mangled;
  k.demangled = trace_.intern(demangle(mangled));
  return k.demangled;
}

const ActivityDecoder::ApiName& ActivityDecoder::api_name(CUpti_CallbackDomain domain,
                                                          uint32_t cbid) {
  const uint64_t key = (static_cast<uint64_t>(domain) << 32) | cbid;
  auto it = api_names_.find(key);
  if (it != api_names_.end()) return it->second;
  const char* raw = namer_ ? namer_(domain, cbid) : nullptr;
  std::string name;
  if (raw != nullptr && *raw != '\0') {
    name = api_display_name(raw, domain);
  } else {
    name = std::string(domain == CUPTI_CB_DOMAIN_DRIVER_API ? "cuda_driver" : "cuda_runtime") +
           "_cbid_" + std::to_string(cbid);
  }
  ApiName& n = api_names_[key];
  n.launch = is_launch_api(name);
  n.name = trace_.intern(name);
  return n;
}

DecodedActivity ActivityDecoder::kernel(const CUpti_ActivityKernel10& k) {
  DecodedActivity d;
  Event& e = d.event;
  e.kind = EventKind::Kernel;
  e.name = kernel_name(k.name);
  e.start_ns = static_cast<int64_t>(k.start);
  e.duration_ns = static_cast<int64_t>(k.end - k.start);
  e.pid = k.deviceId;
  e.tid = k.streamId;
  e.device = static_cast<int32_t>(k.deviceId);
  e.stream = k.streamId;
  e.correlation = k.correlationId;
  KernelInfo& ki = e.kernel;
  ki.grid[0] = k.gridX;
  ki.grid[1] = k.gridY;
  ki.grid[2] = k.gridZ;
  ki.block[0] = k.blockX;
  ki.block[1] = k.blockY;
  ki.block[2] = k.blockZ;
  ki.registers_per_thread = k.registersPerThread;
  ki.shared_memory = k.staticSharedMemory + k.dynamicSharedMemory;
  ki.context = k.contextId;
  // Kineto writes CUPTI's queued time in us; it stays 0 (unknown) unless latency timestamps
  // were enabled, which ptprof does not do.
  ki.queued = k.queued == CUPTI_TIMESTAMP_UNKNOWN ? 0 : static_cast<int64_t>(k.queued / 1000);
  const KernelOccupancy occ = kernel_occupancy(
      device(k.deviceId), ki.grid, ki.block, k.registersPerThread, k.staticSharedMemory,
      k.dynamicSharedMemory, k.shmemLimitConfig == CUPTI_FUNC_SHMEM_LIMIT_OPTIN);
  ki.blocks_per_sm = occ.blocks_per_sm;
  ki.warps_per_sm = occ.warps_per_sm;
  ki.occupancy_pct = occ.occupancy_pct;
  d.context = k.contextId;
  d.graph_id = k.graphId;
  d.graph_node = k.graphNodeId;
  return d;
}

template <typename Copy>
DecodedActivity ActivityDecoder::copy(const Copy& m) {
  DecodedActivity d;
  Event& e = d.event;
  e.kind = EventKind::Memcpy;
  const uint64_t key =
      (uint64_t{1} << 40) | (uint64_t{m.copyKind} << 16) | (uint64_t{m.srcKind} << 8) | m.dstKind;
  auto it = fixed_names_.find(key);
  if (it == fixed_names_.end())
    it = fixed_names_.emplace(key, trace_.intern(memcpy_name(m.copyKind, m.srcKind, m.dstKind)))
             .first;
  e.name = it->second;
  e.start_ns = static_cast<int64_t>(m.start);
  e.duration_ns = static_cast<int64_t>(m.end - m.start);
  e.pid = m.deviceId;
  e.tid = m.streamId;
  e.device = static_cast<int32_t>(m.deviceId);
  e.stream = m.streamId;
  e.correlation = m.correlationId;
  e.transfer.bytes = m.bytes;
  e.transfer.context = m.contextId;
  e.transfer.copy_kind = m.copyKind;
  e.transfer.src_kind = m.srcKind;
  e.transfer.dst_kind = m.dstKind;
  d.context = m.contextId;
  d.graph_id = m.graphId;
  d.graph_node = m.graphNodeId;
  return d;
}

DecodedActivity ActivityDecoder::memcpy(const CUpti_ActivityMemcpy6& m) { return copy(m); }

DecodedActivity ActivityDecoder::memcpy_p2p(const CUpti_ActivityMemcpyPtoP4& m) { return copy(m); }

DecodedActivity ActivityDecoder::memset(const CUpti_ActivityMemset4& m) {
  DecodedActivity d;
  Event& e = d.event;
  e.kind = EventKind::Memset;
  const uint64_t key = (uint64_t{2} << 40) | m.memoryKind;
  auto it = fixed_names_.find(key);
  if (it == fixed_names_.end())
    it = fixed_names_.emplace(key, trace_.intern(memset_name(m.memoryKind))).first;
  e.name = it->second;
  e.start_ns = static_cast<int64_t>(m.start);
  e.duration_ns = static_cast<int64_t>(m.end - m.start);
  e.pid = m.deviceId;
  e.tid = m.streamId;
  e.device = static_cast<int32_t>(m.deviceId);
  e.stream = m.streamId;
  e.correlation = m.correlationId;
  e.transfer.bytes = m.bytes;
  e.transfer.context = m.contextId;
  e.transfer.dst_kind = static_cast<uint8_t>(m.memoryKind);
  d.context = m.contextId;
  d.graph_id = m.graphId;
  d.graph_node = m.graphNodeId;
  return d;
}

DecodedActivity ActivityDecoder::api(const CUpti_ActivityAPI& a, bool driver) {
  DecodedActivity d;
  Event& e = d.event;
  e.kind = driver ? EventKind::CudaDriver : EventKind::CudaRuntime;
  const ApiName& n =
      api_name(driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API, a.cbid);
  e.name = n.name;
  e.start_ns = static_cast<int64_t>(a.start);
  e.duration_ns = static_cast<int64_t>(a.end - a.start);
  e.pid = a.processId;
  e.tid = a.threadId;  // mapped to the OS thread id by the correlator
  e.cbid = static_cast<int32_t>(a.cbid);
  e.correlation = a.correlationId;
  d.raw_thread = a.threadId;
  d.launch = n.launch;
  return d;
}

DecodedActivity ActivityDecoder::sync(const CUpti_ActivitySynchronization2& s) {
  DecodedActivity d;
  Event& e = d.event;
  e.kind = EventKind::CudaSync;
  const uint64_t key = (uint64_t{3} << 40) | static_cast<uint32_t>(s.type);
  auto it = fixed_names_.find(key);
  if (it == fixed_names_.end())
    it = fixed_names_.emplace(key, trace_.intern(sync_type_name(s.type))).first;
  e.name = it->second;
  e.start_ns = static_cast<int64_t>(s.start);
  e.duration_ns = static_cast<int64_t>(s.end - s.start);
  // Context- and device-wide syncs have no stream: Kineto writes stream -1 on tid 1.
  const bool no_stream = s.streamId == CUPTI_SYNCHRONIZATION_INVALID_VALUE;
  e.stream = no_stream ? -1 : static_cast<int64_t>(s.streamId);
  e.tid = no_stream ? 1 : static_cast<int64_t>(s.streamId);
  e.correlation = s.correlationId;
  d.context = s.contextId;  // device resolved by the correlator from the context
  return d;
}

DecodedActivity ActivityDecoder::graph(const CUpti_ActivityGraphTrace2& g) {
  DecodedActivity d;
  Event& e = d.event;
  // A kernel-category event, so that every reader counts the graph's span as GPU work.
  e.kind = EventKind::Kernel;
  const uint64_t key = (uint64_t{5} << 40) | g.graphId;
  auto it = fixed_names_.find(key);
  if (it == fixed_names_.end())
    it = fixed_names_.emplace(key, trace_.intern("CUDA graph " + std::to_string(g.graphId))).first;
  e.name = it->second;
  e.start_ns = static_cast<int64_t>(g.start);
  e.duration_ns = static_cast<int64_t>(g.end - g.start);
  // INT_MAX: the graph starts (or ends) on the host; its other end names the device.
  const uint32_t device = g.deviceId != INT_MAX ? g.deviceId : g.endDeviceId;
  e.device = device != INT_MAX ? static_cast<int32_t>(device) : 0;
  e.pid = e.device;
  e.stream = g.streamId;
  e.tid = g.streamId;
  e.correlation = g.correlationId;
  e.kernel.context = g.contextId != INT_MAX ? g.contextId : g.endContextId;
  d.context = e.kernel.context;
  d.graph_id = g.graphId;
  d.graph_launch = true;
  return d;
}

DecodedActivity ActivityDecoder::call(bool driver, uint32_t cbid, uint32_t correlation,
                                      int64_t start_ns, int64_t end_ns, int64_t pid,
                                      int64_t tid) {
  DecodedActivity d;
  Event& e = d.event;
  e.kind = driver ? EventKind::CudaDriver : EventKind::CudaRuntime;
  const ApiName& n =
      api_name(driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API, cbid);
  e.name = n.name;
  e.start_ns = start_ns;
  e.duration_ns = end_ns > start_ns ? end_ns - start_ns : 0;
  e.pid = pid;
  e.tid = tid;
  e.cbid = static_cast<int32_t>(cbid);
  e.correlation = correlation;
  d.launch = n.launch;
  d.host_clock = true;
  return d;
}

DecodedActivity ActivityDecoder::overhead(const CUpti_ActivityOverhead3& o) {
  DecodedActivity d;
  Event& e = d.event;
  e.kind = EventKind::Overhead;
  const uint64_t key = (uint64_t{4} << 40) | static_cast<uint32_t>(o.overheadKind);
  auto it = fixed_names_.find(key);
  if (it == fixed_names_.end())
    it = fixed_names_.emplace(key, trace_.intern(overhead_kind_name(o.overheadKind))).first;
  e.name = it->second;
  e.start_ns = static_cast<int64_t>(o.start);
  e.duration_ns = static_cast<int64_t>(o.end - o.start);
  // Kineto's overhead row: pid -1, tid 0.
  e.pid = -1;
  e.tid = 0;
  return d;
}

RecordRole ActivityDecoder::decode(const CUpti_Activity& record, DecodedActivity* activity,
                                   ExternalCorrelationRecord* ext) {
  switch (record.kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      *activity = kernel(reinterpret_cast<const CUpti_ActivityKernel10&>(record));
      return RecordRole::Activity;
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      *activity = memcpy(reinterpret_cast<const CUpti_ActivityMemcpy6&>(record));
      return RecordRole::Activity;
    case CUPTI_ACTIVITY_KIND_MEMCPY2:
      *activity = memcpy_p2p(reinterpret_cast<const CUpti_ActivityMemcpyPtoP4&>(record));
      return RecordRole::Activity;
    case CUPTI_ACTIVITY_KIND_MEMSET:
      *activity = memset(reinterpret_cast<const CUpti_ActivityMemset4&>(record));
      return RecordRole::Activity;
    case CUPTI_ACTIVITY_KIND_RUNTIME: {
      const auto& a = reinterpret_cast<const CUpti_ActivityAPI&>(record);
      if (is_hidden_runtime_api(a.cbid)) return RecordRole::Skipped;
      *activity = api(a, /*driver=*/false);
      return RecordRole::Activity;
    }
    case CUPTI_ACTIVITY_KIND_DRIVER:
      *activity = api(reinterpret_cast<const CUpti_ActivityAPI&>(record), /*driver=*/true);
      return RecordRole::Activity;
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
      *activity = sync(reinterpret_cast<const CUpti_ActivitySynchronization2&>(record));
      return RecordRole::Activity;
    case CUPTI_ACTIVITY_KIND_OVERHEAD:
      *activity = overhead(reinterpret_cast<const CUpti_ActivityOverhead3&>(record));
      return RecordRole::Activity;
    case CUPTI_ACTIVITY_KIND_GRAPH_TRACE:
      *activity = graph(reinterpret_cast<const CUpti_ActivityGraphTrace2&>(record));
      return RecordRole::Activity;
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
      const auto& x = reinterpret_cast<const CUpti_ActivityExternalCorrelation&>(record);
      ext->kind = x.externalKind;
      ext->correlation = x.correlationId;
      ext->external_id = x.externalId;
      return RecordRole::ExternalCorrelation;
    }
    default:
      ++unknown_records_;
      return RecordRole::Skipped;
  }
}

}  // namespace ptprof::detail
