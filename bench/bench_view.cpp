// bench_view: `ptprof view` on a large trace, as a user meets it (issue 25 section 3).
//
//   bench_view --cli PTPROF [--mb N | --trace FILE] [--dir DIR] [--requests N] [--keep] [--json]
//
// Generates the synthetic trace of bench_reader (trace_generator.h: ptprof's schema, every
// option, a GPU part) of at least N MB (default 2100) in DIR (default /tmp), or takes FILE.
// Then, twice: `PTPROF view FILE --port 0` started as a user starts it, the first time with no
// index (it is deleted first), the second time with the index the first one left. Each time,
// from the start of the process: when the Overview is served (GET /api/overview answers 200),
// when the timeline's first paint is (its tracks and the slices of the whole trace at 1500
// pixels, as the page asks), when the other views' tables are ready; the server's CPU time at
// those moments and its peak RSS (VmHWM). Then zoom and pan as the page does (a window and
// half of it either side, 1500 pixels, the lanes of its first two screens of rows; the level
// drawn at random from the whole trace down to 2^-24 of it): each answer's latency, p50, p95
// and max. The generated file is deleted unless
// --keep; the indexes are always deleted.
#include <httplib.h>
#include <signal.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "trace_generator.h"

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// A process's user + system CPU seconds, and its peak RSS in bytes.
double cpu_of(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const auto close = s.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream in(s.substr(close + 2));
  std::string field;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && in >> field; ++i) {
    if (i == 14) utime = std::stoull(field);
    if (i == 15) stime = std::stoull(field);
  }
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}
int64_t peak_rss_of(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::atoll(line.c_str() + 6) * 1024;
  return 0;
}

struct Open {
  double overview_s = 0, paint_s = 0, tables_s = 0;           // wall, from the process start
  double overview_cpu = 0, paint_cpu = 0, tables_cpu = 0;      // the server's CPU seconds
  int64_t paint_peak = 0, peak = 0;                            // VmHWM at first paint, at the end
  nlohmann::json phases;                                       // the index's phases (first open)
  std::vector<double> latencies_ms;
  std::vector<double> levels;  // each request's zoom: the window is 2^-level of the trace
  int64_t slices = 0;
};

class Server {
 public:
  Server(const std::string& cli, const std::string& trace) {
    int out[2];
    if (pipe(out) != 0) throw std::runtime_error("pipe");
    start_ = now_s();
    pid_ = fork();
    if (pid_ == 0) {
      dup2(out[1], 1);
      close(out[0]);
      execl(cli.c_str(), cli.c_str(), "view", trace.c_str(), "--port", "0",
            static_cast<char*>(nullptr));
      _exit(127);
    }
    close(out[1]);
    std::string line;
    char c;
    while (read(out[0], &c, 1) == 1 && c != '\n') line += c;
    close(out[0]);
    const auto at = line.find("http://127.0.0.1:");
    if (at == std::string::npos) throw std::runtime_error("ptprof view printed no URL: " + line);
    port_ = std::atoi(line.c_str() + at + 17);
    client_ = std::make_unique<httplib::Client>("127.0.0.1", port_);
    client_->set_read_timeout(600, 0);
  }
  ~Server() {
    kill(pid_, SIGTERM);
    int status = 0;
    waitpid(pid_, &status, 0);
  }
  // GET, asking again while the answer is 202 (being indexed); the JSON of the 200.
  nlohmann::json get(const std::string& path) {
    for (;;) {
      auto r = client_->Get(path.c_str(), {{"Accept-Encoding", "gzip, deflate"}});
      if (!r) throw std::runtime_error("no answer to " + path);
      if (r->status == 202) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        continue;
      }
      if (r->status != 200) throw std::runtime_error(path + ": HTTP " + std::to_string(r->status) + " " + r->body);
      return nlohmann::json::parse(r->body);
    }
  }
  // GET, the answer's size (not parsed: the time is the server's and the transfer's).
  std::size_t get_raw(const std::string& path) {
    auto r = client_->Get(path.c_str(), {{"Accept-Encoding", "gzip, deflate"}});
    if (!r || r->status != 200) throw std::runtime_error("no answer to " + path);
    return r->body.size();
  }
  double since_start() const { return now_s() - start_; }
  pid_t pid() const { return pid_; }

 private:
  double start_ = 0;
  pid_t pid_ = -1;
  int port_ = 0;
  std::unique_ptr<httplib::Client> client_;
};

