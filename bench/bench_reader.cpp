// bench_reader: how fast the `ptprof` command's trace reader reads a large trace, and in how
// much memory.
//
//   bench_reader [--mb N] [--dir DIR] [--cli PTPROF] [--keep] [--json]
//
// Generates the synthetic trace of trace_generator.h, of at least N MB of JSON (default 600),
// in ptprof's schema, written by ptprof's own writer: training steps with user ranges, ATen ops with record_shapes inputs
// (tensors with strides, scalars, scalar lists, tensor lists), with_stack C++ stacks and
// with_flops FLOPs, profile_memory [memory] events, and a GPU part (runtime launches, kernels
// with every field, copies, memsets, syncs, flows, GPU user spans). It is saved as DIR/
// bench_reader.pt.trace.json and .json.gz (DIR defaults to /tmp); each is read by a fresh
// process (this binary, re-run with --read) that reports its time and peak RSS, so what the
// generator held does not count. With --cli, `PTPROF table FILE` (the command as people run
// it) is timed too, its peak RSS taken from wait4(). The files are deleted unless --keep; DIR
// must have room for both (checked first).
//
// MB/s are of the JSON text (for the gzip'ed file too: its uncompressed size), on wall time
// and on the reading process's CPU time (one thread; steadier on a shared machine). "RSS
// before" is the reading process before it reads (libtorch's libraries loaded); "Trace" is
// what the resulting ptprof::Trace holds (its vectors and strings, estimated from their sizes).
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <set>
#include <string>
#include <unordered_set>
#include <vector>

#include "ptprof/report.h"
#include "ptprof/trace.h"
#include "trace/byte_source.h"
#include "trace/trace_reader.h"
#include "trace_generator.h"

namespace {

using ptprof::Event;
using ptprof::EventKind;
using ptprof::OpInput;
using ptprof::Trace;

// ---- measuring -----------------------------------------------------------------------------

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

int64_t rss_bytes() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::atoll(line.c_str() + 6) * 1024;
  return 0;
}

// What the Trace holds: its vectors and the strings in them.
int64_t trace_bytes(const Trace& t) {
  std::size_t n = sizeof(Trace) + t.events.capacity() * sizeof(Event) +
                  t.memory_events.capacity() * sizeof(ptprof::MemoryEvent);
  for (const auto& list : t.op_inputs) {
    n += sizeof(list) + list.capacity() * sizeof(OpInput);
    for (const OpInput& in : list) {
      n += in.dtype.capacity() + in.concrete.capacity() +
           8 * (in.sizes.capacity() + in.strides.capacity());
      for (const auto& l : in.list_sizes) n += sizeof(l) + 8 * l.capacity();
    }
  }
  for (const auto& frames : t.stacks) {
    n += sizeof(frames) + frames.capacity() * sizeof(std::string);
    for (const std::string& f : frames) n += f.capacity() > 15 ? f.capacity() + 1 : 0;
  }
  std::unordered_set<const char*> names;
  for (const Event& e : t.events)
    if (names.insert(e.name.data()).second) n += sizeof(std::string) + e.name.size() + 1 + 32;
  return static_cast<int64_t>(n);
}

// The child: reads `path`, prints one line of figures.
int read_one(const std::string& path) {
  const int64_t before = rss_bytes();
  const double w0 = now_s(), c0 = cpu_s();
  const Trace t = ptprof::detail::read_trace(path);
  const double w1 = now_s(), c1 = cpu_s();
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  std::printf("%.6f %.6f %lld %lld %lld %zu\n", w1 - w0, c1 - c0,
              static_cast<long long>(ru.ru_maxrss) * 1024, static_cast<long long>(before),
              static_cast<long long>(trace_bytes(t)), t.events.size() + t.memory_events.size());
  return 0;
}

struct Result {
  std::string what, path;
  int64_t file_bytes = 0, json_bytes = 0, peak_rss = 0, rss_before = 0, trace = 0;
  double wall = 0, cpu = 0;
  std::size_t events = 0;
};

int64_t file_size(const std::string& path) {
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  return static_cast<int64_t>(f.tellg());
}

// Bytes of JSON in a (gzip'ed) trace, counted through the reader's source in its chunks.
int64_t json_size(const std::string& path) {
  auto src = ptprof::detail::open_trace_source(path);
  std::vector<char> buf(1 << 20);
  int64_t n = 0;
  for (std::size_t got; (got = src->read(buf.data(), buf.size())) > 0;) n += got;
  return n;
}

