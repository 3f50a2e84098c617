// flight_dump.h: the flight recorder's raw dumps (flight_format.h) read, written outside a
// signal handler, and turned into a trace and a digest.
//
// Input is untrusted: a truncated or malformed dump is a ptprof::Error naming the file, the
// byte offset and what is wrong; records that were being written while the dump copied them
// are left out and counted (FlightDump::torn), never misread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ptprof/flight_report.h"
#include "ptprof/trace.h"
#include "trace/flight_format.h"
#include "trace/json_writer.h"

namespace ptprof::detail {

struct FlightDumpThread {
  flight::ThreadHeader header{};
  std::string name;
  std::vector<flight::Record> open;     // whole entries, outermost first
  std::vector<flight::Record> records;  // the ring's whole records, oldest first
};

struct FlightDump {
  flight::FileHeader header{};
  std::string worker, backend, message;  // the header's texts
  std::string name_bytes;
  std::vector<uint32_t> name_ends;
  std::vector<FlightDumpThread> threads;
  std::vector<flight::Record> collectives;  // whole ones, in the order entered
  bool has_rings = false;                   // the rings were read (and the file had them)
  uint64_t torn = 0;

  // Name `id` of the table; "" when out of range.
  std::string_view name(uint32_t id) const;
  // A record's name: "ProfilerStep#N" for step ranges, "<name #id>" for an id not in the table.
  std::string op_name(const flight::Record& r) const;
  // The recorder's ticks as Unix ns (the header's clock).
  int64_t unix_ns(int64_t ticks) const;
  int64_t dump_ns() const { return unix_ns(header.dump_ticks); }

  // Appends `name` to the table; its id. For writers of dumps other than the recorder's.
  uint32_t add_name(std::string_view name);
};

// The whole records of a ring's slots, oldest first. Slot i holds record n where n % size ==
// i; a record that was being written while copied, or is not where its number says, is left
// out and counted in *torn.
std::vector<flight::Record> records_in_order(const std::vector<flight::Record>& ring,
                                             uint64_t* torn);

// Whether the file at `path` starts as a raw dump does.
bool is_flight_dump(const std::string& path);
// Reads the dump at `path`: its digest, and its rings too when `rings` (otherwise they are
// skipped unread). Throws ptprof::Error naming the file, the byte offset and what is wrong.
FlightDump read_flight_dump(const std::string& path, bool rings = true);
// The same from bytes in memory; `what` names them in errors.
FlightDump parse_flight_dump(std::string_view bytes, const std::string& what, bool rings = true);

// The dump in the raw format (rings included when has_rings). Records are written as they are.
std::string flight_dump_bytes(const FlightDump& dump);
// ... written to `path` through a temporary file renamed into place. Throws ptprof::Error.
void write_flight_dump(const FlightDump& dump, const std::string& path);

// What the dump says of its rank: why it was written, what each thread was inside, the last
// collectives entered. `file` names the dump in the result.
FlightRank flight_digest(const FlightDump& dump, const std::string& file);

// The dump as a trace every consumer reads: the rings' ops that ended within the window before
// the dump (FileHeader::window_ns), the ops open at the dump (unfinished, cut there), threads,
// collectives with their group and sequence number, and why it was written (the digest as the
// metadata "ptprof_flight", its rank as "distributedInfo"). A digest-only dump gives its open
// ops alone.
Trace flight_trace(const FlightDump& dump);

// A collective as JSON, keys as its fields' names.
void write_flight_collective(JsonWriter& w, const FlightCollective& c);
// The digest as JSON (the "ptprof_flight" metadata of a dump's trace, and one rank of
// 'ptprof report DIR --json').
std::string flight_rank_json(const FlightRank& rank);

// "<worker>.<time>.ptflight" -> "<worker>.<time>.pt.trace.json.gz": the trace written with a
// dump that was not a crash's.
std::string flight_trace_path(const std::string& dump_path);

}  // namespace ptprof::detail
