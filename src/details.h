// details.h: the compact byte format of an op's details (inputs for record_shapes/with_flops,
// native stack for with_stack), written on the hot path into a per-thread arena and decoded
// when the trace is built.
//
//   u8 n_inputs (kNotCaptured: none), then per input:
//     u8 kind (OpInput::Kind)
//     Tensor:     u8 dtype (c10::ScalarType), u8 ndim, u8 has_strides, i64 sizes[ndim],
//                 i64 strides[ndim] if has_strides
//     TensorList: u16 n, then per element: u8 dtype, u8 ndim, i64 sizes[ndim]
//     Scalar:     u8 tag (0 int, 1 double, 2 bool), 8 bytes (i64 or double)
//     ScalarList: u8 tag, u16 n, n * 8 bytes
//     None/Other: nothing
//   u8 stack depth (0: none), u8 truncated, u64 addresses[depth] (innermost first)
#pragma once

#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string_view>
#include <vector>

#include "ptprof/event.h"

namespace ptprof::detail {

constexpr uint8_t kNotCaptured = 0xFF;
constexpr int kMaxInputs = 64;
constexpr int kMaxDims = 16;
constexpr int kMaxListItems = 64;
constexpr std::size_t kMaxDetailBytes = 16384;

// Appends to a fixed buffer. The caller asks for room once per item (`reserve`) and then
// puts unchecked: one bounds check per input instead of one per field. Once a reservation
// fails, the whole record is marked failed and stays so (the caller stops writing).
class DetailWriter {
 public:
  DetailWriter(char* buf, std::size_t cap) : begin_(buf), p_(buf), end_(buf + cap) {}
  bool reserve(std::size_t n) {
    if (static_cast<std::size_t>(end_ - p_) >= n) return true;
    ok_ = false;
    return false;
  }
  // Only within what the last successful `reserve` promised.
  template <typename T>
  void put(T v) {
    std::memcpy(p_, &v, sizeof(T));
    p_ += sizeof(T);
  }
  // A few int64s: a plain loop beats a call to memcpy at these sizes.
  void put_int64s(const int64_t* src, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) std::memcpy(p_ + i * sizeof(int64_t), src + i, 8);
    p_ += n * sizeof(int64_t);
  }
  std::size_t size() const { return static_cast<std::size_t>(p_ - begin_); }
  bool ok() const { return ok_; }

 private:
  char* begin_;
  char* p_;
  char* end_;
  bool ok_ = true;
};

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

struct DecodedDetails {
  bool has_inputs = false;
  std::vector<OpInput> inputs;
  std::size_t inputs_bytes = 0;  // length of the inputs section, from the record's start
  std::vector<uint64_t> stack;  // innermost first
  bool stack_truncated = false;
};

// Decodes one record's details; malformed bytes decode as far as they are valid. Without
// `keep_inputs` the inputs are only walked over (has_inputs and inputs_bytes still tell them),
// for a caller that decodes each distinct inputs section once.
DecodedDetails decode_details(std::string_view bytes, bool keep_inputs = true);

// PyTorch's name of a dtype in "Input type" (c10 TypeMeta names: "float", "long int", ...).
std::string dtype_name(int8_t scalar_type);

}  // namespace ptprof::detail
