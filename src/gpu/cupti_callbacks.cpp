#include "gpu/cupti_callbacks.h"

#include <atomic>

#include "gpu/cupti_call_log.h"
#include "gpu/cupti_decode.h"
#include "gpu/cupti_graphs.h"
#include "trace/clock.h"

namespace ptprof::detail::lean {
namespace {

constexpr uint32_t kMaxOps = 256;  // deeper ops are unknown (their launches get no op)

// Constant-initialized, so every access is a plain TLS load (no init guard).
struct HotThread {
  uint32_t epoch = 0;       // of `depth`: a stale stack is reset on the next push
  uint32_t depth = 0;       // ops open; may exceed kMaxOps
  uint32_t api_epoch = 0;   // of `in_runtime`
  uint32_t in_runtime = 0;  // recorded runtime calls entered and not yet exited
  uint64_t ops[kMaxOps] = {};
};
thread_local HotThread tl_hot;

std::atomic<uint32_t> g_epoch{1};
std::atomic<CuptiApi*> g_api{nullptr};
std::atomic<OpenOpsHook> g_names{nullptr};
CallLog* const g_calls = &CallLog::get();

void on_api(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const CUpti_CallbackData& cb) {
  HotThread& t = tl_hot;
  const uint32_t epoch = g_epoch.load(std::memory_order_relaxed);
  if (__builtin_expect(t.api_epoch != epoch, 0)) {
    t.api_epoch = epoch;
    t.in_runtime = 0;  // an exit lost when an earlier session unsubscribed
  }
  const bool driver = domain == CUPTI_CB_DOMAIN_DRIVER_API;
  if (cb.callbackSite == CUPTI_API_ENTER) {
    if (driver) {
      if (t.in_runtime != 0) return;  // the runtime call around it is the launch
    } else {
      ++t.in_runtime;
    }
    *cb.correlationData = static_cast<uint64_t>(now_ticks());
    return;
  }
  const int64_t end = now_ticks();
  if (driver) {
    if (t.in_runtime != 0) return;
  } else if (t.in_runtime != 0) {
    --t.in_runtime;
  }
  HostCall c;
  c.start = static_cast<int64_t>(*cb.correlationData);
  c.end = end;
  c.op = current_op();
  c.correlation = cb.correlationId;
  c.cbid = static_cast<uint16_t>(cbid);
  c.driver = driver ? 1 : 0;
  g_calls->append(c);
}

void on_graph(CUpti_CallbackId cbid, const CUpti_ResourceData& rd) {
  CuptiApi* api = g_api.load(std::memory_order_acquire);
  const auto* g = static_cast<const CUpti_GraphData*>(rd.resourceDescriptor);
  if (api == nullptr || g == nullptr || g->node == nullptr) return;
  uint64_t node = 0;
  if (api->graph_node_id(g->node, &node) != CUPTI_SUCCESS) return;
  uint32_t graph = 0;
  if (g->graph != nullptr) api->graph_id(g->graph, &graph);
  GraphCaptures& captures = GraphCaptures::get();
  switch (cbid) {
    case CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED: {
      OpenOp open[kMaxOps];
      std::size_t n = 0;
      if (OpenOpsHook names = g_names.load(std::memory_order_acquire)) n = names(open, kMaxOps);
      if (n == 0) n = open_ops(open, kMaxOps);
      captures.created(node, graph, open, n);
      break;
    }
    case CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED: {
      uint64_t original = 0;
      if (g->originalNode != nullptr &&
          api->graph_node_id(g->originalNode, &original) == CUPTI_SUCCESS)
        captures.cloned(node, graph, original);
      break;
    }
    case CUPTI_CBID_RESOURCE_GRAPHNODE_DESTROY_STARTING:
      captures.destroyed(node);
      break;
    default:
      break;
  }
}

}  // namespace

void push_op(uint64_t id) {
  HotThread& t = tl_hot;
  const uint32_t epoch = g_epoch.load(std::memory_order_relaxed);
  if (__builtin_expect(t.epoch != epoch, 0)) {
    t.epoch = epoch;
    t.depth = 0;
  }
  if (__builtin_expect(t.depth < kMaxOps, 1)) t.ops[t.depth] = id;
  ++t.depth;
}

void pop_op(uint64_t) {
  HotThread& t = tl_hot;
  if (t.depth > 0 && t.epoch == g_epoch.load(std::memory_order_relaxed)) --t.depth;
}

uint64_t current_op() {
  const HotThread& t = tl_hot;
  if (t.epoch != g_epoch.load(std::memory_order_relaxed) || t.depth == 0 || t.depth > kMaxOps)
    return 0;
  return t.ops[t.depth - 1];
}

std::size_t open_ops(OpenOp* out, std::size_t max) {
  const HotThread& t = tl_hot;
  if (t.epoch != g_epoch.load(std::memory_order_relaxed)) return 0;
  std::size_t n = t.depth < kMaxOps ? t.depth : kMaxOps;
  if (n > max) n = max;
  for (std::size_t i = 0; i < n; ++i) out[i] = OpenOp{t.ops[i], nullptr, false};
  return n;
}

void reset_op_stacks() {
  g_epoch.fetch_add(1, std::memory_order_relaxed);
}

void set_callback_context(CuptiApi* api, OpenOpsHook names) {
  g_names.store(names, std::memory_order_release);
  g_api.store(api, std::memory_order_release);
}

void CUPTIAPI on_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                          const void* data) {
  if (data == nullptr) return;
  switch (domain) {
    case CUPTI_CB_DOMAIN_RUNTIME_API:
    case CUPTI_CB_DOMAIN_DRIVER_API:
      on_api(domain, cbid, *static_cast<const CUpti_CallbackData*>(data));
      break;
    case CUPTI_CB_DOMAIN_RESOURCE:
      on_graph(cbid, *static_cast<const CUpti_ResourceData*>(data));
      break;
    default:
      break;
  }
}

std::vector<std::pair<CUpti_CallbackDomain, CUpti_CallbackId>> launch_callbacks(CuptiApi& api) {
  std::vector<std::pair<CUpti_CallbackDomain, CUpti_CallbackId>> out;
  const std::pair<CUpti_CallbackDomain, uint32_t> domains[] = {
      {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE},
      {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE},
  };
  for (const auto& [domain, size] : domains) {
    for (uint32_t cbid = 1; cbid < size; ++cbid) {
      const char* name = api.callback_name(domain, cbid);
      if (name != nullptr && is_launch_api(api_display_name(name, domain)))
        out.emplace_back(domain, cbid);
    }
  }
  return out;
}

std::vector<CUpti_CallbackId> graph_callbacks() {
  return {CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED,
          CUPTI_CBID_RESOURCE_GRAPHNODE_DESTROY_STARTING};
}

}  // namespace ptprof::detail::lean
