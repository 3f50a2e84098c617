// snapshot.h: the flight recorder's live state as a dump, taken outside a signal handler while
// the threads go on recording (their records are copied as live_record.h reads them).
#pragma once

#include "trace/flight_dump.h"

namespace ptprof::detail::flight {

// The rings, stacks, collectives and names now, under `identity`'s header, worker, backend and
// message (its reason, rank, options and clock reference); its rings too when `rings`.
FlightDump take_snapshot(const FlightDump& identity, bool rings);

}  // namespace ptprof::detail::flight
