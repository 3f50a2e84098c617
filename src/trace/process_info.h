// process_info.h: names of this process as traces show them.
#pragma once

#include <string>

namespace ptprof::detail {

// "<hostname>_<pid>", torch.profiler's default worker name.
std::string default_worker_name();
// Basename of argv[0], as Kineto names the process.
std::string process_name();

}  // namespace ptprof::detail
