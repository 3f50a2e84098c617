// The GpuBackend seam's test fixture: a CUPTI backend over the fake CUPTI, the trace a window
// appends to, and the CPU ops the session would have put there first.
#pragma once

#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "cupti_test_util.h"
#include "gpu/cupti_backend.h"

namespace ptprof::test {

constexpr int64_t kBackendUnixOffset = 1700000000000000000;

inline int64_t os_tid() {
  return static_cast<int64_t>(::syscall(SYS_gettid));
}

class BackendFixture : public ::testing::Test {
 protected:
  void make() { backend_ = detail::make_cupti_backend(options_, api_); }
  void enable() {
    make();
    const detail::Status st = backend_->enable();
    ASSERT_TRUE(st.ok()) << st.message();
  }
  // A CPU op of this thread, as the session puts it into the trace (times: monotonic ns).
  void cpu_op(const char* name, uint64_t id, int64_t start, int64_t end,
              EventKind kind = EventKind::CpuOp) {
    trace_.events.push_back(cpu_event(trace_, name, id, ::getpid(), os_tid(),
                                      start + kBackendUnixOffset, end - start, kind));
  }
  void end_window(int64_t start, int64_t end) {
    backend_->end_window(start, end, kBackendUnixOffset, trace_, &warnings_);
  }
  std::vector<const Event*> all(EventKind kind) const { return events_of(trace_, kind); }
  const Event* find(EventKind kind, uint64_t correlation) const {
    return event_with(trace_, kind, correlation);
  }

  FakeCuptiApi api_;
  detail::GpuOptions options_;
  std::unique_ptr<detail::GpuBackend> backend_;
  Trace trace_;
  std::vector<detail::Status> warnings_;
};

}  // namespace ptprof::test
