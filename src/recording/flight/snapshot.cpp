#include "recording/flight/snapshot.h"

#include "recording/flight/crash.h"
#include "recording/flight/names.h"
#include "recording/flight/rings.h"

namespace ptprof::detail::flight {

FlightDump take_snapshot(const FlightDump& identity, bool rings) {
  FlightDump d;
  d.header = identity.header;
  d.worker = identity.worker;
  d.backend = identity.backend;
  d.message = identity.message;
  d.header.last_step = g_last_step.load(std::memory_order_relaxed);
  d.header.last_step_ticks = g_last_step_ticks.load(std::memory_order_relaxed);
  stamp_now(&d.header);
  const FlightNames& names = FlightNames::get();
  const uint32_t n_names = names.count();
  d.name_ends.assign(names.ends(), names.ends() + n_names);
  d.name_bytes.assign(names.bytes(), n_names == 0 ? 0 : names.ends()[n_names - 1]);
  const Rings& pool = Rings::get();
  const uint32_t n = pool.count();
  d.threads.resize(n);
  for (uint32_t i = 0; i < n; ++i) pool.at(i)->snapshot(&d.threads[i], rings);
  std::vector<Record> log;
  pool.collectives().copy(&log);
  d.collectives = records_in_order(log, &d.torn);
  d.header.collective_capacity = CollectiveLog::kCapacity;
  d.header.ring_capacity = n == 0 ? 0 : pool.at(0)->capacity();
  d.header.threads_without_ring = pool.threads_without_ring();
  d.has_rings = rings;
  return d;
}

}  // namespace ptprof::detail::flight
