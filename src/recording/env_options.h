// env_options.h: Options from the environment. A binary that links ptprof but leaves it
// unconfigured is switched on by PTPROF_* variables (options.h lists them), and a launcher's
// RANK/WORLD_SIZE (or MPI's, Slurm's) say who it is in a job.
#pragma once

#include <optional>
#include <vector>

#include "base/status.h"
#include "ptprof/options.h"

namespace ptprof::detail {

// `options` with what the environment fills in where they leave it unset. A PTPROF_ variable
// that cannot be parsed throws ptprof::Error naming it (bad config); a launcher's variable that
// is no rank is not ptprof's to refuse: a kInvalidArgument warning, and ignored.
Options with_environment(Options options, std::vector<Status>* warnings);

// The flight recorder's part of it: PTPROF_FLIGHT_RECORDER=1 turns it on,
// PTPROF_FLIGHT_RECORDER_HANG_S=T sets hang_seconds where `options` leave it 0, and a recorder
// without a directory dumps into <PTPROF_LOGDIR>/flight, or ./ptprof_flight without
// PTPROF_LOGDIR. Throws ptprof::Error naming a variable that cannot be parsed.
FlightRecorderOptions flight_with_environment(FlightRecorderOptions options);

// The rank and world size a launcher put in the environment (options.h lists the variables);
// a pair that is no rank is a kInvalidArgument warning, and ignored.
std::optional<DistributedInfo> distributed_from_environment(std::vector<Status>* warnings);

}  // namespace ptprof::detail
