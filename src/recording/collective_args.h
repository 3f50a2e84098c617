// collective_args.h: the arguments of a collective op, read when it starts. Defined in
// distributed.cpp, the recorder's one file that includes c10d (and only where libtorch has it).
#pragma once

#include <cstring>

#include <ATen/record_function.h>

#include "ptprof/event.h"

namespace ptprof::detail {

// Whether `name` is a collective op's whose arguments can be read: c10d's dispatcher ops
// ("c10d::allreduce_", ...) and NCCL's record_param_comms. Cheap: the recorder asks for every op.
inline bool is_collective_name(const char* name) {
  if (name[0] == 'c')
    return name[1] == '1' && name[2] == '0' && name[3] == 'd' && name[4] == ':' && name[5] == ':';
  return name[0] == 'r' && std::strcmp(name, "record_param_comms") == 0;
}

// Fills `out` from `fn` in its start callback: record_param_comms from NCCL's debug info (no
// inputs needed); a c10d op from its inputs (`with_inputs`: the callback has them), the process
// group among them. False when there is nothing to say (no inputs, no c10d in this libtorch).
// Never throws.
bool collective_args(const at::RecordFunction& fn, bool with_inputs, CollectiveInfo* out);

}  // namespace ptprof::detail
