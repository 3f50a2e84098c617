// index_builder.h: a trace read once into its index (index_file.h): every view's tables and
// its timeline, computed from the Trace, which is then let go.
//
// Two files, so the first page is up before everything is computed: the first holds the
// Overview (the Report) and the timeline, the second (".ptprof-tables" beside the first) the
// operator, kernel and allocation tables and the flame graphs. The Report is computed on a
// thread of its own while the timeline is laid out and written, the Overview last; the
// tables after the first file is out.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ptprof/report.h"
#include "view/index_file.h"

namespace ptprof::view {

struct BuiltIndex {
  std::shared_ptr<const IndexFile> index;   // overview and timeline
  std::shared_ptr<const IndexFile> tables;  // the rest; null until built
  std::string path;                         // where the first file is
  std::shared_ptr<const Report> report;     // the Report it holds, for diffs while it is open
};

struct IndexBuildHooks {
  // As each phase begins: "read", "report+timeline", "write", then the tables' "kernels",
  // "operators", "memory", "flame", and "done".
  std::function<void(const std::string& phase)> phase;
  // When the first file is written and open (its `tables` still null).
  std::function<void(const BuiltIndex& first)> first_part;
};

// The second file's path for an index at `path`.
std::string tables_path(const std::string& index_path);

// Reads `trace_path` (`name` is how the views name it), computes every view and writes the
// index to the first of `paths` that takes it. Throws ptprof::Error naming the trace (and, for
// malformed content, the byte offset) when it cannot be read, or every path when none can be
// written.
BuiltIndex build_index(const std::string& trace_path, const std::string& name,
                       const std::vector<std::string>& paths, const IndexKey& key,
                       const IndexBuildHooks& hooks = {});

// An index on disk for `key` at one of `paths`, both files whole; else nothing.
BuiltIndex open_index(const std::vector<std::string>& paths, const IndexKey& key);

}  // namespace ptprof::view
