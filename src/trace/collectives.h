// collectives.h: what a trace builder does with collectives' arguments.
#pragma once

#include "ptprof/trace.h"

namespace ptprof::detail {

// Gives each NCCL kernel launched inside a collective op (its External id names the op or an op
// nested in it, up to a few levels) that op's arguments, as Kineto copies record_param_comms'
// arguments onto NCCL's kernels. Needs the CPU events' parents (Trace::rebuild_tree).
void share_collectives_with_kernels(Trace& t);

}  // namespace ptprof::detail
