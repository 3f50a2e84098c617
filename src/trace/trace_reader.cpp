// The trace reader: JSON text in chunks -> ptprof::Trace, one event at a time.
//
// The parser was chosen by measurement: bench/bench_parsers.cpp on the 640 MB trace that
// bench_reader generates (ptprof's schema: stacks, inputs, GPU events), one thread of this
// project's 2-core AMD EPYC VM, MB/s of JSON on CPU time, each candidate doing the same small
// work with every key, string and number, no Trace built: nlohmann's SAX interface 200 (188
// from an ifstream), RapidJSON 1.1's Reader 570 in memory (524 through its chunked
// FileReadStream), simdjson 3.0.1's On-Demand API 517 (it needs the whole document in memory,
// padded: it cannot stream one document), this reader's own cursor (json_cursor.h) 1034
// streamed from the file. The whole reader, building the Trace, reads that file at ~400 MB/s,
// ~250 MB/s gzip'ed (bench_reader; Kineto's own traces in ../shared/traces: ~550 MB/s). The
// cursor wins because it dispatches on the few keys of the schema instead of calling back per
// token, hands out strings as views into its buffer, skips what the trace does not keep without
// decoding it, and gives numbers as their text, so the ns are exact without a detour through a
// double; and it adds no dependency.
//
// Memory, at its peak: a constant of ~0.4 MiB (JsonCursor::kBufferBytes, plus for gzip
// kGzipInputBytes and zlib's state and 32 KiB window), plus scratch reused from event to event
// as large as the largest single event's strings and input lists, plus what the Trace itself
// holds: its events and memory events (collected in chunks of 4096, each mapped on its own,
// unmapped as it is moved into the final vector: no vector doubling to 3x the size), its names,
// stacks and input lists, each distinct one once, and one hash-table entry per distinct stack
// and input list to find them. Trace::rebuild_tree() and attribute_memory() then take about
// 16 bytes per event while they run. Measured by bench_reader on the 640 MB trace (1.0M
// events): the reading process grows by 225 MB, plain or gzip'ed, for a Trace of 204 MB.
//
// A plain file of 64 MiB or more is read by two threads where a core is free
// (trace_builder.cpp's SecondHalf): the second from an event it finds two fifths in (the
// guess of event_boundary.h), into a builder of its own, which the first takes over when it
// arrives exactly there; the Trace and its errors are one reader's (test_parallel_read.cpp).
// It costs ~10% more CPU in all (the second half's distinct names, stacks and inputs found
// again when merged) and about the same memory. A gzip'ed file is read by one.
//
// Its parts, a file each: json_cursor (the JSON text, token by token), trace_builder (the
// Trace, event by event), raw_event (one event as read), decimal (numbers from their text),
// arg_lookup and trace_vocabulary (what the keys and names mean), op_input_text (record_shapes
// inputs), strict_json (top-level values kept as text), chunked (collecting without regrowth),
// event_boundary (where the second thread starts).
#include "trace/trace_reader.h"

#include <cstdint>
#include <cstdlib>  // getloadavg
#include <memory>
#include <string>
#include <thread>

#include "trace/flight_dump.h"
#include "trace/json_cursor.h"
#include "trace/trace_builder.h"

namespace ptprof {
Trace Trace::load(const std::string& path) {
  return detail::read_trace(path);
}
}  // namespace ptprof

namespace ptprof::detail {

Trace read_trace(ByteSource& source, const std::string& what, const ParallelRead* parallel) {
  JsonCursor cursor(source, what);
  return build_trace(cursor, parallel);
}

Trace read_trace(const std::string& path) {
  // Two threads only where a core is free: on a busy machine the second thread is no faster,
  // and the first would wait for it at its start (measured: 10% to 20% slower, load 4.5 on two
  // cores).
  ParallelRead parallel;
  const unsigned cores = std::thread::hardware_concurrency();
  double load = 0;
  if (cores < 2 || (::getloadavg(&load, 1) == 1 && load + 1 > cores))
    parallel.min_bytes = UINT64_MAX;
  return read_trace(path, parallel);
}

Trace read_trace(const std::string& path, const ParallelRead& parallel) {
  // A flight recorder's raw dump (a crash's) is read as the trace it stands for.
  if (is_flight_dump(path)) return flight_trace(read_flight_dump(path));
  const std::unique_ptr<ByteSource> source = open_trace_source(path);
  return read_trace(*source, path, &parallel);
}

Trace parse_trace(std::string_view text, const std::string& what) {
  MemorySource source(text);
  return read_trace(source, what);
}

std::string read_trace_file(const std::string& path) {
  const std::unique_ptr<ByteSource> source = open_trace_source(path);
  std::string out;
  std::size_t n = 0;
  do {
    out.resize(out.size() + (std::size_t{1} << 20));
    n = source->read(out.data() + out.size() - (std::size_t{1} << 20), std::size_t{1} << 20);
    out.resize(out.size() - (std::size_t{1} << 20) + n);
  } while (n > 0);
  return out;
}

}  // namespace ptprof::detail
