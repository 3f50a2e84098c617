// ptprof: the command-line companion of the library. It reads traces (ptprof's and every
// torch.profiler's) and prints what the library computes from them; it links only the torch-free
// core, so it starts anywhere the trace is (a login node, CI, another machine).
//
//   ptprof table TRACE [--sort KEY] [--row-limit N] [--group-by-input-shape] [--json]
//   ptprof summary TRACE
//   ptprof kernels TRACE [--row-limit N]
//   ptprof memory TRACE [OUT.json|OUT.html]
//   ptprof memory SNAPSHOT.pickle [OUT.html] [--json]  a CUDA memory snapshot: the peak and what
//                                                         was live at it, largest allocations,
//                                                         segments, OOMs (docs/memory-snapshots.md)
//   ptprof stacks TRACE OUT[.svg] [--metric self_cpu_time_total|self_cuda_time_total]
//   ptprof report TRACE|DIR [--json] [--html OUT]        why the step is slow, and what to do
//                                                         (a job's DIR: also who waits for whom)
//   ptprof diff A B [--json]                              what changed between two runs
//                                                         (traces, or run directories)
//   ptprof merge DIR -o OUT [--window N] [--align auto|collectives|none]
//                                                         the ranks' traces as one timeline
//   ptprof view LOGDIR|TRACE [--port N] [--host ADDR]     the views in a browser (docs/view.md)
//   ptprof flight DUMP|DIR [-o OUT] [--json]              a flight recorder dump: what each
//                                                         thread was inside; -o its trace
//
// Exit status: 0 done, 1 a result could not be written, 2 bad usage or an unreadable trace
// (the message names the file and, for malformed content, the byte offset).
#include <CLI/CLI.hpp>
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "ptprof/cross_rank.h"
#include "ptprof/error.h"
#include "ptprof/flight_report.h"
#include "ptprof/key_averages.h"
#include "ptprof/memory_snapshot.h"
#include "ptprof/merge.h"
#include "ptprof/report.h"
#include "ptprof/report_diff.h"
#include "ptprof/trace.h"
#include "trace/flight_dump.h"
#include "trace/json_writer.h"
#include "trace/trace_files.h"
#include "trace/trace_reader.h"
#include "view/view_server.h"