Open open_once(const std::string& cli, const std::string& trace, int requests, bool first) {
  Open o;
  Server s(cli, trace);
  std::string id;
  while (id.empty()) {
    const auto runs = s.get("/api/runs");
    if (!runs["traces"].empty()) id = runs["traces"][0]["id"];
    else std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  s.get("/api/overview?trace=" + id);
  o.overview_s = s.since_start();
  o.overview_cpu = cpu_of(s.pid());
  const auto meta = s.get("/api/timeline?trace=" + id);
  const int64_t end = meta["end_ns"];
  o.slices = meta["slices"];
  // The page asks for the lanes of its rows from a screen above to a screen below what it
  // shows: on its first screen (700 px of 16 px lanes), the first 88 lanes at most.
  int64_t all_lanes = 0;
  for (const auto& t : meta["tracks"]) all_lanes += t["lanes"].get<int64_t>();
  const std::string shown = "&lanes=0-" + std::to_string(std::min<int64_t>(all_lanes, 88) - 1);
  s.get("/api/timeline/slices?trace=" + id + "&t0=" + std::to_string(-end / 2) + "&t1=" +
        std::to_string(end + end / 2) + "&px=1500" + shown);
  o.paint_s = s.since_start();
  o.paint_cpu = cpu_of(s.pid());
  o.paint_peak = peak_rss_of(s.pid());
  s.get("/api/operators?trace=" + id + "&limit=1");
  o.tables_s = s.since_start();
  o.tables_cpu = cpu_of(s.pid());
  if (first) {
    const nlohmann::json runs = s.get("/api/runs");
    for (const auto& t : runs["traces"])
      if (t["id"] == id && t.contains("index_seconds")) o.phases = t["index_seconds"];
  }
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> level(0, 24), unit(0, 1);
  for (int i = 0; i < requests; ++i) {
    const double lv = level(rng);
    o.levels.push_back(lv);
    const double span = static_cast<double>(end) / std::pow(2.0, lv);
    const double a = unit(rng) * (static_cast<double>(end) - span);
    const double t0 = now_s();
    s.get_raw("/api/timeline/slices?trace=" + id + "&t0=" + std::to_string(static_cast<int64_t>(a - span / 2)) +
              "&t1=" + std::to_string(static_cast<int64_t>(a + 1.5 * span)) + "&px=1500" + shown);
    o.latencies_ms.push_back((now_s() - t0) * 1000);
  }
  o.peak = peak_rss_of(s.pid());
  return o;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size() - 1) + 0.5))];
}

