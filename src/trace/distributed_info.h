// distributed_info.h: DistributedInfo as a trace's "distributedInfo" value, written and read.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "ptprof/distributed_info.h"

namespace ptprof::detail {

// The JSON text torch.profiler writes (json.dumps of a dict: ", " and ": " spacing, which
// HTA's rank regex needs), its keys in torch's order: backend, rank, world_size, pg_count,
// pg_config, nccl_version; what is not known (empty, -1) is left out.
std::string distributed_info_json(const DistributedInfo& d);

// What a distributedInfo value says, in any form: keys this model has not and values of
// another type are passed over. None where the text is not a JSON object.
std::optional<DistributedInfo> parse_distributed_info(std::string_view json);

}  // namespace ptprof::detail
