// libFuzzer target: the flight recorder's raw-dump reader (src/trace/flight_dump) on arbitrary
// bytes, as 'ptprof report DIR' (the digest alone) and 'ptprof flight DUMP -o' (the rings too)
// read it. A dump whose whole read succeeds has a readable digest (the rings come after it);
// what was read, written again, reads back to the same digest; its trace goes through what the
// command does with any trace.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_util.h"
#include "ptprof/error.h"
#include "trace/flight_dump.h"
#include "trace/json_writer.h"

namespace {

// The digest as JSON, its count of torn records left out (a dump written again has none).
std::string digest_json(const ptprof::detail::FlightDump& d) {
  ptprof::FlightRank r = ptprof::detail::flight_digest(d, "fuzz");
  r.torn_records = 0;
  return ptprof::detail::flight_rank_json(r);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using ptprof::detail::FlightDump;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  FlightDump digest, full;
  bool digest_ok = true, full_ok = true;
  try {
    digest = ptprof::detail::parse_flight_dump(bytes, "fuzz", /*rings=*/false);
  } catch (const ptprof::Error&) {
    digest_ok = false;
  }
  try {
    full = ptprof::detail::parse_flight_dump(bytes, "fuzz", /*rings=*/true);
  } catch (const ptprof::Error&) {
    full_ok = false;
  }
  if (full_ok && !digest_ok) __builtin_trap();
  if (!digest_ok) return 0;
  const std::string json = digest_json(digest);
  if (!ptprof::detail::json_problem(json, ptprof::detail::JsonWriter::kMaxDepth).empty())
    __builtin_trap();
  if (!full_ok) return 0;
  if (digest_json(full) != json) __builtin_trap();  // the rings change nothing of the digest
  FlightDump again;
  try {
    again = ptprof::detail::parse_flight_dump(ptprof::detail::flight_dump_bytes(full), "again");
  } catch (const ptprof::Error&) {
    __builtin_trap();  // ptprof wrote a dump its own reader rejects
  }
  if (digest_json(again) != json) __builtin_trap();
  ptprof::fuzz::exercise_trace(ptprof::detail::flight_trace(full));
  return 0;
}
