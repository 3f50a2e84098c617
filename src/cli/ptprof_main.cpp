// ptprof: command-line companion of the library.
//
//   ptprof table TRACE [--sort KEY] [--row-limit N] [--json]   key_averages() table of a trace
//   ptprof summary TRACE                                        events per category, steps
//   ptprof kernels TRACE [--row-limit N]                        GPU kernel table
//   ptprof memory TRACE [OUT.json|OUT.html]                     peak allocated bytes per device
//                                                               (as TensorBoard names devices), or
//                                                               the memory timeline written to OUT
//   ptprof stacks TRACE OUT[.svg] [--metric M]                  collapsed stacks / flame graph
#include <cstdio>
#include <cstring>
#include <iostream>
#include <algorithm>
#include <map>
#include <string>

#include "cli/trace_reader.h"
#include "json_writer.h"
#include "ptprof/error.h"
#include "ptprof/key_averages.h"

namespace {

int usage() {
  std::fprintf(stderr,
               "usage: ptprof table TRACE [--sort KEY] [--row-limit N] [--json]\n"
               "       ptprof summary TRACE\n"
               "       ptprof kernels TRACE [--row-limit N]\n"
               "       ptprof memory TRACE [OUT.json|OUT.html]\n"
               "       ptprof stacks TRACE OUT[.svg] [--metric self_cpu_time_total|self_cuda_time_total]\n");
  return 2;
}

int run(int argc, char** argv) {
  if (argc < 3) return usage();
  const std::string cmd = argv[1];
  const std::string path = argv[2];
  std::string sort;
  std::string out;
  std::string metric = "self_cpu_time_total";
  int row_limit = 100;
  bool json = false;
  for (int i = 3; i < argc; ++i) {
    const std::string a = argv[i];
    if ((cmd == "memory" || cmd == "stacks") && out.empty() && a.rfind("--", 0) != 0) {
      out = a;
    } else if (a == "--metric" && i + 1 < argc) {
      metric = argv[++i];
    } else if (a == "--sort" && i + 1 < argc) {
      sort = argv[++i];
    } else if (a == "--row-limit" && i + 1 < argc) {
      row_limit = std::atoi(argv[++i]);
    } else if (a == "--json") {
      json = true;
    } else {
      std::fprintf(stderr, "ptprof: unknown argument '%s'\n", a.c_str());
      return usage();
    }
  }
  ptprof::Trace trace;
  try {
    trace = ptprof::detail::read_trace(path);
  } catch (const ptprof::Error& e) {
    // A trace that cannot be read (missing, corrupt, not a trace): its own exit status.
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
  if (cmd == "table") {
    ptprof::KeyAverages avg = trace.key_averages();
    if (!json) {
      std::cout << avg.table(ptprof::parse_sort_by(sort), row_limit);
      return 0;
    }
    avg.sort(ptprof::parse_sort_by(sort));
    ptprof::detail::JsonWriter w;
    w.begin_object().key("rows").begin_array();
    for (const auto& r : avg.rows) {
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
  if (cmd == "kernels") {
    std::cout << trace.kernel_table().table(row_limit);
    return 0;
  }
  if (cmd == "memory") {
    if (!out.empty()) {
      trace.export_memory_timeline(out);
      return 0;
    }
    std::map<std::string, int64_t> peaks;
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
  if (cmd == "stacks") {
    if (out.empty()) return usage();
    trace.export_stacks(out, metric);
    return 0;
  }
  if (cmd == "summary") {
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
  return usage();
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
