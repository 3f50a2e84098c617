// view_tables.h: what each view shows of one trace, computed once when its index is built
// (index_builder.cpp) and kept there as JSON (or columns, for the memory table), from
// ptprof's own computations: the Report, key_averages, kernels_by_op, memory_allocations and
// collapsed_stacks. The sections and their keys are listed in docs/view.md.
#pragma once

#include <string>

#include "ptprof/report.h"
#include "ptprof/trace.h"
#include "trace/kernel_breakdown.h"
#include "view/index_file.h"

namespace ptprof::view {

// "overview": the trace's identity and devices, each device's utilization over time, and the
// Report (its to_json()).
void write_overview(const Trace& trace, const Report& report, const std::string& file,
                    IndexWriter& w);
// Row tables (row_table.h) "operators.name" (the Report's operators), "operators.shape" and
// "operators.stack" (key_averages grouped by input shape, by stack), each with Tensor Core
// eligibility and the share of its device time in Tensor Core kernels (from `kernels`, the
// trace's kernels_by_op).
void write_operator_tables(const Trace& trace, const Report& report,
                           const std::vector<detail::KernelOpRow>& kernels, IndexWriter& w);
// Row tables "kernels.name" (the Report's kernels) and "kernels.op" (kernels_by_op: kernels,
// copies and memsets), with Tensor Core use.
void write_kernel_tables(const Trace& trace, const Report& report,
                         const std::vector<detail::KernelOpRow>& kernels, IndexWriter& w);
// "flame.self_cpu_time_total" and "flame.self_device_time_total": the stacks as trees.
void write_flame_graphs(const Trace& trace, IndexWriter& w);

}  // namespace ptprof::view
