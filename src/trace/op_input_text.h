// op_input_text.h: an op's recorded inputs from the four record_shapes lists of its args,
// which the reader reads element by element into OpInputs, input i from element i of each.
#pragma once

#include "ptprof/event.h"
#include "trace/op_inputs.h"  // reset_input

namespace ptprof::detail {

// What the writer's "Input Dims"/"Input type"/"Input Strides"/"Concrete Inputs" say about
// one input: its kind from its type name and the shape of its dims.
void finish_input(OpInput& in);

}  // namespace ptprof::detail
