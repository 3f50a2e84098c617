#include "recording/input_encoder.h"

#include <algorithm>

#include "recording/details.h"

namespace ptprof::detail {

namespace {

void put_dims(DetailWriter& w, c10::IntArrayRef dims) {
  w.put_int64s(dims.data(), dims.size());
}

// Tag and 8 bytes; the caller reserved 9.
void encode_number(DetailWriter& w, const c10::IValue& v) {
  if (v.isDouble()) {
    w.put<uint8_t>(1);
    w.put<double>(v.toDouble());
  } else if (v.isBool()) {
    w.put<uint8_t>(2);
    w.put<int64_t>(v.toBool() ? 1 : 0);
  } else if (v.isInt()) {
    w.put<uint8_t>(0);
    w.put<int64_t>(v.toInt());
  } else {  // complex or symbolic: the real part, as a double
    w.put<uint8_t>(1);
    w.put<double>(v.isComplexDouble() ? v.toComplexDouble().real() : 0.0);
  }
}

// A tensor's shape unless it has none we can read cheaply (undefined, nested, symbolic).
__attribute__((always_inline)) inline bool readable(const at::TensorImpl* t) {
  return !t->is_nested() && !t->has_symbolic_sizes_strides() && t->dim() <= kMaxDims;
}

// False once the record's details no longer fit `w`.
__attribute__((always_inline)) inline bool encode_inputs_into(
    DetailWriter& w, c10::ArrayRef<const c10::IValue> inputs) {
  const std::size_t n = std::min<std::size_t>(inputs.size(), kMaxInputs);
  if (!w.reserve(1)) return false;
  w.put<uint8_t>(static_cast<uint8_t>(n));
  using Kind = OpInput::Kind;
  for (std::size_t i = 0; i < n; ++i) {
    const c10::IValue& v = inputs[i];
    if (v.isTensor()) {
      const at::Tensor& tensor = v.toTensor();
      const at::TensorImpl* t = tensor.unsafeGetTensorImpl();
      if (!tensor.defined() || !readable(t)) {
        if (!w.reserve(1)) return false;
        w.put<uint8_t>(static_cast<uint8_t>(tensor.defined() ? Kind::Other : Kind::None));
        continue;
      }
      const auto ndim = static_cast<std::size_t>(t->dim());
      const int64_t* sizes = t->sizes().data();
      const int64_t* strides = nullptr;
      uint8_t how = kNoStrides;
      if (t->layout() == c10::kStrided) {
        strides = t->strides().data();
        how = strides_are_dense(sizes, strides, ndim) ? kDenseStrides : kStoredStrides;
      }
      const bool stored = how == kStoredStrides;
      if (!w.reserve(4 + ndim * sizeof(int64_t) * (stored ? 2 : 1))) return false;
      w.put<uint8_t>(static_cast<uint8_t>(Kind::Tensor));
      w.put<int8_t>(static_cast<int8_t>(c10::typeMetaToScalarType(t->dtype())));
      w.put<uint8_t>(how);
      w.put<uint8_t>(static_cast<uint8_t>(ndim));
      w.put_int64s(sizes, ndim);
      if (stored) w.put_int64s(strides, ndim);
    } else if (v.isDouble() || v.isInt() || v.isBool() || v.isComplexDouble()) {
      if (!w.reserve(10)) return false;
      w.put<uint8_t>(static_cast<uint8_t>(Kind::Scalar));
      encode_number(w, v);
    } else if (!v.isList()) {  // inline tag test: None and the rest skip the list tests
      if (!w.reserve(1)) return false;
      w.put<uint8_t>(static_cast<uint8_t>(v.isNone() ? Kind::None : Kind::Other));
    } else if ((v.toListRef().empty() || v.toListRef()[0].isTensor()) && v.isTensorList()) {
      // Only an empty list or one whose first item is a tensor can be a tensor list: testing
      // that first spares every int list (a conv's padding) the out-of-line isTensorList(),
      // ~80 instructions. Items by reference: a c10::List and its get() would copy (two
      // atomic refcount updates per list and per tensor).
      const c10::ArrayRef<c10::IValue> list = v.toListRef();
      const std::size_t count = std::min<std::size_t>(list.size(), kMaxListItems);
      if (!w.reserve(3)) return false;
      w.put<uint8_t>(static_cast<uint8_t>(Kind::TensorList));
      w.put<uint16_t>(static_cast<uint16_t>(count));
      for (std::size_t k = 0; k < count; ++k) {
        const bool tensor = list[k].isTensor();
        const at::TensorImpl* t = tensor ? list[k].toTensor().unsafeGetTensorImpl() : nullptr;
        const bool ok = tensor && list[k].toTensor().defined() && readable(t);
        const auto ndim = ok ? static_cast<std::size_t>(t->dim()) : 0;
        if (!w.reserve(2 + ndim * sizeof(int64_t))) return false;
        w.put<int8_t>(ok ? static_cast<int8_t>(c10::typeMetaToScalarType(t->dtype())) : -1);
        w.put<uint8_t>(static_cast<uint8_t>(ndim));
        if (ok) put_dims(w, t->sizes());
      }
    } else if (const uint8_t tag = v.isIntList()      ? 0
                                   : v.isDoubleList() ? 1
                                   : v.isBoolList()   ? 2
                                                      : 3;
               tag != 3) {
      const c10::ArrayRef<c10::IValue> items = v.toListRef();
      const std::size_t count = std::min<std::size_t>(items.size(), kMaxListItems);
      if (!w.reserve(4 + count * 8)) return false;
      w.put<uint8_t>(static_cast<uint8_t>(Kind::ScalarList));
      w.put<uint8_t>(tag);
      w.put<uint16_t>(static_cast<uint16_t>(count));
      for (std::size_t k = 0; k < count; ++k) {
        const c10::IValue& item = items[k];
        if (item.isDouble()) {
          w.put<double>(item.toDouble());
        } else {
          w.put<int64_t>(item.isBool() ? (item.toBool() ? 1 : 0) : item.toInt());
        }
      }
    } else {
      if (!w.reserve(1)) return false;
      w.put<uint8_t>(static_cast<uint8_t>(v.isNone() ? Kind::None : Kind::Other));
    }
  }
  return true;
}

}  // namespace

__attribute__((noinline)) char* encode_inputs(char* p, char* end,
                                              c10::ArrayRef<const c10::IValue> inputs) {
  DetailWriter w(p, static_cast<std::size_t>(end - p));
  return encode_inputs_into(w, inputs) ? w.pos() : nullptr;
}

}  // namespace ptprof::detail
