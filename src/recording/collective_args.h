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

// The default group's ("0", as torch.distributed registers it, and a C++ job with
// c10d::register_process_group) count of collectives so far: the sequence number of a c10d op
// about to run on it, for the flight recorder when op inputs are not recorded. False where no
// such group is registered or its backend does not count. Takes c10d's registry lock: for
// collectives only. Never throws.
bool default_group_seq(int64_t* seq);

}  // namespace ptprof::detail
