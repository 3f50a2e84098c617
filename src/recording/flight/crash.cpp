#include "recording/flight/crash.h"

#include <cxxabi.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <exception>

#include "recording/flight/names.h"
#include "recording/flight/rings.h"
#include "trace/clock.h"

namespace ptprof::detail::flight {

namespace {

constexpr int kSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};

// Everything the handler touches is set before it is installed and never freed.
struct sigaction g_old[NSIG];
bool g_ours[NSIG];
std::atomic<bool> g_active{false};
int g_fd = -1;
bool g_tmpfile = false;  // O_TMPFILE (linked into place) rather than a named temporary
pid_t g_pid = 0;         // the process that installed them (a forked child does not dump)
char g_dir[PATH_MAX];
char g_worker[128];
char g_tmp_path[PATH_MAX];
FileHeader g_header;
std::atomic<pid_t> g_owner{0};  // the thread writing the dump
std::terminate_handler g_prev_terminate = nullptr;
char g_message[sizeof(FileHeader::message)];
std::atomic<uint32_t> g_reason{0};  // set by the terminate handler before its abort()

// ---- text without the C library's formatting (none of it is async-signal-safe) ----------

struct Text {
  char* p;
  std::size_t cap;
  std::size_t n = 0;
  Text& str(const char* s) {
    while (*s != '\0' && n + 1 < cap) p[n++] = *s++;
    p[n] = '\0';
    return *this;
  }
  Text& dec(uint64_t v) {
    char d[24];
    int k = 0;
    do {
      d[k++] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v != 0);
    while (k > 0 && n + 1 < cap) p[n++] = d[--k];
    p[n] = '\0';
    return *this;
  }
  Text& hex(uint64_t v) {
    str("0x");
    char d[16];
    int k = 0;
    do {
      d[k++] = "0123456789abcdef"[v & 15];
      v >>= 4;
    } while (v != 0);
    while (k > 0 && n + 1 < cap) p[n++] = d[--k];
    p[n] = '\0';
    return *this;
  }
};

const char* signal_text(int sig) {
  const char* name = fatal_signal_name(sig);
  return name != nullptr ? name : "a fatal signal";
}

bool write_all(int fd, const void* data, std::size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

bool is_fault(int sig) {
  return sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL;
}

void write_dump(int sig, siginfo_t* info, pid_t tid) {
  FileHeader h = g_header;
  const uint32_t reason = g_reason.load(std::memory_order_acquire);
  h.reason = reason != 0 && sig == SIGABRT ? reason : static_cast<uint32_t>(Reason::kCrash);
  h.signal = sig;
  h.signal_code = info != nullptr ? info->si_code : 0;
  h.fault_address =
      info != nullptr && is_fault(sig) ? reinterpret_cast<uint64_t>(info->si_addr) : 0;
  h.dump_tid = tid;
  h.last_step = g_last_step.load(std::memory_order_relaxed);
  h.last_step_ticks = g_last_step_ticks.load(std::memory_order_relaxed);
  stamp_now(&h);
  Text m{h.message, sizeof(h.message)};
  if (h.reason != static_cast<uint32_t>(Reason::kCrash)) {
    m.str(g_message);
  } else {
    m.str(signal_text(sig));
    if (is_fault(sig) && info != nullptr) m.str(" at address ").hex(h.fault_address);
    if (info != nullptr) m.str(" (si_code ").dec(static_cast<uint32_t>(info->si_code)).str(")");
  }
  if (!write_raw_dump(g_fd, &h)) return;
  char path[PATH_MAX + 200];
  Text p{path, sizeof(path)};
  p.str(g_dir).str("/").str(g_worker).str(".").dec(static_cast<uint64_t>(h.dump_unix_ns)).str(
      ".ptflight");
  bool placed;
  if (g_tmpfile) {
    char proc[64];
    Text f{proc, sizeof(proc)};
    f.str("/proc/self/fd/").dec(static_cast<uint32_t>(g_fd));
    placed = ::linkat(AT_FDCWD, proc, AT_FDCWD, path, AT_SYMLINK_FOLLOW) == 0;
  } else {
    placed = ::rename(g_tmp_path, path) == 0;
  }
  char line[PATH_MAX + 300];
  Text l{line, sizeof(line)};
  l.str("[ptprof] flight recorder: ").str(signal_text(sig));
  if (placed)
    l.str(": dump written to ").str(path).str("\n");
  else
    l.str(": the dump could not be put in place (errno ").dec(static_cast<uint32_t>(errno)).str(")\n");
  write_all(STDERR_FILENO, line, l.n);
}

// Hands the signal on: the previous action back, and the signal again. A hardware fault
// comes back by itself when the instruction runs again (and the core shows the real place);
// anything else is raised, delivered once this handler returns.
void chain(int sig, siginfo_t* info) {
  ::sigaction(sig, &g_old[sig], nullptr);
  if (!(is_fault(sig) && info != nullptr && info->si_code > 0)) ::raise(sig);
}

void on_signal(int sig, siginfo_t* info, void*) {
  const int saved_errno = errno;
  const pid_t tid = static_cast<pid_t>(::syscall(SYS_gettid));
  pid_t owner = 0;
  if (g_owner.compare_exchange_strong(owner, tid)) {
    if (g_active.load(std::memory_order_acquire) && ::getpid() == g_pid) write_dump(sig, info, tid);
  } else if (owner != tid) {
    // Another thread is writing the dump: wait for it, then go the way of the signal.
    timespec nap{0, 100 * 1000 * 1000};
    for (int i = 0; i < 50; ++i) ::nanosleep(&nap, nullptr);
  }
  chain(sig, info);
  errno = saved_errno;
}

bool contains_ci(const char* hay, const char* needle) {
  const std::size_t n = std::strlen(needle);
  for (; *hay != '\0'; ++hay)
    if (strncasecmp(hay, needle, n) == 0) return true;
  return false;
}

// An uncaught exception: its type and what() for the dump, then the previous handler (whose
// abort() raises the SIGABRT that writes it).
[[noreturn]] void on_terminate() {
  Text m{g_message, sizeof(g_message)};
  uint32_t reason = static_cast<uint32_t>(Reason::kTerminate);
  if (std::exception_ptr e = std::current_exception()) {
    const std::type_info* type = abi::__cxa_current_exception_type();
    int status = 0;
    char* name = type != nullptr ? abi::__cxa_demangle(type->name(), nullptr, nullptr, &status)
                                 : nullptr;
    m.str("std::terminate: uncaught ").str(name != nullptr ? name : "exception");
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& x) {
      m.str(": ").str(x.what());
      // c10d's errors: NCCL's watchdog rethrows a timed-out collective's on its own thread.
      if (name != nullptr && std::strncmp(name, "c10::Dist", 9) == 0 &&
          (contains_ci(x.what(), "timed out") || contains_ci(x.what(), "timeout")))
        reason = static_cast<uint32_t>(Reason::kCollectiveTimeout);
    } catch (...) {
    }
    std::free(name);
  } else {
    m.str("std::terminate without an exception");
  }
  g_reason.store(reason, std::memory_order_release);
  if (g_prev_terminate != nullptr) g_prev_terminate();
  std::abort();
}

}  // namespace

