// input_encoder.h: an op's inputs (record_shapes, with_flops) into its details record, on the
// hot path: shapes, dtypes and strides of tensors, scalars and lists, in details.h's format.
#pragma once

#include <ATen/core/ivalue.h>
#include <c10/util/ArrayRef.h>

namespace ptprof::detail {

// Writes the inputs section into [p, end); returns where the record goes on, or nullptr
// once it does not fit. Pointers in and out rather than the writer itself: a writer passed by
// reference would keep its position in memory, a load and a store for every field.
char* encode_inputs(char* p, char* end, c10::ArrayRef<const c10::IValue> inputs);

}  // namespace ptprof::detail
