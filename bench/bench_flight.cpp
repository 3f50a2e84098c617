// bench_flight: the flight recorder's answer across ranks at the scale of a large job: how long
// 'ptprof report DIR' takes on 1,024 ranks' dumps, and in how much memory.
//
//   bench_flight [--ranks N] [--dir DIR] --cli PTPROF [--keep] [--json]
//
// Generates the dumps a hung job of N ranks (default 1,024) leaves: each rank a watchdog's dump
// (its digest: 2,500 names, 8 threads, the training thread 12 ops deep, Gloo's thread in the
// all-reduce, the last 256 collectives), one rank stuck in an op before the all-reduce the
// others wait in, and every 128th rank's dump with its raw rings too, as a crash leaves them
// (8 threads x 65,536 records: 32 MiB). Then runs `PTPROF report DIR` (the command as people run it) and reports
// its wall time and peak RSS (wait4) next to the largest single dump: the goal is 30 s, holding
// one rank's dump at a time. The directory is removed unless --keep.
#include <sys/resource.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "flight_builder.h"

namespace {

namespace fl = ptprof::detail::flight;
using ptprof::test::FlightBuilder;
using ptprof::test::kDump;
using ptprof::test::kSec;

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

FlightBuilder rank_dump(int64_t rank, int64_t ranks, int64_t stuck, bool rings) {
  const int64_t last = rank == stuck ? 1811 : 1812;
  FlightBuilder b(rank, ranks, fl::Reason::kHang, kDump + rank);
  for (int i = 0; i < 2500; ++i) b.name("aten::synthetic_op_number_" + std::to_string(i));
  const int main = b.thread(100, "python");
  const int gloo = b.thread(101, "pt_gloo_runloop");
  for (int i = 0; i < 6; ++i) b.thread(102 + i, "pt_autograd_" + std::to_string(i));
  b.step(last, kDump - 30 * kSec);
  for (int64_t s = last - 255; s <= last; ++s) {
    const int64_t at = kDump - (last - s + 2) * kSec;
    b.collective(main, "c10d::allreduce_", "0", s, at, at + 1000);
  }
  b.open_step(main, last + 1, kDump - 30 * kSec);
  b.open(main, "forward", kDump - 29 * kSec, true);
  for (int d = 0; d < 9; ++d)
    b.open(main, "aten::synthetic_op_number_" + std::to_string(d), kDump - (28 - d) * kSec);
  if (rank == stuck) {
    b.open(main, "aten::nonzero", kDump - 15 * kSec);
  } else {
    b.open(gloo, "gloo:all_reduce", kDump - 10 * kSec, true, fl::kCollective | fl::kAsync);
  }
  if (rings) {
    for (int t = 0; t < 8; ++t)
      for (int i = 0; i < 65536; ++i)
        b.done(t, "aten::synthetic_op_number_" + std::to_string(i % 2500),
               kDump - 20 * kSec + i * 1000, kDump - 20 * kSec + i * 1000 + 500);
  }
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t ranks = 1024;
  std::string dir, cli;
  bool keep = false, json = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--ranks" && i + 1 < argc) {
      ranks = std::atoll(argv[++i]);
    } else if (a == "--dir" && i + 1 < argc) {
      dir = argv[++i];
    } else if (a == "--cli" && i + 1 < argc) {
      cli = argv[++i];
    } else if (a == "--keep") {
      keep = true;
    } else if (a == "--json") {
      json = true;
    } else {
      std::fprintf(stderr, "usage: %s [--ranks N] [--dir DIR] --cli PTPROF [--keep] [--json]\n",
                   argv[0]);
      return 2;
    }
  }
  if (cli.empty() || ranks < 2) {
    std::fprintf(stderr, "bench_flight: --cli PTPROF is needed, and --ranks at least 2\n");
    return 2;
  }
  if (dir.empty()) {
    char tmpl[] = "/tmp/ptprof_bench_flight.XXXXXX";
    if (mkdtemp(tmpl) == nullptr) {
      std::perror("bench_flight: mkdtemp");
      return 1;
    }
    dir = tmpl;
  }
  std::filesystem::create_directories(dir);

  const int64_t stuck = ranks * 3 / 4 + 1;
  const double g0 = now_s();
  uint64_t bytes = 0, largest = 0;
  for (int64_t r = 0; r < ranks; ++r) {
    const std::string data = rank_dump(r, ranks, stuck, r % 128 == 5).bytes();
    const std::string path = dir + "/host" + std::to_string(r / 8) + "_" +
                             std::to_string(1000 + r) + "_rank" + std::to_string(r) + "." +
                             std::to_string(kDump + r) + ".ptflight";
    std::ofstream(path, std::ios::binary).write(data.data(), static_cast<std::streamsize>(data.size()));
    bytes += data.size();
    largest = std::max<uint64_t>(largest, data.size());
  }
  const double generated = now_s() - g0;

  // The command, its output kept for the check.
  const std::string out = dir + ".out";
  const double w0 = now_s();
  const pid_t pid = fork();
  if (pid == 0) {
    const int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) dup2(fd, 1);
    execl(cli.c_str(), cli.c_str(), "report", dir.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  rusage ru{};
  wait4(pid, &status, 0, &ru);
  const double wall = now_s() - w0;
  const double cpu = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                     static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
  const int64_t peak = static_cast<int64_t>(ru.ru_maxrss) * 1024;
  std::string text;
  {
    std::ifstream f(out);
    text.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  }
  const std::string want = "verdict: rank " + std::to_string(stuck) + " is stuck in aten::nonzero";
  const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
                  text.find(want) != std::string::npos;
  if (!keep) {
    std::filesystem::remove_all(dir);
    std::filesystem::remove(out);
  }
  if (json) {
    std::printf(
        "{\"ranks\": %lld, \"dump_bytes\": %llu, \"largest_dump_bytes\": %llu, \"wall_s\": %.3f, "
        "\"cpu_s\": %.3f, \"peak_rss_bytes\": %lld, \"verdict_ok\": %s}\n",
        static_cast<long long>(ranks), static_cast<unsigned long long>(bytes),
        static_cast<unsigned long long>(largest), wall, cpu, static_cast<long long>(peak),
        ok ? "true" : "false");
  } else {
    std::printf("%lld ranks' dumps: %.0f MB on disk, the largest %.1f MB (generated in %.1f s)\n",
                static_cast<long long>(ranks), bytes / 1e6, largest / 1e6, generated);
    std::printf(
        "ptprof report DIR: %.2f s wall, %.2f s CPU (goal <= 30 s), peak RSS %.1f MB (one rank's "
        "dump: up to %.1f MB)\n",
        wall, cpu, peak / 1e6, largest / 1e6);
    std::printf("verdict %s\n", ok ? "names the stuck rank: ok" : "WRONG (see the output)");
  }
  return ok ? 0 : 1;
}