void remove_indexes(const std::string& trace) {
  const std::string dir = trace.substr(0, trace.rfind('/') + 1);
  const std::string base = trace.substr(trace.rfind('/') + 1);
  for (const char* suffix : {".ptprof-index", ".ptprof-index-tables"}) std::remove((dir + "." + base + suffix).c_str());
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t mb = 2100;
  std::string dir = "/tmp", trace, cli;
  int requests = 300;
  bool keep = false, json = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--mb" && i + 1 < argc) mb = static_cast<std::size_t>(std::atol(argv[++i]));
    else if (a == "--dir" && i + 1 < argc) dir = argv[++i];
    else if (a == "--trace" && i + 1 < argc) trace = argv[++i];
    else if (a == "--cli" && i + 1 < argc) cli = argv[++i];
    else if (a == "--requests" && i + 1 < argc) requests = std::atoi(argv[++i]);
    else if (a == "--keep") keep = true;
    else if (a == "--json") json = true;
    else {
      std::fprintf(stderr, "usage: bench_view --cli PTPROF [--mb N | --trace FILE] [--dir DIR] [--requests N] [--keep] [--json]\n");
      return 2;
    }
  }
  if (cli.empty()) {
    std::fprintf(stderr, "bench_view: --cli PTPROF is needed\n");
    return 2;
  }
  bool generated = false;
  double gen_s = 0;
  if (trace.empty()) {
    struct statvfs fs {};
    const uint64_t need = (uint64_t{mb} << 20) * 3 / 2;  // the trace and its index
    if (statvfs(dir.c_str(), &fs) != 0 || uint64_t{fs.f_bavail} * fs.f_frsize < need) {
      std::fprintf(stderr, "bench_view: %s needs %llu MB free\n", dir.c_str(),
                   static_cast<unsigned long long>(need >> 20));
      return 1;
    }
    trace = dir + "/bench_view.pt.trace.json";
    const double g0 = now_s();
    ptprof::bench::generate_trace(mb << 20).save(trace);
    gen_s = now_s() - g0;
    generated = true;
  }
  std::ifstream f(trace, std::ios::binary | std::ios::ate);
  const double file_mb = static_cast<double>(f.tellg()) / 1e6;
  remove_indexes(trace);
  Open first, again;
  try {
    first = open_once(cli, trace, requests, true);
    again = open_once(cli, trace, requests, false);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_view: %s\n", e.what());
    return 1;
  }
  remove_indexes(trace);
  if (generated && !keep) std::remove(trace.c_str());

  const double MB = 1e6;
  auto open_json = [&](const Open& o) {
    nlohmann::json j = {{"overview_s", o.overview_s}, {"overview_cpu_s", o.overview_cpu},
                        {"first_paint_s", o.paint_s}, {"first_paint_cpu_s", o.paint_cpu},
                        {"tables_s", o.tables_s}, {"tables_cpu_s", o.tables_cpu},
                        {"peak_rss_at_first_paint_bytes", o.paint_peak}, {"peak_rss_bytes", o.peak},
                        {"zoom_p50_ms", percentile(o.latencies_ms, 0.5)},
                        {"zoom_p95_ms", percentile(o.latencies_ms, 0.95)},
                        {"zoom_max_ms", percentile(o.latencies_ms, 1.0)}};
    if (!o.phases.is_null()) j["index_phases_s"] = o.phases;
    return j;
  };
  if (json) {
    std::printf("%s\n", nlohmann::json({{"file", trace}, {"file_mb", file_mb}, {"slices", first.slices},
                                        {"requests", requests}, {"first_open", open_json(first)},
                                        {"reopen", open_json(again)}})
                              .dump()
                              .c_str());
    return 0;
  }
  std::printf("bench_view: %s, %.1f MB of JSON, %lld slices%s\n", trace.c_str(), file_mb,
              static_cast<long long>(first.slices),
              generated ? (", generated in " + std::to_string(static_cast<int>(gen_s)) + " s").c_str() : "");
  std::printf("  %-10s %18s %18s %18s %14s %14s\n", "", "Overview", "first paint", "all tables",
              "peak RSS", "zoom/pan ms");
  std::printf("  %-10s %18s %18s %18s %14s %14s\n", "", "wall s (cpu s)", "wall s (cpu s)",
              "wall s (cpu s)", "MB (x file)", "p50/p95/max");
  for (const auto& [name, o] : {std::pair<const char*, const Open&>{"first open", first}, {"reopen", again}}) {
    char ov[64], pa[64], ta[64], pk[64], z[64];
    std::snprintf(ov, sizeof(ov), "%.2f (%.2f)", o.overview_s, o.overview_cpu);
    std::snprintf(pa, sizeof(pa), "%.2f (%.2f)", o.paint_s, o.paint_cpu);
    std::snprintf(ta, sizeof(ta), "%.2f (%.2f)", o.tables_s, o.tables_cpu);
    std::snprintf(pk, sizeof(pk), "%.0f (%.2fx)", o.peak / MB, o.peak / MB / file_mb);
    std::snprintf(z, sizeof(z), "%.0f/%.0f/%.0f", percentile(o.latencies_ms, 0.5),
                  percentile(o.latencies_ms, 0.95), percentile(o.latencies_ms, 1.0));
    std::printf("  %-10s %18s %18s %18s %14s %14s\n", name, ov, pa, ta, pk, z);
  }
  std::printf("  (%d zoom/pan requests each; peak RSS at the first paint of the first open: %.0f MB)\n",
              requests, first.paint_peak / MB);
  std::printf("  zoom/pan p95 by level (the window 2^-level of the trace), first open / reopen:");
  for (int lo : {0, 4, 8, 12, 16, 20}) {
    std::vector<double> a, b;
    for (std::size_t i = 0; i < first.levels.size(); ++i)
      if (first.levels[i] >= lo && first.levels[i] < lo + 4) a.push_back(first.latencies_ms[i]);
    for (std::size_t i = 0; i < again.levels.size(); ++i)
      if (again.levels[i] >= lo && again.levels[i] < lo + 4) b.push_back(again.latencies_ms[i]);
    std::printf(" [%d,%d) %.0f/%.0f", lo, lo + 4, percentile(a, 0.95), percentile(b, 0.95));
  }
  std::printf(" ms\n");
  if (!first.phases.is_null()) {
    std::printf("  first open, index phases (wall s):");
    for (const auto& [k, v] : first.phases.items()) std::printf(" %s %.2f", k.c_str(), v.get<double>());
    std::printf("\n");
  }
  return 0;
}
