#include "recording/flight/collectives.h"

#include <atomic>
#include <cstring>

#include "recording/collective_args.h"
#include "recording/flight/rings.h"

namespace ptprof::detail::flight {

namespace {
std::atomic<int64_t> g_c10d_count{0};  // the c10d ops this process entered
}  // namespace

bool is_flight_collective(const char* name) {
  return is_collective_name(name) || std::strncmp(name, "gloo:", 5) == 0 ||
         std::strncmp(name, "nccl:", 5) == 0;
}

CollectiveMark enter_collective(const char* name, uint32_t name_id, const CollectiveInfo* info,
                                uint32_t (*intern)(std::string_view), uint64_t correlation,
                                int64_t start_ticks, uint32_t tid, uint8_t scope) {
  CollectiveMark m{kNoName, -1, kCollective, 0};
  if (is_collective_name(name)) {
    const int64_t count = g_c10d_count.fetch_add(1, std::memory_order_relaxed);
    int64_t seq = -1;
    if (info != nullptr && info->seq >= 0) {
      m.seq = info->seq;
      if (!info->pg_name.empty()) m.group = intern(info->pg_name);
    } else if (default_group_seq(&seq)) {
      m.seq = seq;
      m.group = intern("0");
    } else {
      m.seq = count;
      m.flags |= kSeqIsCount;
    }
  }
  uint64_t words[kWords] = {};
  words[kStart] = static_cast<uint64_t>(start_ticks);
  words[kCorrelation] = correlation;
  words[kAux] = static_cast<uint64_t>(m.seq);
  words[kNames] = pack_names(name_id, m.group);
  words[kBits] = pack_bits(0, scope, m.flags, tid);
  m.log = Rings::get().collectives().enter(words);
  return m;
}

void leave_collective(const CollectiveMark& mark, int64_t end_ticks) {
  Rings::get().collectives().done(mark.log, end_ticks);
}

}  // namespace ptprof::detail::flight