void stamp_now(FileHeader* h) {
  timespec rt, mono;
  ::clock_gettime(CLOCK_REALTIME, &rt);
  const int64_t ticks = now_ticks();
  ::clock_gettime(CLOCK_MONOTONIC, &mono);
  const int64_t mono_ns = static_cast<int64_t>(mono.tv_sec) * 1000000000 + mono.tv_nsec;
  h->dump_unix_ns = static_cast<int64_t>(rt.tv_sec) * 1000000000 + rt.tv_nsec;
  h->dump_ticks = ticks;
  h->unix_offset_ns = h->dump_unix_ns - mono_ns;
  if (h->ticks_are_tsc != 0) {
    h->tick1 = ticks;
    h->ns1 = mono_ns;
  }
}

bool write_raw_dump(int fd, FileHeader* h) {
  const Rings& rings = Rings::get();
  const FlightNames& names = FlightNames::get();
  const uint32_t n = rings.count();
  const uint32_t names_n = names.count();
  std::memcpy(h->magic, kMagic, sizeof(kMagic));
  h->version = kVersion;
  h->header_bytes = sizeof(FileHeader);
  h->flags |= kHasRings;
  h->n_names = names_n;
  h->name_bytes = names_n == 0 ? 0 : names.ends()[names_n - 1];
  h->n_threads = n;
  h->collective_capacity = CollectiveLog::kCapacity;
  h->ring_capacity = n == 0 ? 0 : rings.at(0)->capacity();
  h->threads_without_ring = rings.threads_without_ring();
  if (!write_all(fd, h, sizeof(*h)) ||
      !write_all(fd, names.ends(), std::size_t{names_n} * sizeof(uint32_t)) ||
      !write_all(fd, names.bytes(), h->name_bytes))
    return false;
  for (uint32_t i = 0; i < n; ++i) {
    ThreadHeader th;
    rings.at(i)->header(&th);
    if (!write_all(fd, &th, sizeof(th)) ||
        !write_all(fd, rings.at(i)->stack(), std::size_t{th.stack_entries} * sizeof(Record)))
      return false;
  }
  if (!write_all(fd, rings.collectives().slots(), CollectiveLog::kCapacity * sizeof(Record)))
    return false;
  for (uint32_t i = 0; i < n; ++i)
    if (!write_all(fd, rings.at(i)->ring(), std::size_t{h->ring_capacity} * sizeof(Record)))
      return false;
  return true;
}

