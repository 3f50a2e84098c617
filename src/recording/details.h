// details.h: the compact byte format of an op's details (inputs for record_shapes/with_flops,
// native stack for with_stack), written on the hot path into a per-thread arena and decoded
// when the trace is built.
//
//   u8 n_inputs (kNotCaptured: none), then per input:
//     u8 kind (OpInput::Kind)
//     Tensor:     u8 dtype (c10::ScalarType), u8 strides (kNoStrides, kStoredStrides,
//                 kDenseStrides), u8 ndim, i64 sizes[ndim], i64 strides[ndim] if stored
//     TensorList: u16 n, then per element: u8 dtype, u8 ndim, i64 sizes[ndim]
//     Scalar:     u8 tag (0 int, 1 double, 2 bool), 8 bytes (i64 or double)
//     ScalarList: u8 tag, u16 n, n * 8 bytes
//     None/Other: nothing
//   then, only where stacks were captured (without with_stack the record ends here):
//   u8 stack depth, u8 flags (bit 0: truncated; bits 1-3: padding), the padding's bytes,
//   u64 addresses[depth] (innermost first). The padding aligns the addresses to 8 bytes in
//   the arena: the unwinder writes them there itself.
#pragma once

#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string_view>
#include <vector>

#include "ptprof/event.h"
#include "trace/op_inputs.h"

namespace ptprof::detail {

constexpr uint8_t kNotCaptured = 0xFF;
constexpr int kMaxInputs = 64;
constexpr int kMaxDims = 16;
constexpr int kMaxListItems = 64;
constexpr std::size_t kMaxDetailBytes = 16384;
// Options::max_stack_depth's bound: a stack's depth is one byte of the format (below).
constexpr int kMaxStackDepth = 250;
static_assert(kMaxStackDepth <= 255, "the stack section's depth is a u8");

// The stack section's second byte.
constexpr uint8_t encode_stack_flags(bool truncated, std::size_t pad) {
  return static_cast<uint8_t>((truncated ? 1 : 0) | (pad & 7) << 1);
}
constexpr bool stack_flags_truncated(uint8_t flags) { return (flags & 1) != 0; }
constexpr std::size_t stack_flags_padding(uint8_t flags) { return (flags >> 1) & 7; }

// How a tensor input's strides are kept. Most tensors are dense, and their strides follow
// from their sizes: storing none then halves a record's bytes, which is most of its cost.
constexpr uint8_t kNoStrides = 0;  // a layout without strides (sparse, mkldnn)
constexpr uint8_t kStoredStrides = 1;
constexpr uint8_t kDenseStrides = 2;

// The row-major strides c10 gives a contiguous tensor (a dim of size 0 steps like one of
// size 1), step by step from the innermost dim: `next` of the stride of dim i and its size
// is the stride of dim i - 1. Unsigned, so that a product beyond int64_t wraps the same way
// for the writer's exact check as for the reader.
inline uint64_t next_dense_stride(uint64_t stride, int64_t size) {
  return stride * static_cast<uint64_t>(size > 1 ? size : 1);
}

// True when `strides` are exactly the dense strides of `sizes`.
inline bool strides_are_dense(const int64_t* sizes, const int64_t* strides, std::size_t n) {
  uint64_t expect = 1;
  for (std::size_t i = n; i-- > 0;) {
    if (static_cast<uint64_t>(strides[i]) != expect) return false;
    expect = next_dense_stride(expect, sizes[i]);
  }
  return true;
}

// Appends to a fixed buffer. The caller asks for room once per item (`reserve`) and then
// puts unchecked: one bounds check per input instead of one per field. A failed `reserve`
// means the record does not fit; the caller stops writing it.
class DetailWriter {
 public:
  DetailWriter(char* buf, std::size_t cap) : p_(buf), end_(buf + cap) {}
  bool reserve(std::size_t n) const { return static_cast<std::size_t>(end_ - p_) >= n; }
  // Only within what the last successful `reserve` promised.
  template <typename T>
  void put(T v) {
    std::memcpy(p_, &v, sizeof(T));
    p_ += sizeof(T);
  }
  // A few int64s: a plain loop beats a call to memcpy at these sizes.
  __attribute__((always_inline)) void put_int64s(const int64_t* src, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) std::memcpy(p_ + i * sizeof(int64_t), src + i, 8);
    p_ += n * sizeof(int64_t);
  }
  char* pos() const { return p_; }

 private:
  char* p_;
  char* end_;
};

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
