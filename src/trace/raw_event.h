// raw_event.h: one traceEvents element as the reader reads it, before its kind says what it is.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "ptprof/event.h"
#include "trace/arg_lookup.h"
#include "trace/decimal.h"

namespace ptprof::detail {

// A time in an event: parsed when read, checked when the event's kind is known.
struct TimeField {
  enum State : uint8_t { kAbsent, kOk, kNotNumber, kOutOfRange } state = kAbsent;
  Wide ns = 0;
  uint64_t offset = 0;
};

// One traceEvents element as read, reused from event to event.
struct RawEvent {
  char ph = 0;  // 'X', 'i', 's', 'f', 'M', ...; 0: absent or not one character
  bool has_cat = false;
  std::string cat;  // lower-cased
  bool has_name = false;
  std::string name;
  bool has_pid = false;
  int64_t pid = 0;
  int64_t tid = 0;
  TimeField ts;
  TimeField dur;
  IntValue id;  // flows
  bool has_args = false;

  IntValue ints[static_cast<int>(Arg::kCount)];
  bool has_double[2] = {false, false};  // blocks per SM, warps per SM
  double doubles[2] = {0, 0};
  bool has_finished = false;
  bool finished = true;
  int32_t grid[3] = {0, 0, 0};
  int32_t block[3] = {0, 0, 0};
  bool has_stack = false;
  std::string stack;
  bool has_text = false;  // M events: args "name" or "labels"
  std::string text;
  bool has_inputs = false;
  std::size_t n_inputs = 0;  // of RawEvent::inputs in use
  bool has_coll = false;     // any collective arg
  CollectiveInfo coll;       // its strings (numbers are in ints)
  bool has_captured_by = false;
  std::string captured_by;
  bool has_capture_ranges = false;
  std::string capture_ranges;  // ';'-joined, as written

  void reset() {
    ph = 0;
    has_cat = has_name = has_pid = has_args = false;
    pid = tid = 0;
    ts = TimeField{};
    dur = TimeField{};
    id = IntValue{};
    for (IntValue& v : ints) v.has = false;
    has_double[0] = has_double[1] = false;
    has_finished = false;
    finished = true;
    std::fill(grid, grid + 3, 0);
    std::fill(block, block + 3, 0);
    has_stack = has_text = has_inputs = false;
    has_captured_by = has_capture_ranges = false;
    n_inputs = 0;
    if (has_coll) {
      has_coll = false;
      coll = CollectiveInfo{};
    }
  }
  const IntValue& arg(Arg a) const { return ints[static_cast<int>(a)]; }
};

}  // namespace ptprof::detail