std::string install_crash_handlers(const CrashSetup& setup) {
  if (g_active.load()) uninstall_crash_handlers();
  if (setup.dir.size() + setup.worker.size() + 64 >= sizeof(g_dir) ||
      setup.worker.size() >= sizeof(g_worker))
    return "the dump directory's path is too long: " + setup.dir;
  std::memcpy(g_dir, setup.dir.c_str(), setup.dir.size() + 1);
  std::memcpy(g_worker, setup.worker.c_str(), setup.worker.size() + 1);
  g_tmp_path[0] = '\0';
  g_fd = ::open(setup.dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0644);
  g_tmpfile = g_fd >= 0;
  if (g_fd < 0) {
    const std::string tmp =
        setup.dir + "/." + setup.worker + "." + std::to_string(::getpid()) + ".ptflight.tmp";
    std::memcpy(g_tmp_path, tmp.c_str(), tmp.size() + 1);
    g_fd = ::open(g_tmp_path, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0644);
    if (g_fd < 0)
      return "cannot open a file for crash dumps in " + setup.dir + ": " + std::strerror(errno);
  }
  g_header = setup.header;
  g_pid = ::getpid();
  g_owner.store(0);
  g_reason.store(0);
  g_message[0] = '\0';
  for (int sig : kSignals) {
    struct sigaction sa {};
    sa.sa_sigaction = &on_signal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    g_ours[sig] = ::sigaction(sig, &sa, &g_old[sig]) == 0;
  }
  g_prev_terminate = std::set_terminate(&on_terminate);
  g_active.store(true, std::memory_order_release);
  return "";
}

void forget_crash_handlers_after_fork() {
  g_tmp_path[0] = '\0';  // the parent's, not to be removed
  uninstall_crash_handlers();
}

void uninstall_crash_handlers() {
  if (!g_active.exchange(false)) return;
  for (int sig : kSignals) {
    if (!g_ours[sig]) continue;
    struct sigaction now {};
    // Only where ours is still the handler: one installed over it may chain to it, and then
    // finds it inert (g_active) and chains on.
    if (::sigaction(sig, nullptr, &now) == 0 && now.sa_sigaction == &on_signal)
      ::sigaction(sig, &g_old[sig], nullptr);
    g_ours[sig] = false;
  }
  if (std::get_terminate() == &on_terminate) std::set_terminate(g_prev_terminate);
  if (g_fd >= 0) ::close(g_fd);
  g_fd = -1;
  if (g_tmp_path[0] != '\0') ::unlink(g_tmp_path);
  g_tmp_path[0] = '\0';
}

}  // namespace ptprof::detail::flight