// `cli command path` with its output discarded: wall time, CPU time and peak RSS of the process.
bool run_cli(const std::string& cli, const char* command, Result& r) {
  const double w0 = now_s();
  const pid_t pid = fork();
  if (pid < 0) return false;
  if (pid == 0) {
    const int null = ::open("/dev/null", O_WRONLY);
    if (null >= 0) dup2(null, 1);
    execl(cli.c_str(), cli.c_str(), command, r.path.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  rusage ru{};
  if (wait4(pid, &status, 0, &ru) != pid) return false;
  r.wall = now_s() - w0;
  r.cpu = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
          static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
  r.peak_rss = static_cast<int64_t>(ru.ru_maxrss) * 1024;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

bool run_child(const std::string& self, Result& r) {
  const std::string cmd = "'" + self + "' --read '" + r.path + "'";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return false;
  long long peak = 0, before = 0, trace = 0;
  const int got = std::fscanf(p, "%lf %lf %lld %lld %lld %zu", &r.wall, &r.cpu, &peak, &before,
                              &trace, &r.events);
  const int status = pclose(p);
  r.peak_rss = peak;
  r.rss_before = before;
  r.trace = trace;
  return got == 6 && status == 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t mb = 600;
  std::string dir = "/tmp";
  std::string cli;
  bool keep = false, json = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--read" && i + 1 < argc) return read_one(argv[i + 1]);
    if (a == "--mb" && i + 1 < argc) {
      mb = static_cast<std::size_t>(std::atol(argv[++i]));
    } else if (a == "--dir" && i + 1 < argc) {
      dir = argv[++i];
    } else if (a == "--cli" && i + 1 < argc) {
      cli = argv[++i];
    } else if (a == "--keep") {
      keep = true;
    } else if (a == "--json") {
      json = true;
    } else {
      std::fprintf(stderr,
                   "usage: bench_reader [--mb N] [--dir DIR] [--cli PTPROF] [--keep] [--json]\n");
      return 2;
    }
  }
  char self[4096];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) return 1;
  self[n] = 0;

  // The plain file, the gzip'ed one (~12%) and room to spare.
  struct statvfs fs {};
  const uint64_t need = (uint64_t{mb} << 20) * 3 / 2;
  if (statvfs(dir.c_str(), &fs) != 0 || uint64_t{fs.f_bavail} * fs.f_frsize < need) {
    std::fprintf(stderr, "bench_reader: %s needs %llu MB free\n", dir.c_str(),
                 static_cast<unsigned long long>(need >> 20));
    return 1;
  }
  const std::string plain = dir + "/bench_reader.pt.trace.json";
  const std::string gz = plain + ".gz";
  const double g0 = now_s();
  std::size_t events = 0;
  // Issue 16's budget: the report of a window costs at most what writing its trace costs.
  double write_s = 0, write_cpu = 0, report_s = 0, report_cpu = 0;
  {
    const Trace t = ptprof::bench::generate_trace(mb << 20);
    events = t.events.size() + t.memory_events.size();
    double w = now_s(), c = cpu_s();
    t.save(plain);
    write_s = now_s() - w;
    write_cpu = cpu_s() - c;
    t.save(gz);
    w = now_s();
    c = cpu_s();
    const ptprof::Report report(t);
    report_s = now_s() - w;
    report_cpu = cpu_s() - c;
    if (report.steps.empty()) {
      std::fprintf(stderr, "bench_reader: the report of the generated trace has no steps\n");
      return 1;
    }
  }
  const double gen_s = now_s() - g0;

  std::vector<Result> results;
  for (const auto& [what, path] : {std::pair<std::string, std::string>{"plain", plain},
                                   std::pair<std::string, std::string>{"gzip", gz}}) {
    Result r;
    r.what = what;
    r.path = path;
    r.file_bytes = file_size(path);
    r.json_bytes = json_size(path);
    if (!run_child(self, r)) {
      std::fprintf(stderr, "bench_reader: reading %s failed\n", path.c_str());
      return 1;
    }
    results.push_back(r);
  }
  std::vector<Result> cli_results;
  Result cli_report;
  if (!cli.empty()) {
    cli_report = results.front();
    if (!run_cli(cli, "report", cli_report)) {
      std::fprintf(stderr, "bench_reader: %s report %s failed\n", cli.c_str(), plain.c_str());
      return 1;
    }
    for (const Result& f : results) {
      Result r = f;
      r.what = "table " + f.what;
      if (!run_cli(cli, "table", r)) {
        std::fprintf(stderr, "bench_reader: %s table %s failed\n", cli.c_str(), f.path.c_str());
        return 1;
      }
      cli_results.push_back(r);
    }
  }
  if (!keep) {
    std::remove(plain.c_str());
    std::remove(gz.c_str());
  }
  const double MB = 1e6;
  if (json) {
    std::printf("{\"events\": %zu, \"results\": [", events);
    for (std::size_t i = 0; i < results.size(); ++i) {
      const Result& r = results[i];
      std::printf(
          "%s{\"file\": \"%s\", \"file_bytes\": %lld, \"json_bytes\": %lld, "
          "\"wall_s\": %.3f, \"cpu_s\": %.3f, \"mb_per_s_wall\": %.1f, "
          "\"mb_per_s_cpu\": %.1f, \"peak_rss_bytes\": %lld, \"rss_before_bytes\": %lld, "
          "\"trace_bytes\": %lld}",
          i ? ", " : "", r.what.c_str(), static_cast<long long>(r.file_bytes),
          static_cast<long long>(r.json_bytes), r.wall, r.cpu, r.json_bytes / MB / r.wall,
          r.json_bytes / MB / r.cpu, static_cast<long long>(r.peak_rss),
          static_cast<long long>(r.rss_before), static_cast<long long>(r.trace));
    }
    std::printf("], \"ptprof_table\": [");
    for (std::size_t i = 0; i < cli_results.size(); ++i) {
      const Result& r = cli_results[i];
      std::printf(
          "%s{\"file\": \"%s\", \"json_bytes\": %lld, \"wall_s\": %.3f, "
          "\"cpu_s\": %.3f, \"mb_per_s_wall\": %.1f, \"mb_per_s_cpu\": %.1f, "
          "\"peak_rss_bytes\": %lld}",
          i ? ", " : "", r.what.c_str() + 6, static_cast<long long>(r.json_bytes), r.wall, r.cpu,
          r.json_bytes / MB / r.wall, r.json_bytes / MB / r.cpu,
          static_cast<long long>(r.peak_rss));
    }
    std::printf(
        "], \"report\": {\"write_s\": %.3f, \"write_cpu_s\": %.3f, \"report_s\": %.3f, "
        "\"report_cpu_s\": %.3f",
        write_s, write_cpu, report_s, report_cpu);
    if (!cli.empty())
      std::printf(", \"cli_report_wall_s\": %.3f, \"cli_report_peak_rss_bytes\": %lld",
                  cli_report.wall, static_cast<long long>(cli_report.peak_rss));
    std::printf("}}\n");
    return 0;
  }
  std::printf(
      "bench_reader: synthetic trace in ptprof's schema (record_shapes, with_stack, "
      "with_flops, profile_memory, GPU): %zu events, generated and written in %.1f s\n",
      events, gen_s);
  std::printf("  %-6s %10s %10s %8s %9s %9s %10s %11s %10s\n", "file", "file MB", "JSON MB",
              "wall s", "MB/s", "MB/s cpu", "peak RSS", "RSS before", "Trace");
  for (const Result& r : results)
    std::printf("  %-6s %10.1f %10.1f %8.2f %9.1f %9.1f %7.0f MB %8.0f MB %7.0f MB\n",
                r.what.c_str(), r.file_bytes / MB, r.json_bytes / MB, r.wall,
                r.json_bytes / MB / r.wall, r.json_bytes / MB / r.cpu, r.peak_rss / MB,
                r.rss_before / MB, r.trace / MB);
  std::printf(
      "  (MB/s of JSON text; peak RSS of the reading process, which loads libtorch's "
      "libraries: RSS before; Trace: what the result holds)\n");
  if (!cli_results.empty()) {
    std::printf("`%s table FILE` (the whole command: read, key_averages, the table):\n",
                cli.c_str());
    std::printf("  %-6s %10s %10s %8s %9s %9s %10s\n", "file", "file MB", "JSON MB", "wall s",
                "MB/s", "MB/s cpu", "peak RSS");
    for (const Result& r : cli_results)
      std::printf("  %-6s %10.1f %10.1f %8.2f %9.1f %9.1f %7.0f MB\n", r.what.c_str() + 6,
                  r.file_bytes / MB, r.json_bytes / MB, r.wall, r.json_bytes / MB / r.wall,
                  r.json_bytes / MB / r.cpu, r.peak_rss / MB);
  }
  std::printf(
      "ptprof::Report of the %zu-event trace in memory: %.2f s (CPU %.2f s); writing it as "
      "JSON (Trace::save): %.2f s (CPU %.2f s); report / write %.2f\n",
      events, report_s, report_cpu, write_s, write_cpu, report_cpu / write_cpu);
  if (!cli.empty())
    std::printf("`%s report FILE` (read, report, summary): %.2f s wall, peak RSS %.0f MB\n",
                cli.c_str(), cli_report.wall, cli_report.peak_rss / MB);
  if (keep) std::printf("  kept: %s, %s\n", plain.c_str(), gz.c_str());
  return 0;
}
