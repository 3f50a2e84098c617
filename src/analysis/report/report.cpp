// Report::Report: the index, then the passes in order over one trace (the tables beside them
// on a second thread), then the rules. Each pass is a file of this directory and each rule
// one of analysis/rules/; docs/report.md gives their definitions. Everything is int64 ns
// until the output.
#include "ptprof/report.h"

#include <algorithm>
#include <exception>
#include <iterator>
#include <system_error>
#include <thread>

#include "analysis/report/analysis.h"
#include "trace/json_writer.h"

namespace ptprof {

const char* step_category_name(StepCategory c) {
  switch (c) {
    case StepCategory::Kernel:
      return "Kernel";
    case StepCategory::Memcpy:
      return "Memcpy";
    case StepCategory::Memset:
      return "Memset";
    case StepCategory::Communication:
      return "Communication";
    case StepCategory::Runtime:
      return "Runtime";
    case StepCategory::DataLoader:
      return "DataLoader";
    case StepCategory::CpuExec:
      return "CPU Exec";
    case StepCategory::Other:
      return "Other";
  }
  return "?";
}

const char* idle_cause_name(IdleCause c) {
  switch (c) {
    case IdleCause::DataLoader:
      return "data_loader";
    case IdleCause::Collective:
      return "collective";
    case IdleCause::DeviceToHost:
      return "device_to_host";
    case IdleCause::Sync:
      return "sync";
    case IdleCause::Allocator:
      return "allocator";
    case IdleCause::OpOverhead:
      return "op_overhead";
    case IdleCause::OutsideOps:
      return "outside_ops";
    case IdleCause::Unknown:
      return "unknown";
  }
  return "?";
}

namespace detail {

int64_t Analysis::in_steps(int64_t start, int64_t end) const {
  const Intervals& steps = facts.step_set;
  if (end == start) {
    auto it = std::upper_bound(steps.begin(), steps.end(), start,
                               [](int64_t v, const Interval& iv) { return v < iv.start; });
    return it != steps.begin() && start < std::prev(it)->end ? 1 : 0;
  }
  return total_within(steps, start, end);
}

}  // namespace detail

Report::Report(const Trace& trace, const ReportOptions& opts) : options(opts) {
  for (int c = 0; c < kIdleCauses; ++c) idle_causes[c].cause = static_cast<IdleCause>(c);
  source.process_name = trace.process_name;
  source.worker_name = trace.worker_name;
  source.pid = trace.pid;
  source.window_start_ns = trace.window_start_ns;
  source.window_end_ns = trace.window_end_ns;
  source.window_index = trace.window_index;
  source.events = static_cast<int64_t>(trace.events.size());
  detail::Analysis a(trace, options, *this);
  has_gpu_data = !a.index.activities.empty();
  // The tables (key_averages: a quarter of the Report's time) on a thread of their own, beside
  // the passes: they read only the trace and the index, write only the tables and
  // facts.key_averages, and nothing reads those before the rules.
  std::exception_ptr tables_failed;
  auto run_tables = [&] {
    try {
      detail::tables(a);
    } catch (...) {
      tables_failed = std::current_exception();
    }
  };
  std::thread tables;
  try {
    tables = std::thread(run_tables);
  } catch (const std::system_error&) {
    run_tables();  // no thread to be had (a process at its limit): the same tables, in turn
  }
  try {
    detail::check_quality(a);
    detail::find_steps(a);
    detail::step_breakdown(a);
    detail::comm_overlap(a);
    detail::gpu_metrics(a);
    detail::hta_measures(a);
    detail::idle_causes(a);
    detail::launch_stretches(a);
    detail::own_cost(a);
  } catch (...) {
    if (tables.joinable()) tables.join();
    throw;
  }
  if (tables.joinable()) tables.join();
  if (tables_failed) std::rethrow_exception(tables_failed);
  detail::run_rules(a);
}

}  // namespace ptprof
