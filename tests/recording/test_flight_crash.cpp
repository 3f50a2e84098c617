// Crash dumps (src/recording/flight/crash.h), each in a forked child that really crashes: a
// SIGSEGV in a worker thread is dumped (raw rings, read back, ending in the faulting op) and the
// process still dies of SIGSEGV; an uncaught failed TORCH_CHECK is dumped with its message and
// the process dies of SIGABRT, and one of c10d's timed-out collectives is told apart; a handler
// installed before ptprof's still runs after the dump;
// a recorder stopped, or a process killed by SIGKILL, leaves no file behind.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <atomic>
#include <functional>
#include <thread>

#include "ptprof/flight_report.h"
#include "recording/flight/flight_recorder.h"
#include "recording/flight/names.h"
#include "recording/flight/rings.h"
#include "test_support.h"
#include "trace/clock.h"
#include "trace/flight_dump.h"

namespace ptprof {
namespace {

namespace fl = detail::flight;

// Runs `body` in a forked child recording into `dir` (after `before`); the child's wait status.
int in_child(const std::string& dir, const std::function<void()>& body,
             const std::function<void()>& before = {}) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    struct rlimit no_core {0, 0};
    ::setrlimit(RLIMIT_CORE, &no_core);  // the signal is the test's, not a core file
#if defined(__SANITIZE_ADDRESS__)
    // Under ASan the action before ptprof's is ASan's own SIGSEGV handler, which reports and
    // exits with status 1: these tests are about the default action.
    ::signal(SIGSEGV, SIG_DFL);
#endif
    if (before) before();
    FlightRecorderOptions o;
    o.enabled = true;
    o.dir = dir;
    o.events_per_thread = 4096;
    o.max_threads = 8;
    fl::Identity id;
    id.rank = 1;
    id.world_size = 2;
    id.worker = "host_7_rank1";
    fl::FlightRecorder::get().start(o, id);
    body();
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

std::vector<std::string> files_in(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

// A real fault at address 0. The sanitizers' own null checks are off here: UBSan would stop
// the child at the store, before the fault these tests are about. noipa, not noinline: at -O2
// GCC sees the body always traps and deletes the call to it (the child then exits 0).
__attribute__((noipa, no_sanitize_undefined, no_sanitize_address)) void fault_at_null() {
  *static_cast<volatile int*>(nullptr) = 1;
}

// Names for the child's records, in the table the dump carries.
uint32_t name(const char* n) {
  return fl::FlightNames::get().append(n);
}

void open_op(const char* n, uint8_t scope = 0) {
  static std::atomic<uint64_t> correlation{0};
  fl::Rings::get().this_thread(0)->push(name(n), fl::kNoName, -1, scope, 0, ++correlation,
                                        detail::now_ticks());
}

TEST(FlightCrash, ASegfaultInAWorkerThreadIsDumpedAndTheProcessStillDiesOfIt) {
  test::TempDir dir;
  const int status = in_child(dir.path(), [] {
    open_op("train_loop", fl::kUserScope);
    std::thread([] {
      pthread_setname_np(pthread_self(), "worker");
      open_op("worker_task", fl::kUserScope);
      for (int i = 0; i < 50; ++i) {  // its ring has ops before the fault
        open_op("aten::add");
        fl::Rings::get().this_thread(0)->pop(detail::now_ticks());
      }
      open_op("faulting_op");
      fault_at_null();
    }).join();
  });
  ASSERT_TRUE(WIFSIGNALED(status)) << "status " << status;
  EXPECT_EQ(WTERMSIG(status), SIGSEGV);
  const auto files = files_in(dir.path());
  ASSERT_EQ(files.size(), 1u);  // the dump alone: no temporary, no partial file
  const std::string dump = files[0];
  EXPECT_EQ(std::filesystem::path(dump).extension(), ".ptflight");
  EXPECT_EQ(std::filesystem::path(dump).filename().string().rfind("host_7_rank1.", 0), 0u);

  const detail::FlightDump d = detail::read_flight_dump(dump, true);
  EXPECT_EQ(d.header.signal, SIGSEGV);
  EXPECT_EQ(d.header.fault_address, 0u);
  EXPECT_EQ(d.header.rank, 1);
  EXPECT_NE(d.message.find("SIGSEGV at address 0x0"), std::string::npos) << d.message;
  const FlightRank r = flight_rank(dump);
  EXPECT_EQ(r.reason, "crash");
  EXPECT_EQ(r.position(), "faulting_op inside worker_task");
  ASSERT_NE(r.main_thread(), nullptr);
  EXPECT_TRUE(r.main_thread()->crashed);
  EXPECT_EQ(r.main_thread()->name, "worker");
  // Read back as a trace: the worker's last op is the faulting one, open at the crash.
  const Trace t = detail::flight_trace(d);
  const Event* last = nullptr;
  int adds = 0;
  for (const Event& e : t.events) {
    if (e.tid != r.dump_tid) continue;
    adds += e.name == "aten::add";
    if (last == nullptr || e.start_ns >= last->start_ns) last = &e;
  }
  ASSERT_NE(last, nullptr);
  EXPECT_EQ(last->name, "faulting_op");
  EXPECT_FALSE(last->finished);
  EXPECT_EQ(adds, 50);
}

TEST(FlightCrash, AnUncaughtFailedTorchCheckIsDumpedWithItsMessageAndAborts) {
  test::TempDir dir;
  const int status = in_child(dir.path(), [] {
    std::thread([] {
      open_op("checking_shapes", fl::kUserScope);
      TORCH_CHECK(false, "flight test: the shapes differ");
    }).join();
  });
  ASSERT_TRUE(WIFSIGNALED(status)) << "status " << status;
  EXPECT_EQ(WTERMSIG(status), SIGABRT);
  const auto files = files_in(dir.path());
  ASSERT_EQ(files.size(), 1u);
  const FlightRank r = flight_rank(files[0]);
  EXPECT_EQ(r.reason, "terminate");
  EXPECT_EQ(r.signal, SIGABRT);
  EXPECT_NE(r.message.find("uncaught c10::Error"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("flight test: the shapes differ"), std::string::npos) << r.message;
  EXPECT_EQ(r.position(), "checking_shapes");
}

TEST(FlightCrash, AnUncaughtTimedOutCollectiveIsACollectiveTimeout) {
  // What NCCL's watchdog rethrows on its own thread when a collective times out, and what a
  // Gloo rank's wait() throws where nobody catches it.
  test::TempDir dir;
  const int status = in_child(dir.path(), [] {
    std::thread([] {
      open_op("gloo:all_reduce", fl::kUserScope);
      TORCH_CHECK_WITH(DistBackendError, false,
                       "Timed out waiting 2000ms for recv operation to complete");
    }).join();
  });
  ASSERT_TRUE(WIFSIGNALED(status)) << "status " << status;
  EXPECT_EQ(WTERMSIG(status), SIGABRT);
  const auto files = files_in(dir.path());
  ASSERT_EQ(files.size(), 1u);
  const FlightRank r = flight_rank(files[0]);
  EXPECT_EQ(r.reason, "collective_timeout");
  EXPECT_NE(r.message.find("c10::DistBackendError: Timed out waiting"), std::string::npos)
      << r.message;
}

TEST(FlightCrash, AHandlerInstalledBeforeStillRunsAfterTheDump) {
  test::TempDir dir;
  const int status = in_child(
      dir.path(), [] { fault_at_null(); },
      [] {
        struct sigaction sa {};
        sa.sa_handler = [](int) { ::_exit(42); };
        ::sigaction(SIGSEGV, &sa, nullptr);
      });
  ASSERT_TRUE(WIFEXITED(status)) << "status " << status;
  EXPECT_EQ(WEXITSTATUS(status), 42);
  EXPECT_EQ(files_in(dir.path()).size(), 1u);
}

TEST(FlightCrash, NoFileIsLeftByAStoppedRecorderNorBySigkill) {
  test::TempDir stopped;
  int status = in_child(stopped.path(), [] { fl::FlightRecorder::get().stop(); });
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_TRUE(files_in(stopped.path()).empty());

  // SIGKILL: nothing runs, and the file opened in advance for a crash had no name.
  test::TempDir killed;
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    FlightRecorderOptions o;
    o.dir = killed.path();
    fl::Identity id;
    id.worker = "host_8";
    fl::FlightRecorder::get().start(o, id);
    const char c = 'r';
    (void)!::write(ready[1], &c, 1);
    ::pause();
    ::_exit(0);
  }
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ::kill(pid, SIGKILL);
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  const int probe = ::open(killed.path().c_str(), O_TMPFILE | O_RDWR, 0600);
  if (probe >= 0) {
    ::close(probe);
    EXPECT_TRUE(files_in(killed.path()).empty());
  } else {
    // No O_TMPFILE here: the hidden temporary stays, and no dump.
    for (const std::string& f : files_in(killed.path()))
      EXPECT_EQ(std::filesystem::path(f).filename().string()[0], '.') << f;
  }
  ::close(ready[0]);
  ::close(ready[1]);
}

}  // namespace
}  // namespace ptprof
