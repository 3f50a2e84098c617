// op_inputs.h: recorded op inputs as the reader, the recorder and the FLOP formulas share them.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>

#include "ptprof/event.h"

namespace ptprof::detail {

// A recorded double as int64_t (truncated toward zero, as before), or nullopt for NaN,
// infinities and values beyond int64_t, whose cast is undefined behaviour.
inline std::optional<int64_t> double_to_int64(double d) {
  // -2^63 and 2^63 are exact doubles; every double in [-2^63, 2^63) truncates into range.
  if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0)) return std::nullopt;
  return static_cast<int64_t>(d);
}

// OpInput::sizes of a ScalarList holds this for a value without an int64_t (a double beyond
// int64_t, or NaN): the FLOP formulas treat it as unknown.
constexpr int64_t kUnknownListValue = std::numeric_limits<int64_t>::min();

// Cleared for the next input, keeping its buffers (the reader and the details decoder reuse
// one OpInput from input to input).
inline void reset_input(OpInput& in) {
  in.kind = OpInput::Kind::None;
  in.dtype.clear();
  in.sizes.clear();
  in.strides.clear();
  in.list_sizes.clear();
  in.concrete.clear();
  in.scalar = 0;
}

}  // namespace ptprof::detail
