// cupti_callbacks.h: lean mode's hot path (CudaTracing::Lean).
//
// - The recorder's push/pop hooks keep, per thread, the ids of the ops open there: a store
//   into a thread-local array, no CUPTI call.
// - CUPTI's callback, enabled on the launch, copy, memset, synchronization and graph-launch
//   calls of the runtime and driver APIs only, records each such call into the CallLog: its
//   correlation id (which CUPTI also writes into the GPU records the call causes), its entry
//   and exit on ptprof's clock, and the innermost open op. A driver call made inside a runtime
//   call that is recorded is part of the same launch and is skipped.
// - On graph node creation and cloning, the ops open on the thread go into GraphCaptures.
// The callback reaches its state through globals: CUPTI calls a plain function.
#pragma once

#include <cupti.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "gpu/cupti_api.h"
#include "gpu/gpu_backend.h"

namespace ptprof::detail::lean {

// The hooks given to the recorder.
void push_op(uint64_t id);
void pop_op(uint64_t unused);
// The innermost op open on the calling thread, 0 if none (or deeper than the stack keeps).
uint64_t current_op();
// Up to `max` open ops of the calling thread, outermost first, ids only; returns how many.
std::size_t open_ops(OpenOp* out, std::size_t max);
// A new generation of op stacks: what a thread's stack held before is ignored from now on
// (ops left open when hooks were removed never pop).
void reset_op_stacks();

// Where the callback finds the API table (graph ids) and the recorder's names hook; set
// before subscribing. `api` must live for the process.
void set_callback_context(CuptiApi* api, OpenOpsHook names);

void CUPTIAPI on_callback(void* userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                          const void* data);

// The runtime and driver calls whose GPU records carry their correlation id (is_launch_api,
// the one classification ptprof has), from CUPTI's own names: what the callback is enabled on.
std::vector<std::pair<CUpti_CallbackDomain, CUpti_CallbackId>> launch_callbacks(CuptiApi& api);
// The resource callbacks graph attribution needs.
std::vector<CUpti_CallbackId> graph_callbacks();

}  // namespace ptprof::detail::lean