namespace {

// An input problem (exit 2), told apart from failures to write results (exit 1).
struct InputError : ptprof::Error {
  using ptprof::Error::Error;
};

ptprof::Trace read(const std::string& path) {
  try {
    return ptprof::detail::read_trace(path);
  } catch (const ptprof::Error& e) {
    throw InputError(e.what());
  }
}

// --sort is checked before any trace is read: a typo costs nothing on a 2 GB file.
std::string check_sort_key(const std::string& key) {
  try {
    ptprof::parse_sort_by(key);
    return "";
  } catch (const ptprof::Error& e) {
    return e.what();
  }
}

int table(const std::string& path, const std::string& sort, int row_limit, bool by_shape,
          bool json) {
  const ptprof::Trace trace = read(path);
  ptprof::KeyAverages avg = trace.key_averages(by_shape);
  if (!json) {
    std::cout << avg.table(ptprof::parse_sort_by(sort), row_limit);
    return 0;
  }
  avg.sort(ptprof::parse_sort_by(sort));
  ptprof::detail::JsonWriter w;
  w.begin_object().key("rows").begin_array();
  int n = 0;
  for (const auto& r : avg.rows) {
    if (row_limit >= 0 && n++ >= row_limit) break;
    w.begin_object();
    w.key("name").value(r.key);
    w.key("count").value(r.count);
    w.key("self_cpu_time_total_ns").value(r.self_cpu_time_total_ns);
    w.key("cpu_time_total_ns").value(r.cpu_time_total_ns);
    w.key("self_device_time_total_ns").value(r.self_device_time_total_ns);
    w.key("device_time_total_ns").value(r.device_time_total_ns);
    w.key("is_user_annotation").value(r.is_user_annotation);
    w.end_object();
  }
  w.end_array().end_object();
  std::cout << w.buffer() << "\n";
  return 0;
}

int summary(const std::string& path) {
  const ptprof::Trace trace = read(path);
  std::map<std::string, int64_t> per_cat;
  int64_t steps = 0;
  for (const auto& e : trace.events) {
    ++per_cat[ptprof::category(e.kind)];
    if (e.kind == ptprof::EventKind::UserAnnotation && ptprof::is_step_name(e.name)) ++steps;
  }
  std::cout << path << ": " << trace.events.size() << " events, " << steps
            << " steps, window "
            // Unsigned: the reader gives end >= start, but the span may exceed INT64_MAX.
            << (static_cast<uint64_t>(trace.window_end_ns) -
                static_cast<uint64_t>(trace.window_start_ns)) /
                   1000
            << " us\n";
  for (const auto& [c, n] : per_cat) std::cout << "  " << c << ": " << n << "\n";
  return 0;
}

// A CUDA memory snapshot is a pickle (its first byte 0x80); a trace is JSON or gzip.
bool is_pickle(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return false;
  const int c = std::fgetc(f);
  std::fclose(f);
  return c == 0x80;
}

int memory_snapshot(const std::string& path, const std::string& out, bool json) {
  ptprof::MemorySnapshot snapshot;
  try {
    snapshot = ptprof::MemorySnapshot::load(path);
  } catch (const ptprof::Error& e) {
    throw InputError(e.what());
  }
  const ptprof::MemorySnapshotSummary summary = ptprof::summarize(snapshot);
  if (!out.empty()) {
    if (out.size() < 5 || out.compare(out.size() - 5, 5, ".html") != 0)
      throw InputError("ptprof memory: a snapshot's page is HTML: OUT must end in .html");
    summary.save_html(snapshot, out, std::filesystem::path(path).filename().string());
    return 0;
  }
  std::cout << (json ? summary.json(snapshot) : summary.text(snapshot));
  return 0;
}

int memory(const std::string& path, const std::string& out, bool json) {
  if (is_pickle(path)) return memory_snapshot(path, out, json);
  const ptprof::Trace trace = read(path);
  if (!out.empty()) {
    trace.export_memory_timeline(out);
    return 0;
  }
  std::map<std::string, int64_t> peaks;  // as TensorBoard's Memory view names devices
  for (const auto& m : trace.memory_events) {
    const std::string dev = m.device_type == 0 ? "CPU" : "GPU" + std::to_string(m.device_index);
    auto [it, inserted] = peaks.emplace(dev, m.total_allocated);
    if (!inserted) it->second = std::max(it->second, m.total_allocated);
  }
  ptprof::detail::JsonWriter w;
  w.begin_object();
  for (const auto& [dev, peak] : peaks) w.key(dev).value(peak);
  w.end_object();
  std::cout << w.buffer() << "\n";
  return 0;
}

// A TensorBoard run directory (or any directory) stands for the traces in it, in name order.
std::vector<std::string> traces_of(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_directory(path, ec)) return {path};
  try {
    return ptprof::detail::trace_files_in(path);
  } catch (const ptprof::Error& e) {
    throw InputError(e.what());
  }
}

// Whether a directory's traces come from more than one process (the ranks of a job).
bool several_workers(const std::string& path, const std::vector<std::string>& files) {
  std::error_code ec;
  if (!std::filesystem::is_directory(path, ec)) return false;
  std::set<std::string> workers;
  for (const std::string& f : files)
    workers.insert(
        ptprof::detail::parse_trace_file_name(std::filesystem::path(f).filename().string()).worker);
  return workers.size() > 1;
}

// A directory of flight recorder dumps: what every rank was doing at the end.
int flight_report(const std::string& dir, bool json) {
  ptprof::FlightReport r;
  try {
    r = ptprof::flight_report(dir);
  } catch (const ptprof::Error& e) {
    throw InputError(e.what());
  }
  std::cout << (json ? r.to_json() : r.summary());
  return 0;
}

