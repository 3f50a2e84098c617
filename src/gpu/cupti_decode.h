// cupti_decode.h: one CUPTI activity record -> one ptprof Event (or an external-correlation
// pair). Pure: no CUPTI calls, so tests feed it hand-built records of the real struct types.
//
// Record versions read (CUDA 13 cupti_activity.h): CONCURRENT_KERNEL/KERNEL as Kernel10,
// MEMCPY as Memcpy6, MEMCPY2 as MemcpyPtoP4, MEMSET as Memset4, RUNTIME/DRIVER as API,
// SYNCHRONIZATION as Synchronization2, OVERHEAD as Overhead3, GRAPH_TRACE as GraphTrace2,
// EXTERNAL_CORRELATION. Newer CUPTI versions only append fields, so only fields present in
// these versions are read. Lean mode's calls, timed by ptprof's callbacks, are decoded by
// call().
//
// Times stay on CUPTI's clock here (the correlator maps them); names are interned into the
// Trace the decoder was given.
#pragma once

#include <cupti.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gpu/cupti_api.h"
#include "ptprof/event.h"
#include "ptprof/trace.h"

namespace ptprof::detail {

// A decoded activity, before correlation.
struct DecodedActivity {
  Event event;              // start_ns/duration_ns still on CUPTI's clock (see host_clock)
  uint32_t context = 0;     // CUDA context (sync records know no device, only a context)
  uint32_t raw_thread = 0;  // API records: CUPTI's thread id (low 32 bits of pthread_self)
  bool launch = false;      // an API call that may start GPU work (draws an ac2g arrow)
  // A call timed by ptprof's own callback: times on ptprof's clock, tid the OS thread's.
  bool host_clock = false;
  // Work a CUDA graph launch ran: the graph and the node (0 for a graph launch's own record).
  uint32_t graph_id = 0;
  uint64_t graph_node = 0;
  bool graph_launch = false;  // one record for a whole graph launch (GRAPH_TRACE)
};

struct ExternalCorrelationRecord {
  CUpti_ExternalCorrelationKind kind = CUPTI_EXTERNAL_CORRELATION_KIND_INVALID;
  uint32_t correlation = 0;
  uint64_t external_id = 0;
};

enum class RecordRole : uint8_t {
  Skipped,              // a kind (or a runtime call) ptprof does not show
  Activity,             // *activity filled
  ExternalCorrelation,  // *ext filled
};

// ---- pure helpers ----
std::string demangle(const char* name);
const char* memcpy_kind_name(uint8_t copy_kind);     // "HtoD", ...
const char* memory_kind_name(uint32_t memory_kind);  // "Pageable", "Device", ...
const char* overhead_kind_name(CUpti_ActivityOverheadKind kind);
const char* sync_type_name(CUpti_ActivitySynchronizationType type);
std::string memcpy_name(uint8_t copy_kind, uint8_t src_kind, uint8_t dst_kind);
std::string memset_name(uint32_t memory_kind);
// "cudaLaunchKernel_v7000" -> "cudaLaunchKernel"; CUDA 13's "__cudaLaunchKernel" (what nvcc's
// launch stubs call) -> "cudaLaunchKernel".
std::string api_display_name(std::string_view cupti_name, CUpti_CallbackDomain domain);
// Launches, copies, memsets, graph launches and synchronizations: calls whose GPU-side record
// (kernel, copy, memset, sync) carries their correlation id.
bool is_launch_api(std::string_view display_name);
// Runtime calls too frequent and too uninteresting to show (Kineto hides the same).
bool is_hidden_runtime_api(CUpti_CallbackId cbid);

struct KernelOccupancy {
  float blocks_per_sm = 0;
  float warps_per_sm = 0;
  int32_t occupancy_pct = 0;  // 0 when it cannot be computed
};
// Kineto's figures: blocks per SM = grid blocks / SMs, warps per SM = blocks per SM x
// threads per block / warp size, est. achieved occupancy = min(blocks per SM, the occupancy
// calculator's active blocks per SM) x threads per block / max threads per SM.
KernelOccupancy kernel_occupancy(const GpuDeviceInfo* device, const int32_t grid[3],
                                 const int32_t block[3], int32_t registers_per_thread,
                                 int32_t static_shared, int32_t dynamic_shared,
                                 bool shared_limit_optin);

class ActivityDecoder {
 public:
  using CallbackNamer = std::function<const char*(CUpti_CallbackDomain, uint32_t)>;

  // `devices` indexed by device id (for SM counts and occupancy); `namer` names API calls.
  ActivityDecoder(Trace& trace, std::vector<GpuDeviceInfo> devices, CallbackNamer namer);

  RecordRole decode(const CUpti_Activity& record, DecodedActivity* activity,
                    ExternalCorrelationRecord* ext);

  DecodedActivity kernel(const CUpti_ActivityKernel10& k);
  DecodedActivity memcpy(const CUpti_ActivityMemcpy6& m);
  DecodedActivity memcpy_p2p(const CUpti_ActivityMemcpyPtoP4& m);
  DecodedActivity memset(const CUpti_ActivityMemset4& m);
  DecodedActivity api(const CUpti_ActivityAPI& a, bool driver);
  DecodedActivity sync(const CUpti_ActivitySynchronization2& s);
  DecodedActivity overhead(const CUpti_ActivityOverhead3& o);
  DecodedActivity graph(const CUpti_ActivityGraphTrace2& g);
  // A call lean mode's callback recorded (times already ptprof's, in ns).
  DecodedActivity call(bool driver, uint32_t cbid, uint32_t correlation, int64_t start_ns,
                       int64_t end_ns, int64_t pid, int64_t tid);

  // Records of kinds the decoder does not know (newer CUPTI, or not enabled by ptprof).
  uint64_t unknown_records() const { return unknown_records_; }

 private:
  // Memcpy6 and MemcpyPtoP4 share every field a copy event needs.
  template <typename Copy>
  DecodedActivity copy(const Copy& m);
  struct ApiName {
    std::string_view name;
    bool launch = false;
  };
  const GpuDeviceInfo* device(uint32_t id) const;
  std::string_view kernel_name(const char* mangled);
  const ApiName& api_name(CUpti_CallbackDomain domain, uint32_t cbid);

  Trace& trace_;
  std::vector<GpuDeviceInfo> devices_;
  CallbackNamer namer_;
  // CUPTI's name pointers live as long as their module; the copy guards against reuse.
  struct KernelName {
    std::string mangled;
    std::string_view demangled;
  };
  std::unordered_map<const char*, KernelName> kernel_names_;
  std::unordered_map<uint64_t, ApiName> api_names_;
  std::unordered_map<uint64_t, std::string_view> fixed_names_;
  uint64_t unknown_records_ = 0;
};

}  // namespace ptprof::detail
