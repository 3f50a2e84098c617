// A child process for the process-exit tests of test_faults.cpp: profiles a few steps into
// <dir> and ends the process with a session still active, in the way <mode> names.
//
//   exit_helper exit-mid-window DIR     windows {0,1}, {2,3} saved, exit(0) in step 4's window
//   exit_helper exit-while-writing DIR  exit(0) right after handing a 300k-event window over
//   exit_helper static-session DIR      window {0,1} (300k events) handed over, main returns
//                                       inside step 2's window; the session is stopped in
//                                       static destruction
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>

#include <torch/torch.h>

#include "ptprof/ptprof.h"

namespace {

// Destroyed in static destruction, after main returns.
std::unique_ptr<ptprof::ProfileSession> g_session;

void adds(const torch::Tensor& x, const torch::Tensor& one, int n) {
  for (int i = 0; i < n; ++i) x.add_(one);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s MODE DIR\n", argv[0]);
    return 2;
  }
  const std::string mode = argv[1];
  const std::string dir = argv[2];
  auto x = torch::zeros({1});
  auto one = torch::ones({1});
  ptprof::Options o;
  o.on_trace_ready = {ptprof::tensorboard_trace_handler(dir, "exit")};
  if (mode == "exit-mid-window") {
    o.schedule = ptprof::Schedule{/*wait=*/0, /*warmup=*/0, /*active=*/2, /*repeat=*/0};
    ptprof::ProfileSession s(o);
    for (int step = 0; step < 4; ++step) {
      adds(x, one, 1000);
      s.step();
    }
    adds(x, one, 1000);
    // Long enough for the writer to finish both saved windows; then leave mid-window.
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    std::exit(0);
  }
  if (mode == "exit-while-writing") {
    o.schedule = ptprof::Schedule{/*wait=*/0, /*warmup=*/0, /*active=*/1, /*repeat=*/0};
    ptprof::ProfileSession s(o);
    adds(x, one, 300000);
    s.step();  // hands the window to the writer thread and returns
    std::exit(0);
  }
  if (mode == "static-session") {
    o.schedule = ptprof::Schedule{/*wait=*/0, /*warmup=*/0, /*active=*/2, /*repeat=*/0};
    g_session = std::make_unique<ptprof::ProfileSession>(o);
    // Window {0,1} is large, so it is still being written when main returns; the session's
    // destructor, which waits for its writes, comes later.
    for (int step = 0; step < 2; ++step) {
      adds(x, one, 150000);
      g_session->step();
    }
    adds(x, one, 1000);
    return 0;
  }
  std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
  return 2;
}
