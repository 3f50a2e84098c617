// Shared by the fuzz targets: what the `ptprof` command does with a trace it has read.
#pragma once

#include <cstdlib>
#include <string>

#include "cli/trace_reader.h"
#include "ptprof/error.h"
#include "ptprof/key_averages.h"
#include "ptprof/trace.h"

namespace ptprof::fuzz {

// key_averages and its table (both groupings, a sort that reads every column), then the
// trace written back as JSON, which must parse again with the same events.
inline void exercise_trace(const Trace& trace) {
  for (bool by_shape : {false, true}) {
    KeyAverages avg = trace.key_averages(by_shape);
    (void)avg.table(SortBy::SelfCpuTimeTotal, 20);
    (void)avg.table(SortBy::Flops, 5);
  }
  const std::string json = trace.to_json();
  Trace again;
  try {
    again = detail::parse_trace(json, "round trip");
  } catch (const Error& e) {
    // ptprof wrote something its own reader rejects.
    __builtin_trap();
  }
  if (again.events.size() != trace.events.size()) __builtin_trap();
}

}  // namespace ptprof::fuzz
