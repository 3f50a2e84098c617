// report_page: ptprof's report pages and diffs of trace files, for check_report_html.py.
//
//   report_page TRACE OUT.html [--drop-steps]   the report's HTML page (save_html); with
//                                               --drop-steps, of the trace without its
//                                               ProfilerStep# ranges (a trace with no steps)
//   report_page --empty OUT.html                the page of a trace with no events at all
//   report_page --diff A B [--json]             ReportDiff of two traces, as text or JSON
//
// Reads files with the `ptprof` command's reader.
#include <algorithm>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "ptprof/error.h"
#include "ptprof/report.h"
#include "ptprof/report_diff.h"
#include "ptprof/trace.h"
#include "trace/trace_reader.h"

namespace {

ptprof::Trace load(const std::string& path) {
  return ptprof::detail::parse_trace(ptprof::detail::read_trace_file(path), path);
}

int usage() {
  std::cerr << "usage: report_page TRACE OUT.html [--drop-steps]\n"
               "       report_page --empty OUT.html\n"
               "       report_page --diff A B [--json]\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  auto flag = [&](const char* name) {
    auto it = std::find(args.begin(), args.end(), name);
    if (it == args.end()) return false;
    args.erase(it);
    return true;
  };
  try {
    if (flag("--diff")) {
      const bool json = flag("--json");
      if (args.size() != 2) return usage();
      ptprof::ReportDiffOptions options;
      options.before_label = args[0].substr(args[0].find_last_of('/') + 1);
      options.after_label = args[1].substr(args[1].find_last_of('/') + 1);
      const ptprof::ReportDiff diff(ptprof::Report(load(args[0])), ptprof::Report(load(args[1])),
                                    options);
      std::cout << (json ? diff.to_json() : diff.summary());
      return 0;
    }
    const bool empty = flag("--empty");
    const bool drop_steps = flag("--drop-steps");
    if (args.size() != (empty ? 1u : 2u)) return usage();
    ptprof::Trace t;
    if (!empty) t = load(args[0]);
    if (drop_steps) {
      // The steps' GPU spans go too. Events refer to each other by index (parent, memory
      // events' op), so the tree is rebuilt after the removal.
      t.events.erase(
          std::remove_if(t.events.begin(), t.events.end(),
                         [](const ptprof::Event& e) { return ptprof::is_step_name(e.name); }),
          t.events.end());
      t.steps.clear();
      t.rebuild_tree();
      if (!t.memory_events.empty()) t.attribute_memory();
    }
    ptprof::Report(t).save_html(args.back());
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}
