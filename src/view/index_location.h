// index_location.h: where a trace's index is kept. Beside the trace, as ".<file>.ptprof-index"
// (hidden: no listing takes it for a trace, and it goes wherever the log directory goes); when
// the trace's directory is not writable, in a cache directory of the user's, named by the
// trace's absolute path.
#pragma once

#include <string>
#include <vector>

namespace ptprof::view {

// $XDG_CACHE_HOME/ptprof/view, else $HOME/.cache/ptprof/view, else (no environment, as the
// installed command may run) /tmp/ptprof-view-<uid>, created 0700 and checked to be the
// user's own directory (not a link another user planted). "" when none can be had.
std::string default_cache_dir();

// `dir`, created 0700 if need be, when it is a directory of this user's own; else "".
std::string usable_cache_dir(const std::string& dir);

// The places an index of `trace_path` may be, in the order they are tried: beside the trace
// (where its directory is writable: has a write permission bit, and access() allows it),
// then in `cache_dir` (when not "").
std::vector<std::string> index_paths(const std::string& trace_path, const std::string& cache_dir);

}  // namespace ptprof::view
