// report_json TRACE [--include-last-step] [--summary]: ptprof's report of a trace file, as JSON
// (or the terminal summary), for check_report_agreement.py. Reads the file with the `ptprof`
// command's reader.
#include <cstring>
#include <iostream>
#include <string>

#include "trace/trace_reader.h"
#include "ptprof/error.h"
#include "ptprof/report.h"

int main(int argc, char** argv) {
  std::string path;
  bool summary = false;
  ptprof::ReportOptions options;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--include-last-step") == 0) {
      options.hta_include_last_step = true;
    } else if (std::strcmp(argv[i], "--summary") == 0) {
      summary = true;
    } else {
      path = argv[i];
    }
  }
  if (path.empty()) {
    std::cerr << "usage: report_json TRACE [--include-last-step] [--summary]\n";
    return 2;
  }
  try {
    const ptprof::Trace t =
        ptprof::detail::parse_trace(ptprof::detail::read_trace_file(path), path);
    const ptprof::Report r(t, options);
    std::cout << (summary ? r.summary() : r.to_json());
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}
