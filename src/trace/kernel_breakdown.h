// kernel_breakdown.h: a trace's GPU kernels by what launched them and how: per operator,
// kernel name and launch geometry (TensorBoard's "Kernel Properties + Op Name" grouping); the
// op's copies and memsets beside them, so that an op's rows hold all of its device time.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ptprof/event.h"

namespace ptprof {
class Trace;
}

namespace ptprof::detail {

struct KernelOpRow {
  EventKind kind = EventKind::Kernel;  // Kernel, Memcpy or Memset
  // Views of the trace's names (valid while it is): a trace's launches can make hundreds of
  // thousands of rows, each with a kernel name of hundreds of bytes.
  std::string_view op;      // the CPU op whose External id the kernel carries; "" when none
  std::string_view kernel;  // the kernel's (copy's, memset's) name
  int32_t grid[3] = {0, 0, 0};
  int32_t block[3] = {0, 0, 0};
  int32_t registers_per_thread = 0;
  int32_t shared_memory = 0;
  int64_t calls = 0;
  int64_t total_ns = 0, min_ns = 0, max_ns = 0;
  // Means weighted by each call's duration (TensorBoard's op_agg.py); 0 for rows of 0 ns.
  double blocks_per_sm = 0;
  double occupancy_pct = 0;
};

// One row per (op, kind, name, grid, block, registers, shared memory), by total time, largest
// first.
std::vector<KernelOpRow> kernels_by_op(const Trace& trace);

}  // namespace ptprof::detail