// One dump: its digest; with OUT, its trace written there.
int flight(const std::string& path, const std::string& out, bool json) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    if (!out.empty()) throw InputError("ptprof flight: -o writes one dump's trace: give a dump, not " + path);
    return flight_report(path, json);
  }
  ptprof::detail::FlightDump dump;
  try {
    dump = ptprof::detail::read_flight_dump(path, /*rings=*/!out.empty());
  } catch (const ptprof::Error& e) {
    throw InputError(e.what());
  }
  const ptprof::FlightRank r = ptprof::detail::flight_digest(dump, path);
  if (json) {
    std::cout << ptprof::detail::flight_rank_json(r) << "\n";
  } else {
    std::cout << path << ": " << r.reason << (r.message.empty() ? "" : " (" + r.message + ")")
              << ", worker " << r.worker << (r.rank >= 0 ? ", rank " + std::to_string(r.rank) : "")
              << "\n";
    const std::string where = r.position();
    std::cout << "  at the end: " << (where.empty() ? "outside any op" : where) << "\n";
    for (const ptprof::FlightThreadState& t : r.threads) {
      std::cout << "  thread " << t.tid << (t.name.empty() ? "" : " (" + t.name + ")")
                << (t.crashed ? " [crashed]" : "") << ":";
      for (std::size_t i = 0; i < t.open.size(); ++i)
        std::cout << (i ? " <" : "") << " " << t.open[i].name << " "
                  << ptprof::detail::format_fixed(static_cast<double>(t.open[i].open_ns) / 1e9, 3)
                  << " s";
      std::cout << "\n";
    }
    if (const ptprof::FlightCollective* c = r.last_collective())
      std::cout << "  last collective: " << c->name << " #" << c->seq << " (" << c->op
                << (c->end_ns == 0 ? ", not finished" : "") << ")\n";
  }
  if (!out.empty()) {
    ptprof::detail::flight_trace(dump).save(out);
    if (!json) std::cout << "wrote " << out << "\n";
  }
  return 0;
}

int report(const std::string& path, bool json, const std::string& html) {
  if (ptprof::has_flight_dumps(path)) {
    if (!html.empty())
      throw InputError("ptprof: --html writes one trace's page: " + path +
                       " holds flight recorder dumps (ptprof report DUMP --html OUT for one)");
    return flight_report(path, json);
  }
  const std::vector<std::string> files = traces_of(path);
  if (!html.empty() && files.size() > 1)
    throw InputError("ptprof: --html writes one page: give one trace, not " + path + " (" +
                     std::to_string(files.size()) + " traces)");
  // A job's log directory: each rank's windows, then the ranks side by side.
  std::optional<ptprof::CrossRankReport> ranks;
  if (several_workers(path, files)) {
    try {
      ranks = ptprof::cross_rank_report(path);
    } catch (const ptprof::Error& e) {  // processes that are not ranks of one job
      std::cerr << "ptprof: the processes' traces are not compared as ranks: " << e.what() << "\n";
    }
  }
  if (json && ranks) std::cout << "{\"windows\": ";
  if (json && files.size() > 1) std::cout << "[\n";
  for (std::size_t i = 0; i < files.size(); ++i) {
    const ptprof::Report r(read(files[i]));
    if (json) {
      std::cout << (i ? ",\n" : "") << r.to_json();
    } else {
      if (files.size() > 1) std::cout << (i ? "\n" : "") << "== " << files[i] << "\n";
      std::cout << r.summary();
    }
    if (!html.empty()) r.save_html(html);
  }
  if (json && files.size() > 1) std::cout << "]\n";
  if (ranks) {
    if (json)
      std::cout << ", \"cross_rank\": " << ranks->to_json() << "}\n";
    else
      std::cout << "\n== " << path << ": across ranks\n" << ranks->summary();
  }
  const std::string dumps = (std::filesystem::path(path) / "flight").string();
  if (!json && ptprof::has_flight_dumps(dumps))
    std::cout << "\nflight recorder dumps in " << dumps << ": ptprof report " << dumps << "\n";
  return 0;
}

// A directory (a TensorBoard run) stands for its last trace in name order:
// tensorboard_trace_handler names them <worker>.<time>, so that is the run's last window.
std::string last_trace_of(const std::string& path, std::string* label) {
  const std::vector<std::string> files = traces_of(path);
  *label = files.size() > 1 || files.back() != path
               ? files.back()
               : std::filesystem::path(path).filename().string();
  return files.back();
}

int diff(const std::string& before, const std::string& after, bool json) {
  ptprof::ReportDiffOptions o;
  const std::string a = last_trace_of(before, &o.before_label);
  const std::string b = last_trace_of(after, &o.after_label);
  const ptprof::ReportDiff d(ptprof::Report(read(a)), ptprof::Report(read(b)), o);
  std::cout << (json ? d.to_json() : d.summary());
  return 0;
}

