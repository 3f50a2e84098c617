// trace_files.h: which files of a directory are traces, and what their names say.
//
// One listing for every command that takes a directory (report, diff, merge, the cross-rank
// report, view): the names TensorBoard's plugin reads, <worker>[.<time>].pt.trace.json[.gz],
// and any other *.json[.gz] that holds a trace, as Holistic Trace Analysis takes them
// ("rank-0.json.gz"). Such a file is told from other JSON (a report, a memory timeline) by its
// first bytes: a JSON object whose keys include "traceEvents" or "schemaVersion".
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ptprof::detail {

// What a trace file's name says, as TensorBoard's plugin splits it (consts.py WORKER_PATTERN,
// widened to HTA's names): "host_12.1712.pt.trace.json.gz" is worker "host_12", span "1712";
// "rank-0.json.gz" is worker "rank-0", no span.
struct TraceFileName {
  std::string worker;
  std::string span;  // the digits of the optional ".<time>"; "" when there are none
};
TraceFileName parse_trace_file_name(std::string_view filename);

// Whether `filename` may name a trace: *.json or *.json.gz, not hidden (".NAME.PID.N.tmp",
// the writers' temporary files, and other dot files are never traces).
bool trace_file_candidate(std::string_view filename);
// Whether `filename` names a flight recorder dump (*.ptflight, not hidden): listed as a trace
// where no trace was written beside it (a crash's dump).
bool flight_dump_name(std::string_view filename);
// Whether the name is TensorBoard's: *.pt.trace.json[.gz] (taken without looking inside).
bool tensorboard_trace_name(std::string_view filename);
// Whether the file at `path` starts as a Chrome trace does (plain or gzip'ed): false for any
// other JSON, for a file that cannot be read, and for one not yet holding a first key.
bool holds_trace(const std::string& path);

// The trace files directly in `dir`, in name order (tensorboard_trace_handler names them
// <worker>.<time>, so each worker's windows in time order): TensorBoard's names, and other
// *.json[.gz] files that hold a trace, and flight recorder dumps with no trace beside them.
// Throws ptprof::Error when `dir` cannot be listed or
// holds none.
std::vector<std::string> trace_files_in(const std::string& dir);

}  // namespace ptprof::detail
