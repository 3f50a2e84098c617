// trace_generator.h: the synthetic trace the benchmarks read (bench_reader) and view
// (bench_view): ptprof's schema with every option and a GPU part, of a given size in JSON.
#pragma once

#include <cstddef>

#include "ptprof/trace.h"

namespace ptprof::bench {

// A trace of at least `target_bytes` of JSON when saved: training steps with user ranges, ATen
// ops with record_shapes inputs (tensors with strides, scalars, scalar lists, tensor lists),
// with_stack C++ stacks and with_flops FLOPs, profile_memory [memory] events, and a GPU part
// (runtime launches, kernels with every field, copies, memsets, syncs, flows, GPU user spans).
// The same every time (a fixed seed).
Trace generate_trace(std::size_t target_bytes);

}  // namespace ptprof::bench
