// collectives.h: how a collective op enters the flight recorder: with its process group and
// sequence number (the same on every rank for the same collective, which is how the ranks'
// dumps are matched), into the process's log of collectives (rings.h). For collective ops only:
// it may take c10d's registry lock.
#pragma once

#include <cstdint>
#include <string_view>

#include "ptprof/event.h"

namespace ptprof::detail::flight {

// c10d's ops ("c10d::allreduce_"), NCCL's record_param_comms, and the backends' own ops that
// run them ("gloo:all_reduce", "nccl:all_reduce"). Cheap: asked once per name.
bool is_flight_collective(const char* name);

struct CollectiveMark {
  uint32_t group;  // the group's name id, or kNoName
  int64_t seq;     // -1: none (a backend's own op: its c10d op before it has one)
  uint8_t flags;   // kCollective, and kSeqIsCount where seq is ptprof's count
  uint64_t log;    // its number in the log, for leave_collective
};

// A collective op `name` (interned as `name_id`) starts on this thread. Its sequence number is
// the one in `info` (the op's own group, read from its inputs or NCCL's debug info; nullptr:
// none), else the default group's count (default_group_seq), else ptprof's count of the c10d
// ops this process entered. `intern` gives a group name's id (the recorder's interning, so the
// dump's name table has it).
CollectiveMark enter_collective(const char* name, uint32_t name_id, const CollectiveInfo* info,
                                uint32_t (*intern)(std::string_view), uint64_t correlation,
                                int64_t start_ticks, uint32_t tid, uint8_t scope);
// ... and returns.
void leave_collective(const CollectiveMark& mark, int64_t end_ticks);

}  // namespace ptprof::detail::flight
