// Faults: what the file system, handlers, exceptions, threads and process exit can do to a
// profiled run. In each: training goes on (its ops still run and compute), the failure is
// reported with the path and the reason, and no partial trace is visible in the directory.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <ftw.h>
#include <spawn.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <set>
#include <thread>

#include "reliability_util.h"

extern char** environ;

namespace ptprof {
namespace {

using reliability::DirListing;
using reliability::list_dir;
using reliability::WindowCounter;

// A training step the tests can check: the value of x tells whether every add ran.
struct Work {
  torch::Tensor x = torch::zeros({4});
  torch::Tensor one = torch::ones({4});
  int64_t done = 0;
  void step() {
    x.add_(one);
    ++done;
  }
  bool all_ran() const { return x[0].item<float>() == static_cast<float>(done); }
};

int remove_entry(const char* path, const struct stat*, int, struct FTW*) {
  return ::remove(path);
}
// rm -rf (std::filesystem::remove_all is unusable next to libtorch: see tests/support/test_support.cpp).
void remove_tree(const std::string& path) {
  ::nftw(path.c_str(), remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// Every visible file parses; returns how many there are. Hidden leftovers fail the test.
std::size_t expect_only_complete_traces(const std::string& dir) {
  std::vector<std::string> bad;
  const auto traces = reliability::read_traces(dir, &bad);
  for (const std::string& b : bad) ADD_FAILURE() << "partial or corrupt trace visible: " << b;
  const DirListing l = list_dir(dir);
  for (const std::string& h : l.hidden) ADD_FAILURE() << "temporary left behind: " << h;
  return traces.size();
}

// One saved window per step, written to `dir` by tensorboard_trace_handler; `counter` sees
// each window after the file handler is done with it.
Options one_window_per_step(const std::string& dir, WindowCounter* counter) {
  Options o;
  o.schedule = Schedule{/*wait=*/0, /*warmup=*/0, /*active=*/1, /*repeat=*/0};
  o.on_trace_ready = {tensorboard_trace_handler(dir, "fault"), counter->handler()};
  return o;
}

// Runs three phases of kPhase steps: healthy, after `inject()`, after `repair()`. Each phase
// waits until its windows went through the handlers, so which writes met the fault is exact
// whether handlers run in the background or not. Returns the session's final status.
constexpr int kPhase = 3;
Status run_with_fault(const std::string& dir, const std::function<void()>& inject,
                      const std::function<void()>& repair, Work* work) {
  WindowCounter counter;
  ProfileSession s(one_window_per_step(dir, &counter));
  for (int phase = 0; phase < 3; ++phase) {
    if (phase == 1) inject();
    if (phase == 2) repair();
    for (int i = 0; i < kPhase; ++i) {
      work->step();
      s.step();
    }
    EXPECT_TRUE(counter.wait_for((phase + 1) * kPhase)) << "writer stalled in phase " << phase;
  }
  return s.stop();  // also saves the window of the last step()
}

// The errors of the faulty phase: one per window, each naming a file under `dir` and `reason`.
void expect_write_errors(const Status& st, const std::string& dir, const std::string& reason) {
  EXPECT_EQ(st.errors.size(), static_cast<std::size_t>(kPhase)) << st.message();
  for (const std::string& e : st.errors) {
    EXPECT_TRUE(contains(e, dir)) << "error does not name the path: " << e;
    EXPECT_TRUE(contains(e, reason)) << "error does not give the reason (" << reason << "): " << e;
  }
}

TEST(Faults, LogDirectoryRemovedMidRunIsRecreated) {
  test::TempDir root;
  const std::string dir = root.path() + "/run";
  Work work;
  const Status st = run_with_fault(
      dir, [&] { remove_tree(dir); }, [] {}, &work);
  EXPECT_TRUE(work.all_ran());
  // tensorboard_trace_handler makes its directory before each write, as torch.profiler's does.
  EXPECT_TRUE(st.ok()) << st.message();
  // The healthy phase's files went with the directory; the rest are there, complete.
  EXPECT_EQ(expect_only_complete_traces(dir), static_cast<std::size_t>(2 * kPhase + 1));
}

TEST(Faults, LogDirectoryReplacedByAFileIsReportedAndWritingResumes) {
  test::TempDir root;
  const std::string dir = root.path() + "/run";
  Work work;
  const Status st = run_with_fault(
      dir,
      [&] {
        remove_tree(dir);
        const int fd = ::open(dir.c_str(), O_CREAT | O_WRONLY, 0644);
        ASSERT_GE(fd, 0);
        ::close(fd);
      },
      [&] {
        ::unlink(dir.c_str());
        ::mkdir(dir.c_str(), 0755);
      },
      &work);
  EXPECT_TRUE(work.all_ran());
  expect_write_errors(st, dir, "not a directory");
  EXPECT_EQ(expect_only_complete_traces(dir), static_cast<std::size_t>(kPhase + 1));
}

// Makes `dir` read-only mid-run. Root ignores permission bits, so for root the directory is
// bind-mounted read-only onto itself (EROFS); others get chmod 0555 (EACCES).
class ReadOnly {
 public:
  explicit ReadOnly(std::string dir) : dir_(std::move(dir)) {}
  ~ReadOnly() { undo(); }
  // The reason the writes will fail with, or "" if no technique works here.
  std::string probe() {
    if (::geteuid() != 0) return std::strerror(EACCES);
    if (!do_mount()) return "";
    ::umount2(dir_.c_str(), MNT_DETACH);
    mounted_ = false;
    return std::strerror(EROFS);
  }
  void apply() {
    if (::geteuid() != 0) {
      ::chmod(dir_.c_str(), 0555);
    } else {
      EXPECT_TRUE(do_mount()) << std::strerror(errno);
    }
  }
  void undo() {
    if (mounted_) ::umount2(dir_.c_str(), MNT_DETACH);
    mounted_ = false;
    ::chmod(dir_.c_str(), 0755);
  }

 private:
  bool do_mount() {
    if (::mount(dir_.c_str(), dir_.c_str(), nullptr, MS_BIND, nullptr) != 0) return false;
    mounted_ = true;
    return ::mount(nullptr, dir_.c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY, nullptr) == 0;
  }
  std::string dir_;
  bool mounted_ = false;
};

TEST(Faults, LogDirectoryMadeReadOnlyIsReportedAndWritingResumes) {
  test::TempDir dir;
  ReadOnly ro(dir.path());
  const std::string reason = ro.probe();
  if (reason.empty())
    GTEST_SKIP() << "running as root (permission bits are ignored) and bind mounts are not "
                    "permitted here: no way to make a directory read-only";
  Work work;
  const Status st = run_with_fault(
      dir.path(), [&] { ro.apply(); }, [&] { ro.undo(); }, &work);
  EXPECT_TRUE(work.all_ran());
  expect_write_errors(st, dir.path(), reason);
  EXPECT_EQ(expect_only_complete_traces(dir.path()), static_cast<std::size_t>(2 * kPhase + 1));
}

// A small tmpfs mounted by the test; unmounted (lazily) on destruction.
class Tmpfs {
 public:
  explicit Tmpfs(std::string dir) : dir_(std::move(dir)) {
    ok_ = ::mount("tmpfs", dir_.c_str(), "tmpfs", 0, "size=256k") == 0;
  }
  ~Tmpfs() {
    if (ok_) ::umount2(dir_.c_str(), MNT_DETACH);
  }
  bool ok() const { return ok_; }

 private:
  std::string dir_;
  bool ok_ = false;
};

TEST(Faults, FullDiskIsReportedLeavesNoPartialFileAndWritingResumes) {
  test::TempDir dir;
  Tmpfs fs(dir.path());
  if (!fs.ok()) GTEST_SKIP() << "cannot mount a tmpfs here: " << std::strerror(errno);
  // A file named like a temporary, so it is not mistaken for a trace, that takes all space.
  const std::string filler = dir.path() + "/.filler";
  Work work;
  const Status st = run_with_fault(
      dir.path(),
      [&] {
        const int fd = ::open(filler.c_str(), O_CREAT | O_WRONLY, 0644);
        ASSERT_GE(fd, 0);
        std::vector<char> block(4096, 'f');
        while (::write(fd, block.data(), block.size()) > 0) {
        }
        EXPECT_EQ(errno, ENOSPC);
        ::close(fd);
      },
      [&] { ::unlink(filler.c_str()); }, &work);
  EXPECT_TRUE(work.all_ran());
  expect_write_errors(st, dir.path(), std::strerror(ENOSPC));
  EXPECT_EQ(expect_only_complete_traces(dir.path()), static_cast<std::size_t>(2 * kPhase + 1));
}

TEST(Faults, ThrowingHandlersAreReportedAndTheOthersStillRun) {
  test::TempDir dir;
  WindowCounter counter;
  Options o;
  o.schedule = Schedule{/*wait=*/0, /*warmup=*/0, /*active=*/1, /*repeat=*/0};
  o.on_trace_ready = {callback_handler([](const Trace&) {
                        throw std::runtime_error("handler exploded on purpose");
                      }),
                      callback_handler([](const Trace&) { throw 42; }),
                      tensorboard_trace_handler(dir.path(), "w"), counter.handler()};
  Work work;
  Status st;
  {
    ProfileSession s(o);
    for (int i = 0; i < 3; ++i) {
      work.step();
      s.step();
    }
    st = s.stop();
  }
  EXPECT_TRUE(work.all_ran());
  EXPECT_EQ(counter.count(), 4);  // 3 windows + the one stop() saves
  ASSERT_EQ(st.errors.size(), 8u) << st.message();
  int first = 0, second = 0;
  for (const std::string& e : st.errors) {
    first += contains(e, "trace handler 0") && contains(e, "handler exploded on purpose");
    second += contains(e, "trace handler 1") && contains(e, "unknown exception");
  }
  EXPECT_EQ(first, 4) << st.message();
  EXPECT_EQ(second, 4) << st.message();
  EXPECT_EQ(expect_only_complete_traces(dir.path()), 4u);
}

TEST(Faults, ExceptionUnwindingThroughSessionAndRangeSavesAValidTrace) {
  test::TempDir dir;
  std::vector<std::shared_ptr<Trace>> traces;
  Options o;
  o.schedule = Schedule{/*wait=*/0, /*warmup=*/0, /*active=*/3, /*repeat=*/0};
  o.on_trace_ready = {
      tensorboard_trace_handler(dir.path(), "w"),
      callback_handler([&](const Trace& t) { traces.push_back(std::make_shared<Trace>(t)); })};
  Work work;
  bool caught = false;
  try {
    ProfileSession s(o);
    work.step();
    s.step();
    Range outer("outer");
    work.step();
    {
      Range inner("inner");
      work.step();
      throw std::runtime_error("training failed");
    }
  } catch (const std::runtime_error&) {
    caught = true;
  }
  ASSERT_TRUE(caught);
  EXPECT_TRUE(work.all_ran());
  // The destructor ran during unwinding (after the ranges': they were declared later) and
  // saved the window in progress, steps 0 and 1.
  ASSERT_EQ(traces.size(), 1u);
  const Trace& t = *traces[0];
  EXPECT_EQ(t.steps, (std::vector<int64_t>{0, 1}));
  for (const std::string& p : reliability::structural_problems(t)) ADD_FAILURE() << p;
  const Event* inner = nullptr;
  const Event* outer = nullptr;
  for (const Event& e : t.events) {
    if (e.name == "inner") inner = &e;
    if (e.name == "outer") outer = &e;
  }
  ASSERT_TRUE(inner && outer);
  EXPECT_TRUE(inner->finished);
  EXPECT_TRUE(outer->finished);
  ASSERT_GE(inner->parent, 0);
  EXPECT_EQ(&t.events[inner->parent], outer);
  EXPECT_EQ(test::count_events(t, "aten::add_"), 3);
  EXPECT_EQ(expect_only_complete_traces(dir.path()), 1u);
  // The process can profile again: the unwound session released the one-per-process slot.
  EXPECT_NO_THROW(ProfileSession{});
}

TEST(Faults, OpThatThrowsInsideARangeLeavesExactNestingAndTheRunGoesOn) {
  std::vector<std::shared_ptr<Trace>> traces;
  Options o;
  o.schedule = Schedule{/*wait=*/0, /*warmup=*/0, /*active=*/3, /*repeat=*/1};
  o.on_trace_ready = {
      callback_handler([&](const Trace& t) { traces.push_back(std::make_shared<Trace>(t)); })};
  Work work;
  const auto mismatched = torch::ones({3});
  int caught = 0;
  Status st;
  {
    ProfileSession s(o);
    for (int step = 0; step < 3; ++step) {
      try {
        Range r("risky");
        work.step();
        if (step == 1) work.x.add_(mismatched);  // c10::Error from inside the op
      } catch (const c10::Error&) {
        ++caught;
      }
      s.step();
    }
    st = s.stop();
  }
  EXPECT_EQ(caught, 1);
  EXPECT_TRUE(work.all_ran());
  EXPECT_TRUE(st.ok()) << st.message();
  ASSERT_EQ(traces.size(), 1u);
  const Trace& t = *traces[0];
  for (const std::string& p : reliability::structural_problems(t)) ADD_FAILURE() << p;
  std::vector<int> adds_per_range;
  for (std::size_t i = 0; i < t.events.size(); ++i) {
    if (t.events[i].name != "risky") continue;
    EXPECT_TRUE(t.events[i].finished);
    int n = 0;
    for (const Event& e : t.events) {
      if (e.name == "aten::add_" && e.parent == static_cast<int64_t>(i)) {
        ++n;
        EXPECT_TRUE(e.finished);
      }
    }
    adds_per_range.push_back(n);
  }
  // The op that threw is recorded too, ended by its RecordFunction's unwinding.
  std::sort(adds_per_range.begin(), adds_per_range.end());
  EXPECT_EQ(adds_per_range, (std::vector<int>{1, 1, 2}));
}

TEST(Faults, StepFromTwoThreadsConcurrently) {
  // Free-running: two threads step as fast as they can while a third runs ops.
  constexpr int kPerThread = 300;
  test::TempDir dir;
  WindowCounter counter;
  std::atomic<bool> done{false};
  Work work;
  Status st;
  int64_t steps = 0;
  {
    ProfileSession s(one_window_per_step(dir.path(), &counter));
    std::thread ops([&] {
      while (!done) work.step();
    });
    std::thread a([&] {
      for (int i = 0; i < kPerThread; ++i) s.step();
    });
    std::thread b([&] {
      for (int i = 0; i < kPerThread; ++i) s.step();
    });
    a.join();
    b.join();
    done = true;
    ops.join();
    steps = s.step_num();
    st = s.stop();
  }
  EXPECT_TRUE(work.all_ran());
  EXPECT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(steps, 2 * kPerThread);
  EXPECT_EQ(counter.count(), 2 * kPerThread + 1);
  std::vector<std::string> bad;
  const auto traces = reliability::read_traces(dir.path(), &bad);
  EXPECT_TRUE(bad.empty()) << bad.front();
  ASSERT_EQ(traces.size(), static_cast<std::size_t>(2 * kPerThread + 1));
  // Each step is in exactly one window.
  std::multiset<int64_t> seen;
  for (const Trace& t : traces)
    for (int64_t n : reliability::profiler_steps(t)) seen.insert(n);
  EXPECT_EQ(seen.size(), static_cast<std::size_t>(2 * kPerThread + 1));
  EXPECT_EQ(std::set<int64_t>(seen.begin(), seen.end()).size(), seen.size());
}

TEST(Faults, StepAlternatingBetweenTwoThreadsKeepsRecordingTheirOps) {
  // Strict alternation: each step's ProfilerStep range is begun on one thread and ended on the
  // other, every step, for longer than any per-thread bound on open ranges. Each window holds
  // the stepping thread's one add, whichever thread it is.
  constexpr int kPerThread = 1100;
  std::mutex mu;
  std::condition_variable cv;
  int turn = 0;
  std::vector<std::pair<int64_t, uint64_t>> per_window;  // (adds, dropped)
  Options o;
  o.schedule = Schedule{/*wait=*/0, /*warmup=*/0, /*active=*/1, /*repeat=*/0};
  o.on_trace_ready = {callback_handler([&](const Trace& t) {
    per_window.emplace_back(test::count_events(t, "aten::add_"), t.dropped_events);
  })};
  Status st;
  {
    ProfileSession s(o);
    auto stepper = [&](int me) {
      Work work;
      for (int i = 0; i < kPerThread; ++i) {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return turn % 2 == me; });
        work.step();
        s.step();
        ++turn;
        cv.notify_all();
      }
      EXPECT_TRUE(work.all_ran());
    };
    std::thread a(stepper, 0), b(stepper, 1);
    a.join();
    b.join();
    st = s.stop();
  }
  EXPECT_TRUE(st.ok()) << st.message();
  ASSERT_EQ(per_window.size(), static_cast<std::size_t>(2 * kPerThread + 1));
  int lost = 0, first_lost = -1;
  for (int w = 0; w < 2 * kPerThread; ++w) {
    if (per_window[w].first != 1 || per_window[w].second != 0) {
      if (first_lost < 0) first_lost = w;
      ++lost;
    }
  }
  EXPECT_EQ(lost, 0) << "windows without their add (or with drops), the first is window "
                     << first_lost;
}

TEST(Faults, SessionDestroyedOnAnotherThreadThanItWasCreatedOn) {
  test::TempDir dir;
  WindowCounter counter;
  Options o;
  o.schedule = Schedule{/*wait=*/0, /*warmup=*/0, /*active=*/2, /*repeat=*/0};
  o.on_trace_ready = {tensorboard_trace_handler(dir.path(), "w"), counter.handler()};
  o.profile_memory = true;  // also leaves c10's memory-reporting slot of this thread behind
  Work work;
  auto s = std::make_unique<ProfileSession>(o);
  for (int i = 0; i < 3; ++i) {
    work.step();
    s->step();
  }
  work.step();  // in the window of step 3, still open
  std::thread([s = std::move(s)]() mutable { s.reset(); }).join();
  EXPECT_EQ(counter.count(), 2);  // steps {0, 1} at step(), {2, 3} by the destructor
  std::vector<std::string> bad;
  const auto traces = reliability::read_traces(dir.path(), &bad);
  EXPECT_TRUE(bad.empty());
  ASSERT_EQ(traces.size(), 2u);
  int adds = 0;
  for (const Trace& t : traces) adds += test::count_events(t, "aten::add_");
  EXPECT_EQ(adds, 4);
  EXPECT_TRUE(work.all_ran());

  // A new session on this thread records this thread's ops, memory included.
  std::vector<std::shared_ptr<Trace>> again;
  Options o2;
  o2.profile_memory = true;
  o2.on_trace_ready = {
      callback_handler([&](const Trace& t) { again.push_back(std::make_shared<Trace>(t)); })};
  {
    ProfileSession s2(o2);
    work.step();
    auto y = torch::ones({64}) * 2;  // allocates
    work.step();
  }
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(test::count_events(*again[0], "aten::add_"), 2);
  EXPECT_FALSE(again[0]->memory_events.empty());
}

// ---- process exit with a session active -----------------------------------------------------

// Runs the helper binary in `mode` writing into `dir`; returns its wait status.
int run_helper(const std::string& mode, const std::string& dir) {
  const std::string helper = PTPROF_EXIT_HELPER;
  std::vector<std::string> args{helper, mode, dir};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (::posix_spawn(&pid, helper.c_str(), nullptr, nullptr, argv.data(), environ) != 0) return -1;
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

// The steps held by the traces in `dir`, per file (all of them must parse).
std::vector<std::vector<int64_t>> windows_in(const std::string& dir) {
  std::vector<std::string> bad;
  const auto traces = reliability::read_traces(dir, &bad);
  for (const std::string& b : bad) ADD_FAILURE() << "partial or corrupt trace visible: " << b;
  std::vector<std::vector<int64_t>> out;
  for (const Trace& t : traces) out.push_back(reliability::profiler_steps(t));
  std::sort(out.begin(), out.end());
  return out;
}

void expect_clean_exit(int status) {
  ASSERT_TRUE(WIFEXITED(status)) << "helper died: "
                                 << (WIFSIGNALED(status) ? strsignal(WTERMSIG(status)) : "?");
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

using Windows = std::vector<std::vector<int64_t>>;

TEST(Faults, ProcessExitMidWindowLeavesOnlyCompleteTraces) {
  // Windows {0,1} and {2,3} closed (the second may still be being written), step 4's window
  // open when the process calls exit(0).
  test::TempDir dir;
  expect_clean_exit(run_helper("exit-mid-window", dir.path()));
  const Windows w = windows_in(dir.path());
  EXPECT_TRUE(w == (Windows{{0, 1}}) || w == (Windows{{0, 1}, {2, 3}})) << w.size() << " files";
  EXPECT_TRUE(list_dir(dir.path()).hidden.empty()) << list_dir(dir.path()).hidden.front();
}

TEST(Faults, ProcessExitWhileALargeTraceIsBeingWrittenLeavesNoPartialFile) {
  // exit(0) right after the step() that hands a window of 300k events to the writer.
  test::TempDir dir;
  expect_clean_exit(run_helper("exit-while-writing", dir.path()));
  const Windows w = windows_in(dir.path());
  EXPECT_TRUE(w.empty() || w == (Windows{{0}})) << w.size() << " files";
  const DirListing l = list_dir(dir.path());
  EXPECT_TRUE(l.hidden.empty()) << "temporary left behind: " << l.hidden.front();
  std::printf("[exit] the in-flight trace was %s\n", w.empty() ? "cleanly absent" : "written");
}

TEST(Faults, SessionDestroyedDuringStaticDestructionSavesItsWindows) {
  // A session owned by a static object: main returns while window {0,1} is being written and
  // with step 2's window open. The session stops during static destruction and waits for its
  // writes, so {0,1} must be there; {2} is written then too (or cleanly absent).
  test::TempDir dir;
  expect_clean_exit(run_helper("static-session", dir.path()));
  const Windows w = windows_in(dir.path());
  EXPECT_TRUE(w == (Windows{{0, 1}}) || w == (Windows{{0, 1}, {2}}))
      << w.size() << " files"
      << (w.size() == 1 && w[0] == std::vector<int64_t>{2} ? ": window {0,1} was lost" : "");
  EXPECT_TRUE(list_dir(dir.path()).hidden.empty());
  std::printf("[exit] the static session's last window was %s\n",
              w.size() == 2 ? "written" : "cleanly absent");
}

}  // namespace
}  // namespace ptprof
