// The trace's "ptprof_cost" metadata: ProfilerCost as a JSON object, and back.
#include "ptprof/profiler_cost.h"

#include <charconv>
#include <cmath>
#include <string>
#include <string_view>

#include "ptprof/error.h"
#include "ptprof/trace.h"
#include "trace/byte_source.h"
#include "trace/json_cursor.h"
#include "trace/json_writer.h"

namespace ptprof {

namespace {

constexpr const char* kKey = "ptprof_cost";

// A number's value, or nothing (and the value skipped) for anything else.
std::optional<double> number_value(detail::JsonCursor& in) {
  const int c = in.peek();
  if (c != '-' && (c < '0' || c > '9')) {
    in.skip();
    return std::nullopt;
  }
  const std::string text(in.number());
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

}  // namespace

std::optional<ProfilerCost> profiler_cost(const Trace& trace) {
  const auto it = trace.metadata.find(kKey);
  if (it == trace.metadata.end()) return std::nullopt;
  try {
    detail::MemorySource src(it->second);
    detail::JsonCursor in(src, kKey);
    if (in.peek() != '{') return std::nullopt;
    ProfilerCost cost;
    bool have_op = false;
    in.begin_object();
    bool first = true;
    std::string_view key;
    while (in.next_member(first, key)) {
      const std::string k(key);
      const std::optional<double> v = number_value(in);
      if (!v) continue;
      if (k == "op_ns" && *v >= 0) {
        cost.op_ns = *v;
        have_op = true;
      } else if (k == "op_ns_unprofiled" && *v >= 0) {
        cost.op_ns_unprofiled = *v;
      } else if (k == "calibration_ops" && *v >= 0 && *v < 9e18) {
        cost.calibration_ops = static_cast<int64_t>(*v);
      } else if (k == "launch_ns" && *v >= 0) {
        cost.launch_ns = *v;
      } else if (k == "close_ns" && *v >= 0 && *v < 9e18) {
        cost.close_ns = static_cast<int64_t>(*v);
      }
    }
    if (!have_op) return std::nullopt;
    return cost;
  } catch (const Error&) {
    return std::nullopt;  // malformed: as if absent (the report says the cost is unknown)
  }
}

void set_profiler_cost(Trace& trace, const ProfilerCost& cost) {
  detail::JsonWriter w;
  w.begin_object();
  w.key("op_ns").value(cost.op_ns);
  w.key("op_ns_unprofiled").value(cost.op_ns_unprofiled);
  w.key("calibration_ops").value(cost.calibration_ops);
  if (cost.launch_ns) w.key("launch_ns").value(*cost.launch_ns);
  w.key("close_ns").value(cost.close_ns);
  w.end_object();
  trace.metadata[kKey] = w.buffer();
}

}  // namespace ptprof
