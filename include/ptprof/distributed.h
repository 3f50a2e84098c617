// ptprof/distributed.h: who this process is in a c10d job, read from its process group.
//
//   auto pg = c10::make_intrusive<c10d::ProcessGroup>(store, rank, size);  // + its backend
//   ptprof::Options o;
//   o.distributed = ptprof::distributed_info(*pg);
//
// Only a forward declaration of c10d here: no c10d header reaches ptprof's public headers, and
// a libtorch without distributed support (USE_DISTRIBUTED) still builds against this one.
#pragma once

#include "ptprof/options.h"

namespace c10d {
class ProcessGroup;
}

namespace ptprof {

// The group's backend ("gloo", "nccl": its default backend's name), this rank, its size, and
// the group itself as distributedInfo's pg_config ({name, desc, "cpu:gloo,cuda:nccl", size,
// global ranks: the backend's, else 0..size-1 as for the default group}); nccl_version where the
// backend is NCCL and libtorch knows it. `group` should be the default (world) group: its rank
// and size are what distributedInfo calls the rank and world size. Throws ptprof::Error where
// libtorch was built without distributed support.
DistributedInfo distributed_info(const c10d::ProcessGroup& group);

}  // namespace ptprof
