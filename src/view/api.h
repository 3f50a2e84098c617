// api.h: the JSON API the page reads (GET /api/<what>?<params>), over the log directory and
// the trace store. Traces are named by their id from /api/runs, never by a path. Each answer
// is JSON: 200 with the data; 202 {"state": "queued"|"indexing"} while the trace's index is
// being built (ask again); 404 for an unknown trace, run or endpoint; 400 for a bad
// parameter; 422 {"error": ...} naming the file when a trace cannot be read. Endpoints and
// keys: docs/view.md.
#pragma once

#include <map>
#include <string>

#include "view/log_dir.h"
#include "view/trace_store.h"

namespace ptprof::view {

struct ApiResponse {
  int status = 200;
  std::string body;  // JSON
};

class Api {
 public:
  Api(LogDir& dir, TraceStore& store) : dir_(dir), store_(store) {}
  // `what`: the path after /api/; `params`: the decoded query parameters.
  ApiResponse handle(const std::string& what, const std::multimap<std::string, std::string>& params);

 private:
  LogDir& dir_;
  TraceStore& store_;
  std::mutex distributed_mu_;
  std::map<std::string, std::pair<std::string, std::string>> distributed_;  // run -> (files, json)
};

}  // namespace ptprof::view
