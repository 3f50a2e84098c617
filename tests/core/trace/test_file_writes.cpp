// write_file_atomically, which every file ptprof writes goes through (traces, stacks, memory
// timelines): a close() that fails is not followed by a second close() of the descriptor,
// concurrent writes of one path use distinct temporary files, and the file and its directory
// entry are synced before the call returns.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <limits.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "trace/chrome_trace.h"
#include "ptprof/error.h"
#include "ptprof/trace.h"
#include "test_support.h"

// ---- close, fsync, fdatasync and rename seen from inside the process --------------------------
// Defined in the executable, these take precedence over libc's for the ptprof library linked
// into it; each forwards to the next definition (libc's, or a sanitizer's interceptor). Only
// calls on files under the watched directory are logged.
namespace {

std::atomic<bool> g_watching{false};
std::mutex g_log_mu;
std::string g_dir;               // under g_log_mu: the watched directory
std::vector<std::string> g_log;  // "fsync PATH", "rename FROM TO", "close PATH"
std::atomic<bool> g_fail_next_close{false};
std::atomic<int> g_failed_fd{-1};  // closed by a failing close(); a later close of it is a bug
std::atomic<int> g_closed_again{0};

template <typename Fn>
Fn next_definition(const char* name) {
  return reinterpret_cast<Fn>(::dlsym(RTLD_NEXT, name));
}

std::string fd_path(int fd) {
  char buf[PATH_MAX];
  const std::string link = "/proc/self/fd/" + std::to_string(fd);
  const ssize_t n = ::readlink(link.c_str(), buf, sizeof buf);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

bool watched(const std::string& path) {
  if (!g_watching.load()) return false;
  std::lock_guard<std::mutex> lock(g_log_mu);
  return !g_dir.empty() && path.compare(0, g_dir.size(), g_dir) == 0;
}

void log(const std::string& entry) {
  std::lock_guard<std::mutex> lock(g_log_mu);
  g_log.push_back(entry);
}

// Watches a directory for the scope of a test.
class Watch {
 public:
  explicit Watch(const std::string& dir) {
    {
      std::lock_guard<std::mutex> lock(g_log_mu);
      g_dir = dir;
      g_log.clear();
    }
    g_failed_fd = -1;
    g_closed_again = 0;
    g_watching = true;
  }
  ~Watch() {
    g_watching = false;
    g_fail_next_close = false;
  }
  std::vector<std::string> log() const {
    std::lock_guard<std::mutex> lock(g_log_mu);
    return g_log;
  }
};

}  // namespace

extern "C" int close(int fd) {
  static const auto next = next_definition<int (*)(int)>("close");
  if (!g_watching.load()) return next(fd);
  if (fd >= 0 && fd == g_failed_fd.load()) ++g_closed_again;
  const std::string path = fd_path(fd);
  if (!watched(path)) return next(fd);
  log("close " + path);
  if (g_fail_next_close.exchange(false)) {
    // As Linux does on EIO from a filesystem: the descriptor is released all the same.
    next(fd);
    g_failed_fd = fd;
    errno = EIO;
    return -1;
  }
  return next(fd);
}

extern "C" int fsync(int fd) {
  static const auto next = next_definition<int (*)(int)>("fsync");
  const std::string path = g_watching.load() ? fd_path(fd) : std::string();
  if (watched(path)) log("fsync " + path);
  return next(fd);
}

extern "C" int fdatasync(int fd) {
  static const auto next = next_definition<int (*)(int)>("fdatasync");
  const std::string path = g_watching.load() ? fd_path(fd) : std::string();
  if (watched(path)) log("fsync " + path);
  return next(fd);
}

extern "C" int rename(const char* from, const char* to) {
  static const auto next = next_definition<int (*)(const char*, const char*)>("rename");
  if (watched(from)) log(std::string("rename ") + from + " " + to);
  return next(from, to);
}

namespace ptprof {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

Trace small_trace() {
  Trace t;
  t.process_name = "p";
  for (int i = 0; i < 100; ++i) {
    Event e;
    e.name = t.intern("op" + std::to_string(i));
    e.duration_ns = 1000;
    t.events.push_back(e);
  }
  return t;
}

TEST(FileWrites, FailingCloseIsReportedAndNotFollowedByASecondClose) {
  test::TempDir dir;
  const std::string path = dir.path() + "/t.pt.trace.json";
  const Trace t = small_trace();
  for (const std::string& target : {path, path + ".gz"}) {
    std::string err;
    {
      Watch watch(dir.path());
      g_fail_next_close = true;
      try {
        t.save(target);
      } catch (const Error& e) {
        err = e.what();
      }
      EXPECT_FALSE(g_fail_next_close.load()) << "the temporary file was never closed";
      EXPECT_EQ(g_closed_again.load(), 0)
          << "descriptor " << g_failed_fd.load() << " closed again after its close() failed";
    }
    EXPECT_NE(err.find(target), std::string::npos) << err;
    EXPECT_NE(err.find("Input/output error"), std::string::npos) << err;
    EXPECT_TRUE(dir.files().empty()) << dir.files()[0];  // no trace, no temporary
  }
}

TEST(FileWrites, FileAndDirectoryAreSyncedAroundTheRename) {
  test::TempDir dir;
  const std::string path = dir.path() + "/t.pt.trace.json";
  std::vector<std::string> log;
  {
    Watch watch(dir.path());
    small_trace().save(path);
    log = watch.log();
  }
  std::string all;
  for (const std::string& l : log) all += l + "\n";
  // fsync of the temporary file, its rename onto the path, then fsync of the directory.
  std::size_t rename_at = log.size(), file_sync = log.size(), dir_sync = log.size();
  std::string tmp;
  for (std::size_t i = 0; i < log.size(); ++i) {
    if (log[i].rfind("rename ", 0) == 0 && log[i].size() > path.size() &&
        log[i].compare(log[i].size() - path.size() - 1, std::string::npos, " " + path) == 0) {
      rename_at = i;
      tmp = log[i].substr(7, log[i].size() - 7 - path.size() - 1);
    }
  }
  ASSERT_LT(rename_at, log.size()) << all;
  for (std::size_t i = 0; i < log.size(); ++i) {
    if (log[i] == "fsync " + tmp && i < rename_at) file_sync = i;
    if (log[i] == "fsync " + dir.path() && i > rename_at) dir_sync = i;
  }
  EXPECT_LT(file_sync, rename_at) << "the temporary file is not synced before the rename\n" << all;
  EXPECT_LT(dir_sync, log.size()) << "the directory is not synced after the rename\n" << all;
  EXPECT_EQ(test::read_json_file(path)["traceEvents"].size(), 100u + 7u);
}

// Two writes of one path at the same time (two threads, two handlers): each its own temporary
// file, both succeed, and the path ends up holding one of them whole.
TEST(FileWrites, ConcurrentWritesOfOnePathUseDistinctTemporaryFiles) {
  test::TempDir dir;
  const std::string path = dir.path() + "/same.json";
  std::mutex mu;
  std::condition_variable cv;
  int inside = 0;
  auto writer = [&](char fill, std::size_t size, std::string* err) {
    try {
      detail::write_file_atomically(path, [&](detail::Sink& sink) {
        {
          // Both temporary files exist before either is written.
          std::unique_lock<std::mutex> lock(mu);
          ++inside;
          cv.notify_all();
          cv.wait_for(lock, std::chrono::seconds(5), [&] { return inside == 2; });
        }
        const std::string block(4096, fill);
        for (std::size_t n = 0; n < size; n += block.size()) sink.write(block.data(), block.size());
      });
    } catch (const Error& e) {
      *err = e.what();
    }
  };
  std::string err_a, err_b;
  std::thread a(writer, 'a', 1 << 20, &err_a), b(writer, 'b', 1 << 19, &err_b);
  a.join();
  b.join();
  EXPECT_EQ(err_a, "");
  EXPECT_EQ(err_b, "");
  const std::string got = read_file(path);
  EXPECT_TRUE(got == std::string(1 << 20, 'a') || got == std::string(1 << 19, 'b'))
      << got.size() << " bytes, " << std::count(got.begin(), got.end(), 'a') << " of them 'a'";
  ASSERT_EQ(dir.files().size(), 1u) << "temporary files left: " << dir.files()[0];

  // Many at once, through Trace::save.
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  const Trace t = small_trace();
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&] {
      for (int k = 0; k < 20; ++k) {
        try {
          t.save(path);
        } catch (const Error&) {
          ++failures;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(test::read_json_file(path)["traceEvents"].size(), 100u + 7u);
  EXPECT_EQ(dir.files().size(), 1u);
}

}  // namespace
}  // namespace ptprof
