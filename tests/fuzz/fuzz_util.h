// Shared by the fuzz targets: what the `ptprof` command does with a trace it has read.
#pragma once

#include <cstdlib>
#include <string>

#include "ptprof/error.h"
#include "ptprof/key_averages.h"
#include "ptprof/report.h"
#include "ptprof/trace.h"
#include "trace/json_writer.h"
#include "trace/trace_reader.h"

namespace ptprof::fuzz {

// key_averages and its table (both groupings, a sort that reads every column), the report, then
// the trace written back as JSON, which must parse again with the same events; and what ptprof
// wrote from a trace it read must come out byte for byte the same when read and written again
// (the reader reads everything the writer writes). Not the first writing: names with invalid
// UTF-8 are written with U+FFFD escaped, which reads back as the character itself.
inline void exercise_trace(const Trace& trace) {
  for (bool by_shape : {false, true}) {
    KeyAverages avg = trace.key_averages(by_shape);
    (void)avg.table(SortBy::SelfCpuTimeTotal, 20);
    (void)avg.table(SortBy::Flops, 5);
  }
  // The report on whatever the reader accepted: it says what it could not determine, never
  // crashes, and writes valid JSON.
  const Report report(trace);
  (void)report.summary();
  (void)report.to_html();
  if (!detail::json_problem(report.to_json(), detail::JsonWriter::kMaxDepth).empty())
    __builtin_trap();
  const std::string json = trace.to_json();
  Trace again;
  try {
    again = detail::parse_trace(json, "round trip");
  } catch (const Error& e) {
    // ptprof wrote something its own reader rejects.
    __builtin_trap();
  }
  if (again.events.size() != trace.events.size()) __builtin_trap();
  const std::string second = again.to_json();
  Trace third;
  try {
    third = detail::parse_trace(second, "round trip");
  } catch (const Error& e) {
    __builtin_trap();
  }
  if (third.to_json() != second) __builtin_trap();
}

}  // namespace ptprof::fuzz
