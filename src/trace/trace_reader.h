// trace_reader.h: reads a Chrome-trace JSON file (plain or .gz) back into a ptprof::Trace.
//
// Used by the `ptprof` command to print tables of traces written by ptprof or by PyTorch's own
// profiler (every layout since PyTorch 1.8.1: the legacy categories Operator/Runtime/Kernel/
// Memcpy/Memset, absolute-µs times, baseTimeNanoseconds before or after traceEvents). It
// streams: the file is read and decompressed in chunks and the Trace is built as the events go
// by, never the document (see the note in trace_reader.cpp for the memory this takes).
//
// Input is untrusted: every malformed part is reported as a ptprof::Error whose message names
// the file, the byte offset in the uncompressed JSON text, and what is wrong.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <vector>

#include "ptprof/trace.h"
#include "trace/byte_source.h"

namespace ptprof::detail {

// The longest event a trace may hold (~104 days), so that sums of many durations stay far
// from overflowing int64 ns: the reader rejects longer ones, writers of traces drop them.
constexpr int64_t kMaxEventDurationNs = 9'000'000'000'000'000;

// When a second thread reads the later part of traceEvents (trace_builder.cpp): a plain
// file (not gzip, not a pipe) of at least `min_bytes`; it starts looking for an event at
// byte `at` (0: two fifths into the file, as the first thread also merges and finishes).
struct ParallelRead {
  uint64_t min_bytes = uint64_t{64} << 20;
  uint64_t at = 0;
  bool* taken = nullptr;  // if set: whether the second thread's part was used (tests)
};

// Reads the trace at `path`, gzip'ed or not (told by its first bytes, not its name); a flight
// recorder's raw dump as the trace it stands for (flight_dump.h). A large plain file is read
// by two threads where a core is free (ParallelRead's defaults, and a load average below the
// cores less one); the Trace is the same as one thread's.
Trace read_trace(const std::string& path);
Trace read_trace(const std::string& path, const ParallelRead& parallel);
// Reads a trace from `source`; `what` names it in errors. One thread, unless `parallel`.
Trace read_trace(ByteSource& source, const std::string& what,
                 const ParallelRead* parallel = nullptr);
// Parses trace JSON text held in memory; `what` names it in errors.
Trace parse_trace(std::string_view text, const std::string& what);

// The whole (decompressed) text of a trace file, for tests that look at the JSON itself.
// Holds the document: the reader above does not need it.
std::string read_trace_file(const std::string& path);

}  // namespace ptprof::detail
