#include "view/index_builder.h"

#include <malloc.h>

#include <exception>
#include <thread>

#include "ptprof/error.h"
#include "ptprof/trace.h"
#include "trace/chrome_trace.h"  // write_file_atomically
#include "trace/kernel_breakdown.h"
#include "trace/trace_reader.h"
#include "view/memory_table.h"
#include "view/timeline_index.h"
#include "view/view_tables.h"

namespace ptprof::view {

namespace {

// Writes one index file at the first of `paths` that takes it; the one taken.
std::string write_first_of(const std::vector<std::string>& paths, const IndexKey& key,
                           const std::string& trace_path,
                           const std::function<void(IndexWriter&)>& body) {
  std::string errors;
  for (const std::string& path : paths) {
    try {
      detail::write_file_atomically(path, [&](detail::Sink& sink) {
        IndexWriter w(sink, key);
        body(w);
        w.finish();
      });
      return path;
    } catch (const Error& e) {
      errors += std::string(errors.empty() ? "" : "; ") + e.what();
    }
  }
  throw Error("ptprof view: cannot write an index of " + trace_path + ": " + errors);
}

}  // namespace

std::string tables_path(const std::string& index_path) { return index_path + "-tables"; }

BuiltIndex open_index(const std::vector<std::string>& paths, const IndexKey& key) {
  for (const std::string& p : paths) {
    BuiltIndex b;
    b.index = IndexFile::open(p, key);
    if (!b.index) continue;
    b.tables = IndexFile::open(tables_path(p), key);
    if (!b.tables) continue;
    b.path = p;
    return b;
  }
  return {};
}

BuiltIndex build_index(const std::string& trace_path, const std::string& name,
                       const std::vector<std::string>& paths, const IndexKey& key,
                       const IndexBuildHooks& hooks) {
  auto phase = [&](const char* p) {
    if (hooks.phase) hooks.phase(p);
  };
  BuiltIndex out;
  {
    phase("read");
    const Trace trace = detail::read_trace(trace_path);

    // The Report on a thread of its own while the timeline is laid out and written: both only
    // read the trace. The Overview, which needs the Report, goes last into the file, so the
    // Report's time covers the timeline's writing rather than adding to it.
    phase("report+timeline");
    std::shared_ptr<const Report> report;
    std::exception_ptr failed;
    std::thread reporter([&] {
      try {
        report = std::make_shared<const Report>(trace);
      } catch (...) {
        failed = std::current_exception();
      }
    });
    auto wait_for_report = [&] {
      if (reporter.joinable()) reporter.join();
      if (failed) std::rethrow_exception(failed);
    };
    try {
      out.path = write_first_of(paths, key, trace_path, [&](IndexWriter& w) {
        TimelineLayout(trace).write(w);
        wait_for_report();
        phase("write");
        write_overview(trace, *report, name, w);
      });
    } catch (...) {
      if (reporter.joinable()) reporter.join();
      throw;
    }
    out.index = IndexFile::open(out.path, key);
    if (!out.index)
      throw Error("ptprof view: the index just written at " + out.path + " does not open");
    out.report = report;
    if (hooks.first_part) hooks.first_part(out);
    // What the Report and the timeline's layout freed is held by malloc, much of it in the
    // arenas of the threads that computed them, where the tables' allocations (this thread's)
    // would not reuse it: given back now, the tables' peak is the Trace and their own.
    ::malloc_trim(0);

    const std::string tables = tables_path(out.path);
    write_first_of({tables}, key, trace_path, [&](IndexWriter& w) {
      phase("kernels");
      const std::vector<detail::KernelOpRow> kernels = detail::kernels_by_op(trace);
      write_kernel_tables(trace, *report, kernels, w);
      phase("operators");
      write_operator_tables(trace, *report, kernels, w);
      phase("memory");
      write_memory_table(trace, w);
      phase("flame");
      write_flame_graphs(trace, w);
    });
    out.tables = IndexFile::open(tables, key);
    if (!out.tables) throw Error("ptprof view: the index just written at " + tables + " does not open");
  }
  // The Trace is gone: give its pages back now rather than at the next allocation, so that
  // serving the views costs what the index's mapped pages cost.
  ::malloc_trim(0);
  phase("done");
  return out;
}

}  // namespace ptprof::view
