#include "recording/details.h"

#include <c10/core/ScalarType.h>
#include <c10/core/ScalarTypeToTypeMeta.h>

#include <cstdio>
#include <string>

#include "trace/json_writer.h"

namespace ptprof::detail {

namespace {

class Reader {
 public:
  explicit Reader(std::string_view b) : b_(b) {}
  template <typename T>
  bool get(T* v) {
    if (pos_ + sizeof(T) > b_.size()) return false;
    std::memcpy(v, b_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  // Like get() of n bytes, without reading them.
  bool skip(std::size_t n) {
    if (pos_ + n > b_.size()) return false;
    pos_ += n;
    return true;
  }
  std::size_t pos() const { return pos_; }

 private:
  std::string_view b_;
  std::size_t pos_ = 0;
};

std::string format_number(uint8_t tag, const char raw[8], double* as_double) {
  if (tag == 1) {
    double d;
    std::memcpy(&d, raw, 8);
    *as_double = d;
    // Not printf: its decimal point follows the host program's locale ("0,5").
    std::string s = format_general(d, 17);
    // Python prints 1.0, not 1, for a float scalar.
    if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
    return s;
  }
  int64_t i;
  std::memcpy(&i, raw, 8);
  *as_double = static_cast<double>(i);
  if (tag == 2) return i ? "True" : "False";
  return std::to_string(i);
}

// Into `out`, or only over them where it is null.
bool read_dims(Reader& r, uint8_t ndim, std::vector<int64_t>* out) {
  if (out == nullptr) {
    for (uint8_t d = 0; d < ndim; ++d)
      if (!r.skip(sizeof(int64_t))) return false;
    return true;
  }
  out->resize(ndim);
  for (uint8_t d = 0; d < ndim; ++d)
    if (!r.get(&(*out)[d])) return false;
  return true;
}

}  // namespace

std::string dtype_name(int8_t scalar_type) {
  if (scalar_type < 0 || scalar_type >= static_cast<int8_t>(c10::ScalarType::NumOptions))
    return "";
  const auto st = static_cast<c10::ScalarType>(scalar_type);
  return std::string(c10::scalarTypeToTypeMeta(st).name());
}

namespace {

// The inputs section; false where it turns malformed (what came before it is kept). Without
// `keep` it is walked the same way but nothing is decoded: no text, no dims kept.
bool read_inputs(Reader& r, DecodedDetails& out, bool keep) {
  uint8_t n = kNotCaptured;
  if (!r.get(&n)) return false;
  if (n == kNotCaptured) return true;
  out.has_inputs = true;
  if (keep) out.inputs.reserve(n);
  OpInput in;
  for (uint8_t i = 0; i < n; ++i) {
    uint8_t kind;
    if (!r.get(&kind)) return false;
    reset_input(in);
    in.kind = static_cast<OpInput::Kind>(kind);
    switch (in.kind) {
      case OpInput::Kind::Tensor: {
        int8_t dtype;
        uint8_t strides, ndim;
        if (!r.get(&dtype) || !r.get(&strides) || !r.get(&ndim)) return false;
        if (strides > kDenseStrides) return false;
        if (!read_dims(r, ndim, keep ? &in.sizes : nullptr)) return false;
        if (strides == kStoredStrides && !read_dims(r, ndim, keep ? &in.strides : nullptr))
          return false;
        if (!keep) break;
        if (strides == kDenseStrides) {
          in.strides.resize(ndim);
          uint64_t stride = 1;
          for (std::size_t d = ndim; d-- > 0;) {
            in.strides[d] = static_cast<int64_t>(stride);
            stride = next_dense_stride(stride, in.sizes[d]);
          }
        }
        in.dtype = dtype_name(dtype);
        break;
      }
      case OpInput::Kind::TensorList: {
        uint16_t count;
        if (!r.get(&count)) return false;
        for (uint16_t k = 0; k < count; ++k) {
          int8_t dtype;
          uint8_t ndim;
          if (!r.get(&dtype) || !r.get(&ndim)) return false;
          std::vector<int64_t> sizes;
          if (!read_dims(r, ndim, keep ? &sizes : nullptr)) return false;
          if (keep) in.list_sizes.push_back(std::move(sizes));
        }
        in.dtype = "TensorList";
        break;
      }
      case OpInput::Kind::Scalar: {
        uint8_t tag;
        char raw[8];
        if (!r.get(&tag) || !r.get(&raw)) return false;
        if (!keep) break;
        in.concrete = format_number(tag, raw, &in.scalar);
        in.dtype = "Scalar";
        break;
      }
      case OpInput::Kind::ScalarList: {
        uint8_t tag;
        uint16_t count;
        if (!r.get(&tag) || !r.get(&count)) return false;
        std::string text = "[";
        for (uint16_t k = 0; k < count; ++k) {
          char raw[8];
          if (!r.get(&raw)) return false;
          if (!keep) continue;
          double d;
          text += (k ? ", " : "") + format_number(tag, raw, &d);
          // Ints as recorded (through a double they lost precision beyond 2^53).
          int64_t v;
          std::memcpy(&v, raw, 8);
          if (tag == 1) v = double_to_int64(d).value_or(kUnknownListValue);
          in.sizes.push_back(v);
        }
        in.concrete = text + "]";
        in.dtype = "ScalarList";
        break;
      }
      case OpInput::Kind::None:
      case OpInput::Kind::Other:
        break;
    }
    if (keep) out.inputs.push_back(std::move(in));
  }
  return true;
}

}  // namespace

DecodedDetails decode_details(std::string_view bytes, bool keep_inputs) {
  DecodedDetails out;
  Reader r(bytes);
  const bool ok = read_inputs(r, out, keep_inputs);
  out.inputs_bytes = r.pos();
  if (!ok) return out;
  uint8_t depth = 0, flags = 0;
  if (!r.get(&depth) || !r.get(&flags)) return out;
  out.stack_truncated = stack_flags_truncated(flags);
  if (!r.skip(stack_flags_padding(flags))) return out;
  for (uint8_t i = 0; i < depth; ++i) {
    uint64_t a;
    if (!r.get(&a)) break;
    out.stack.push_back(a);
  }
  return out;
}

}  // namespace ptprof::detail
