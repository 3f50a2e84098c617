// libFuzzer target: CUDA memory snapshots (src/trace/pickle_reader, memory_snapshot*) on
// arbitrary bytes, as 'ptprof memory SNAPSHOT.pickle' reads them: the pickle, the typed
// snapshot, its replay, the text and the JSON. Anything but a snapshot must be a ptprof::Error;
// what is read must summarize, and its JSON must be one valid JSON value.
#include <cstddef>
#include <cstdint>
#include <string>

#include "ptprof/error.h"
#include "ptprof/memory_snapshot.h"
#include "trace/json_writer.h"
#include "trace/pickle_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  // The reader alone, on anything: an error or a document, whatever the first byte.
  auto doc = ptprof::detail::read_pickle(bytes);
  if (!doc.ok() && doc.status().message().rfind("byte ", 0) != 0) __builtin_trap();
  ptprof::MemorySnapshot snapshot;
  try {
    snapshot = ptprof::MemorySnapshot::parse(bytes, "fuzz");
  } catch (const ptprof::Error&) {
    return 0;
  }
  if (!doc.ok()) __builtin_trap();  // the snapshot was read from a pickle the reader rejects
  const ptprof::MemorySnapshotSummary summary = ptprof::summarize(snapshot, 5);
  for (const ptprof::MemoryDeviceSummary& d : summary.devices) {
    if (d.peak_bytes < d.start_bytes) __builtin_trap();  // the start is one of the points
    for (const ptprof::MemoryTimelinePoint& p : d.timeline)
      if (p.bytes > d.peak_bytes) __builtin_trap();
  }
  (void)summary.text(snapshot);
  const std::string json = summary.json(snapshot);
  if (!ptprof::detail::json_problem(json, ptprof::detail::JsonWriter::kMaxDepth).empty())
    __builtin_trap();
  return 0;
}
