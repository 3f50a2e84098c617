// ptprof/distributed_info.h: who a process is in a distributed job, as a trace's
// "distributedInfo" says it (torch.profiler's; Holistic Trace Analysis finds each rank's file
// by it). Options::distributed gives it to a session; Trace::distributed carries it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ptprof {

// A c10d process group, as torch.profiler lists it in distributedInfo's "pg_config".
struct ProcessGroupInfo {
  std::string name;            // "0" for the default group, as torch.distributed names it
  std::string desc;            // "default_pg", ...
  std::string backend_config;  // "cpu:gloo", "cuda:nccl", ...
  int64_t size = 0;
  std::vector<int64_t> ranks;  // global ranks of its members

  bool operator==(const ProcessGroupInfo& o) const {
    return name == o.name && desc == o.desc && backend_config == o.backend_config &&
           size == o.size && ranks == o.ranks;
  }
};

// Who this process is in a distributed job (torch.distributed's c10d, MPI, ...).
// ptprof::distributed_info(process_group) (ptprof/distributed.h) fills it from a c10d group.
struct DistributedInfo {
  std::string backend;      // "gloo", "nccl", ...; empty: not known, not written
  int64_t rank = -1;        // this process's rank in the default group; -1: not known
  int64_t world_size = -1;  // ranks in the default group; -1: not known
  // The process groups this rank belongs to ("pg_count" and "pg_config"); empty: not written.
  std::vector<ProcessGroupInfo> groups;
  std::string nccl_version;  // "2.27.5"; empty: not written

  bool operator==(const DistributedInfo& o) const {
    return backend == o.backend && rank == o.rank && world_size == o.world_size &&
           groups == o.groups && nccl_version == o.nccl_version;
  }
};

}  // namespace ptprof
