// cost_calibration.h: what recording one op costs, measured in this process (ProfilerCost).
//
// Called by the session right after it installs a window's callbacks and before the window
// opens: the calibration's own records fall into the warmup the window's start discards.
#pragma once

#include "ptprof/profiler_cost.h"

namespace ptprof::detail {

struct CalibrationOptions {
  int rounds = 8;           // per mode, interleaved
  int ops_per_round = 128;  // ATen ops timed in one round
};

// Times a tiny real ATen op (aten::add of two one-element CPU tensors) on the calling thread
// with RecordFunction on, so through every global callback as installed now, and with it off
// for this thread (at::RecordFunctionGuard(false)), in interleaved rounds; each mode's fastest
// round is its time. op_ns is the difference per op (never below 0): RecordFunction's own
// work and the callbacks', and with profile_memory the op's allocation and free reported
// (the unprofiled rounds shadow the thread's memory reporter). The loop runs with warm caches,
// so op_ns is the least an op pays: in a real step the callbacks' code and buffers are evicted
// between ops (bench_step prints this estimate beside the measured cost). Throws what libtorch
// throws; the caller reports it and records no cost.
ProfilerCost calibrate_op_cost(const CalibrationOptions& options = {});

}  // namespace ptprof::detail
