// Thresholds as outputs list them (thresholds.h).
#include "analysis/report/thresholds.h"

#include <cstdint>

#include "trace/json_writer.h"

namespace ptprof::detail {

const char* unit_name(ThresholdUnit u) {
  switch (u) {
    case ThresholdUnit::share:
      return "share";
    case ThresholdUnit::ratio:
      return "ratio";
    case ThresholdUnit::ns:
      return "us";
    case ThresholdUnit::count:
      return "count";
    case ThresholdUnit::percent:
      return "%";
    case ThresholdUnit::compute_major:
      return "compute capability";
  }
  return "?";
}

namespace {
std::string without_ns(const ThresholdInfo& info) {
  std::string name = info.name;
  if (info.unit == ThresholdUnit::ns && name.size() > 3 &&
      name.compare(name.size() - 3, 3, "_ns") == 0)
    name.resize(name.size() - 3);
  return name;
}
}  // namespace

std::string output_name(const ThresholdInfo& info) {
  return info.unit == ThresholdUnit::ns ? without_ns(info) + "_us" : std::string(info.name);
}

std::string page_name(const ThresholdInfo& info) {
  return without_ns(info);
}

std::string output_name(std::string_view member) {
  std::string out(member);
  for_each_threshold(ReportThresholds{}, [&](const ThresholdInfo& info, auto) {
    if (member == info.name) out = output_name(info);
  });
  return out;
}

template <typename T>
std::string threshold_text(const ThresholdInfo& info, T value) {
  if constexpr (std::is_integral_v<T>) {
    if (info.unit == ThresholdUnit::ns)
      return format_general(static_cast<double>(value) / 1e3) + " us";
    return std::to_string(value);
  } else {
    return format_general(value);
  }
}
template std::string threshold_text(const ThresholdInfo&, double);
template std::string threshold_text(const ThresholdInfo&, int32_t);
template std::string threshold_text(const ThresholdInfo&, int64_t);

}  // namespace ptprof::detail