// Serves until SIGINT or SIGTERM: the signals are taken by a thread of their own (sigwait),
// which stops the server from outside any signal handler.
int view(const ptprof::view::ViewOptions& o) {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);  // inherited by every thread started below
  std::unique_ptr<ptprof::view::ViewServer> server;
  try {
    server = std::make_unique<ptprof::view::ViewServer>(o);
  } catch (const ptprof::Error& e) {
    throw InputError(e.what());
  }
  const std::string warning = server->exposure_warning();
  if (!warning.empty()) std::cerr << warning << "\n";
  std::cout << "ptprof view: serving " << o.path << " at " << server->url()
            << " (Ctrl-C to stop)" << std::endl;
  std::thread waiter([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    server->stop();
  });
  server->run();
  // Stopped by a signal: the waiter has returned. Otherwise wake it with one.
  pthread_kill(waiter.native_handle(), SIGTERM);
  waiter.join();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ptprof: tables, reports, kernels, memory and stacks of PyTorch profiler traces"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "ptprof " PTPROF_VERSION);

  std::string path, out, sort = "self_cpu_time_total", metric = "self_cpu_time_total";
  int row_limit = 100;
  bool json = false, by_shape = false;
  auto trace_arg = [&](CLI::App* c) {
    c->add_option("TRACE", path, "trace file (.json or .json.gz)")->required();
  };
  auto row_limit_opt = [&](CLI::App* c) {
    c->add_option("--row-limit", row_limit, "rows to print (-1: all, as torch.profiler's)")
        ->check(CLI::Validator(
            [](const std::string& v) {
              char* end = nullptr;
              errno = 0;
              const long n = std::strtol(v.c_str(), &end, 10);
              const bool ok = !v.empty() && *end == '\0' && errno == 0 && n >= -1 && n < (1L << 30);
              return ok ? std::string() : "must be a whole number, -1 or more (got \"" + v + "\")";
            },
            "N", "row limit"));
  };

  CLI::App* t = app.add_subcommand("table", "torch.profiler's key_averages() table");
  trace_arg(t);
  t->add_option("--sort", sort, "sort key, e.g. self_cpu_time_total, cuda_time_total, count")
      ->check(CLI::Validator(check_sort_key, "KEY", "sort key"));
  row_limit_opt(t);
  t->add_flag("--group-by-input-shape", by_shape, "one row per name and input shapes");
  t->add_flag("--json", json, "rows as JSON (times in ns)");

  CLI::App* s = app.add_subcommand("summary", "events per category, steps, window");
  trace_arg(s);

  CLI::App* k = app.add_subcommand("kernels", "GPU kernels by name");
  trace_arg(k);
  row_limit_opt(k);

  CLI::App* m = app.add_subcommand(
      "memory", "peak allocated bytes per device, or the memory timeline written to OUT; of a "
                "CUDA memory snapshot (.pickle): its peak, what was live at it, segments, OOMs");
  m->add_option("TRACE", path, "trace file (.json or .json.gz), or a CUDA memory snapshot "
                               "(the pickle memory_viz reads)")
      ->required();
  m->add_flag("--json", json, "a snapshot's summary as JSON (keys in docs/memory-snapshots.md)");
  m->add_option("OUT", out, "OUT.json (curves) or OUT.html (a self-contained chart; for a "
                            "snapshot, its page)")
      ->check([](const std::string& o) {
        const bool ok = (o.size() > 5 && o.compare(o.size() - 5, 5, ".json") == 0) ||
                        (o.size() > 5 && o.compare(o.size() - 5, 5, ".html") == 0);
        return ok ? std::string() : "must end in .json or .html";
      });

  CLI::App* st = app.add_subcommand("stacks", "collapsed stacks, or a flame graph (OUT.svg)");
  trace_arg(st);
  st->add_option("OUT", out, "OUT.svg (flame graph) or any other name (collapsed stacks)")
      ->required();
  st->add_option("--metric", metric, "what a frame's width is")
      ->check(
          CLI::IsMember({"self_cpu_time_total", "self_cuda_time_total", "self_device_time_total"}));

  std::string html, other;
  CLI::App* rp = app.add_subcommand(
      "report", "the diagnosis: step breakdown, GPU idle and its causes, ranked findings");
  rp->add_option("TRACE", path,
                 "trace file, or a directory of them (a TensorBoard run; a job's ranks are "
                 "also compared: who waits for whom; a directory of flight recorder dumps: "
                 "what every rank was doing when the job hung or crashed)")
      ->required();
  rp->add_flag("--json", json, "the report as JSON (keys in docs/report.md)");
  rp->add_option("--html", html, "also write the report as a self-contained HTML page");

  CLI::App* df = app.add_subcommand(
      "diff", "what changed from run A to run B: step categories, operators, kernels, findings");
  df->add_option("A", path, "the trace before, or a run directory (its last trace)")->required();
  df->add_option("B", other, "the trace after, or a run directory (its last trace)")->required();
  df->add_flag("--json", json, "the difference as JSON (keys in docs/report.md)");

  std::string align = "auto";
  int64_t window = -1;
  CLI::App* mg = app.add_subcommand(
      "merge",
      "the ranks' traces in DIR as one trace (Perfetto, chrome://tracing): one process "
      "per rank, clocks aligned");
  mg->add_option("DIR", path, "the ranks' log directory (one trace per rank and window)")
      ->required();
  mg->add_option("-o,--output", out, "the merged trace (.json or .json.gz)")->required();
  mg->add_option("--window", window,
                 "which of each rank's traces, in time order: 0 the first, -1 the last")
      ->default_val(-1);
  mg->add_option("--align", align,
                 "auto: ranks on other hosts than the lowest rank's by their collectives; "
                 "collectives: every rank; none: as written")
      ->check(CLI::IsMember({"auto", "collectives", "none"}));

  ptprof::view::ViewOptions view_options;
  CLI::App* vw = app.add_subcommand(
      "view", "the views in a browser: overview, operators, kernels, timeline, memory, "
              "distributed, diff, flame graph; served on localhost, nothing loaded from elsewhere");
  vw->add_option("LOGDIR", view_options.path,
                 "a log directory (its runs, workers and windows; new traces appear as they are "
                 "written) or one trace file")
      ->required();
  vw->add_option("--port", view_options.port, "port to listen on (0: any free one; default 6006 "
                                               "or the next free one)")
      ->check(CLI::Range(0, 65535));
  vw->add_option("--host", view_options.host,
                 "address to listen on (default 127.0.0.1; anything else is reachable by others)");
  CLI::App* fl = app.add_subcommand(
      "flight", "a flight recorder dump: why it was written, what each thread was inside, the "
                "last collectives; -o writes it as a trace (a crash's raw dump included)");
  fl->add_option("DUMP", path, "a .ptflight dump, or a directory of them (as ptprof report DIR)")
      ->required();
  fl->add_option("-o,--output", out, "the dump's trace (.json or .json.gz)");
  fl->add_flag("--json", json, "the digest as JSON");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);  // prints the message
    return 2;
  }

  try {
    if (*t) return table(path, sort, row_limit, by_shape, json);
    if (*s) return summary(path);
    if (*k) {
      std::cout << read(path).kernel_table().table(row_limit);
      return 0;
    }
    if (*m) return memory(path, out, json);
    if (*st) {
      read(path).export_stacks(out, metric);
      return 0;
    }
    if (*rp) return report(path, json, html);
    if (*vw) {
      view_options.port_given = vw->count("--port") > 0;
      return view(view_options);
    }
    if (*fl) return flight(path, out, json);
    if (*df) return diff(path, other, json);
    if (*mg) {
      ptprof::MergeOptions o;
      o.window = window;
      o.align = align == "none"          ? ptprof::MergeOptions::Align::None
                : align == "collectives" ? ptprof::MergeOptions::Align::Collectives
                                         : ptprof::MergeOptions::Align::Auto;
      ptprof::MergeResult r;
      try {
        r = ptprof::merge_ranks(path, out, o);
      } catch (const ptprof::Error& e) {
        // Reading the ranks is an input problem; the writer's errors name the output path.
        if (std::string(e.what()).find(out) == std::string::npos) throw InputError(e.what());
        throw;
      }
      std::cout << r.summary() << "wrote " << out << "\n";
      return 0;
    }
  } catch (const InputError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 2;
}
