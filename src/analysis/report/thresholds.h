// thresholds.h: ReportThresholds' members with what ptprof/report_thresholds.def says of each,
// for the outputs that list them (JSON, the HTML page, docs/report.md).
#pragma once

#include <string>
#include <string_view>
#include <type_traits>

#include "ptprof/report.h"

namespace ptprof::detail {

enum class ThresholdUnit { share, ratio, ns, count, percent, compute_major };

struct ThresholdInfo {
  const char* name;  // the member's
  ThresholdUnit unit;
  const char* source;  // "tensorboard", "hta", "torch", "ptprof"
  const char* description;
};

const char* unit_name(ThresholdUnit u);
// The name outputs print: a time's in microseconds, "kernel_wait_ns" as "kernel_wait_us".
std::string output_name(const ThresholdInfo& info);
std::string output_name(std::string_view member);
// The name the HTML page shows next to a value with its unit: "kernel_wait" (30 us).
std::string page_name(const ThresholdInfo& info);

// f(info, value) for each threshold in the .def's order; value has the member's type.
template <typename F>
void for_each_threshold(const ReportThresholds& th, F&& f) {
#define PTPROF_REPORT_THRESHOLD(type, name, value, unit, source, description) \
  f(ThresholdInfo{#name, ThresholdUnit::unit, #source, description}, th.name);
#include "ptprof/report_thresholds.def"
#undef PTPROF_REPORT_THRESHOLD
}

// "30 us", "0.05", "1020": a threshold's value as the page and the docs print it.
template <typename T>
std::string threshold_text(const ThresholdInfo& info, T value);

}  // namespace ptprof::detail
