// Helpers of the reliability tests: RSS, the state of a trace directory, waiting for the
// background writer, and structural checks of a trace (no torn events, exact nesting).
#pragma once

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "trace/trace_reader.h"
#include "test_util.h"

namespace ptprof::reliability {

// Sanitizer builds: RSS says nothing about ptprof there (ASan keeps freed memory in a
// quarantine, TSan shadows every byte), and everything runs 3-15x slower.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

// `n` in a normal build, a fifth of it (at least 1) in a sanitizer build.
constexpr int scaled(int n) {
  return kSanitized ? (n / 5 > 0 ? n / 5 : 1) : n;
}

// Resident set size of this process, from /proc/self/statm (resident pages * page size).
inline int64_t rss_bytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return -1;
  long size = 0, resident = 0;
  const int n = std::fscanf(f, "%ld %ld", &size, &resident);
  std::fclose(f);
  return n == 2 ? static_cast<int64_t>(resident) * ::sysconf(_SC_PAGESIZE) : -1;
}

constexpr int64_t kMiB = int64_t{1} << 20;

// Names in `dir` (not "." or ".."), split into the visible ones (what a viewer would load)
// and the hidden ones (ptprof's temporaries start with '.').
struct DirListing {
  std::vector<std::string> visible;  // full paths, sorted
  std::vector<std::string> hidden;
};

inline DirListing list_dir(const std::string& dir) {
  DirListing out;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    (name[0] == '.' ? out.hidden : out.visible).push_back(dir + "/" + name);
  }
  ::closedir(d);
  std::sort(out.visible.begin(), out.visible.end());
  std::sort(out.hidden.begin(), out.hidden.end());
  return out;
}

// Every visible file of `dir` read back through the `ptprof` command's reader. A file that
// does not parse is a partial (or corrupt) trace a viewer would choke on: reported in *bad.
inline std::vector<Trace> read_traces(const std::string& dir, std::vector<std::string>* bad) {
  std::vector<Trace> out;
  for (const std::string& path : list_dir(dir).visible) {
    try {
      out.push_back(detail::parse_trace(detail::read_trace_file(path), path));
    } catch (const std::exception& e) {
      bad->push_back(path + ": " + e.what());
    }
  }
  return out;
}

// The step numbers of a trace, from its ProfilerStep#N ranges.
inline std::vector<int64_t> profiler_steps(const Trace& t) {
  std::vector<int64_t> steps;
  for (const Event& e : t.events) {
    const std::string_view prefix = "ProfilerStep#";
    if (e.name.substr(0, prefix.size()) == prefix)
      steps.push_back(std::stoll(std::string(e.name.substr(prefix.size()))));
  }
  std::sort(steps.begin(), steps.end());
  return steps;
}

// A handler that counts the windows handed to it, so a test can wait until the handlers
// before it (they run in order) have finished a given window, whether they run on the
// stepping thread or on ptprof's writer thread.
class WindowCounter {
 public:
  TraceHandlerPtr handler() {
    return callback_handler([this](const Trace&) {
      std::lock_guard<std::mutex> lock(mu_);
      ++count_;
      cv_.notify_all();
    });
  }
  // True once `n` windows went through; false after `timeout` (a writer that hangs).
  bool wait_for(int n, std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return count_ >= n; });
  }
  int count() {
    std::lock_guard<std::mutex> lock(mu_);
    return count_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int count_ = 0;
};

// Structural problems of one trace: events outside the window or with a negative duration
// (torn), CPU events that overlap a sibling or stick out of their parent (nesting broken),
// a parent on another thread. Empty when the trace is sound.
inline std::vector<std::string> structural_problems(const Trace& t) {
  std::vector<std::string> problems;
  auto describe = [&](std::size_t i) {
    const Event& e = t.events[i];
    return std::string(e.name) + " (tid " + std::to_string(e.tid) + ", start " +
           std::to_string(e.start_ns) + ", dur " + std::to_string(e.duration_ns) + ")";
  };
  for (std::size_t i = 0; i < t.events.size(); ++i) {
    const Event& e = t.events[i];
    if (e.duration_ns < 0) problems.push_back("negative duration: " + describe(i));
    if (e.start_ns < t.window_start_ns)
      problems.push_back("starts " + std::to_string(t.window_start_ns - e.start_ns) +
                         " ns before the window: " + describe(i));
    if (e.start_ns + e.duration_ns > t.window_end_ns)
      problems.push_back("ends " + std::to_string(e.start_ns + e.duration_ns - t.window_end_ns) +
                         " ns after the window: " + describe(i));
    if (e.parent >= 0) {
      const Event& p = t.events[e.parent];
      if (p.tid != e.tid) problems.push_back("parent on another thread: " + describe(i));
      if (e.start_ns < p.start_ns || e.start_ns + e.duration_ns > p.start_ns + p.duration_ns)
        problems.push_back("child outside its parent: " + describe(i) + " in " +
                           describe(e.parent));
    }
  }
  // Siblings on a thread never overlap: intervals are either nested or disjoint.
  std::map<std::pair<int64_t, int64_t>, std::vector<std::size_t>> siblings;  // (tid, parent)
  for (std::size_t i = 0; i < t.events.size(); ++i)
    siblings[{t.events[i].tid, t.events[i].parent}].push_back(i);
  for (auto& [key, idx] : siblings) {
    std::sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) {
      return t.events[a].start_ns < t.events[b].start_ns;
    });
    for (std::size_t k = 1; k < idx.size(); ++k) {
      const Event& a = t.events[idx[k - 1]];
      const Event& b = t.events[idx[k]];
      if (b.start_ns < a.start_ns + a.duration_ns)
        problems.push_back("overlapping siblings: " + describe(idx[k - 1]) + " and " +
                           describe(idx[k]));
    }
  }
  return problems;
}

}  // namespace ptprof::reliability
