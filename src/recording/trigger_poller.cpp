#include "recording/trigger_poller.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "ptprof/error.h"
#include "trace/clock.h"

namespace ptprof::detail {

namespace {

// Options::trigger_signal: the handler only sets this flag; the next poll() acts on it.
std::atomic<bool> g_signalled{false};
static_assert(std::atomic<bool>::is_always_lock_free);
extern "C" void on_trigger_signal(int) {
  g_signalled.store(true);
}

constexpr std::size_t kMaxTriggerFileBytes = 64 << 10;  // a trigger file is a few lines

// Up to kMaxTriggerFileBytes (and a little more) of `path`; false with errno set on failure.
bool read_small_file(const std::string& path, std::string* out) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || out->size() > kMaxTriggerFileBytes) {
      const int saved = errno;
      ::close(fd);
      errno = saved;
      return n == 0 || out->size() > kMaxTriggerFileBytes;
    }
    out->append(buf, static_cast<std::size_t>(n));
  }
}

}  // namespace

TriggerPoller::TriggerPoller(std::string file, int64_t check_interval_ms, int signal)
    : file_(std::move(file)), check_interval_ns_(check_interval_ms * 1000000), signal_(signal) {
  if (signal_ == 0) return;
  struct sigaction sa {};
  sa.sa_handler = on_trigger_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  g_signalled.store(false);
  if (::sigaction(signal_, &sa, &old_action_) != 0)
    throw Error("ptprof: cannot take signal " + std::to_string(signal_) + ": " +
                std::strerror(errno));
}

TriggerPoller::~TriggerPoller() {
  if (signal_ != 0) ::sigaction(signal_, &old_action_, nullptr);
}

std::optional<TriggerPoller::Request> TriggerPoller::poll(std::vector<Status>* warnings) {
  const bool signalled = signal_ != 0 && g_signalled.exchange(false);
  if (file_.empty() && !signalled) return std::nullopt;
  if (!signalled) {
    const int64_t now = now_ns();
    if (now < next_check_ns_) return std::nullopt;
    next_check_ns_ = now + check_interval_ns_;
  }
  Request r{Trigger{}, signalled ? "signal" : "trigger file"};
  if (file_.empty()) return r;
  struct stat st {};
  if (::stat(file_.c_str(), &st) != 0) {
    seen_ = false;  // a file made again later is a new request
    if (!signalled) return std::nullopt;
    return r;
  }
  const FileKey key{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino),
                    static_cast<int64_t>(st.st_size),
                    static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec};
  if (seen_ && key == key_ && !signalled) return std::nullopt;
  key_ = key;
  seen_ = true;
  std::string text;
  if (!read_small_file(file_, &text)) {
    warnings->emplace_back(StatusCode::kUnavailable, "trigger file " + file_ + " cannot be read: " +
                                                         std::strerror(errno) + "; ignored");
    return std::nullopt;
  }
  auto parsed = parse_trigger(text);
  if (!parsed.ok()) {
    warnings->emplace_back(parsed.status().code(), "trigger file " + file_ + ": " +
                                                       parsed.status().message() + "; ignored");
    return std::nullopt;
  }
  r.trigger = std::move(*parsed);
  // An emptied file asks for nothing.
  if (r.trigger.empty && !r.trigger.dump && !signalled) return std::nullopt;
  return r;
}

}  // namespace ptprof::detail
