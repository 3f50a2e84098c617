// Data-parallel training from C++ with c10d, every rank profiled into one log directory:
//
//   ddp_example LOGDIR [--world-size N] [--steps S] [--record-shapes] [--slow-rank R --slow-ms M]
//               [--flight [--hang-s T]] [--timeout-s T]
//               [--stall-rank R --stall-step S --stall-ms M] [--crash-rank R --crash-step S
//               --crash segv|check]
//
// With --world-size N it starts N rank processes itself (fork, a TCPStore on 127.0.0.1 at a
// free port); without it, it is one rank of a job a launcher started, from RANK, WORLD_SIZE,
// MASTER_ADDR and MASTER_PORT (torchrun's variables). Each rank builds a Gloo process group as
// torch.distributed.init_process_group("gloo") does, trains an MLP on its own shard of
// synthetic data, and all-reduces the gradients each step as DistributedDataParallel does
// (one flat bucket, averaged). ptprof records steps 3..5 of every rank (wait 1, warmup 1,
// active 3) with the group's distributedInfo, so TensorBoard's Distributed view, Holistic Trace
// Analysis, 'ptprof merge' and 'ptprof report LOGDIR' see all ranks. With --record-shapes the
// c10d ops also carry their collective's arguments under PyTorch's names ("Collective name",
// "In msg nelems", "Process Group Ranks", "Seq", ...).
//
// --slow-rank R --slow-ms M makes rank R a straggler on purpose: each step it spends M ms in a
// range "straggler_extra_work" (matrix products) before its all-reduce, and the others wait.
//
// --flight keeps ptprof's flight recorder on (dumps in LOGDIR/flight; --hang-s T: a dump on
// every rank whose step() has not come for T seconds), and these make a rank misbehave for it:
//   --stall-rank R --stall-step S --stall-ms M: at step S rank R stops inside forward, in a
//     range "stuck_on_purpose", for M ms before its all-reduce; the others wait in it. Then
//     training goes on.
//   --crash-rank R --crash-step S --crash segv: at step S a worker thread of rank R writes
//     through a null pointer inside an op "ddp_example::faulting_op" in a range "worker_task";
//     --crash check: a failed TORCH_CHECK in a worker thread that nobody catches (an abort).
// --timeout-s T: the Gloo group's timeout (60 s), which ends the others' wait for a dead rank.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include <torch/csrc/distributed/c10d/GroupRegistry.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

// ProcessGroupGloo.hpp needs gloo's headers (Debian's libgloo-dev). Its GlooStore overrides
// five methods that gloo added to its Store after Debian's snapshot (2022): 'override' is
// emptied for this one header so they declare new virtuals instead. This file never creates a
// GlooStore (libtorch does, with its own gloo), and the class layouts this file relies on
// (ProcessGroupGloo, its Options) hold gloo types only behind pointers.
#include <gloo/rendezvous/store.h>
#define override
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#undef override

#include "ptprof/ptprof.h"

namespace {

struct Args {
  std::string logdir;
  int world_size = 0;  // 0: one rank of a launched job (environment)
  int steps = 8;
  int slow_rank = -1;
  int slow_ms = 0;
  bool record_shapes = false;
  bool flight = false;
  int hang_s = 0;
  int timeout_s = 60;
  int stall_rank = -1, stall_step = -1, stall_ms = 0;
  int crash_rank = -1, crash_step = -1;
  std::string crash;  // "segv" or "check"
};

[[noreturn]] void usage(const std::string& why) {
  std::cerr << "ddp_example: " << why
            << "\nusage: ddp_example LOGDIR [--world-size N] [--steps S] [--record-shapes] "
               "[--slow-rank R --slow-ms M] [--flight [--hang-s T]] [--timeout-s T] "
               "[--stall-rank R --stall-step S --stall-ms M] "
               "[--crash-rank R --crash-step S --crash segv|check]\n";
  std::exit(2);
}

int to_int(const std::string& flag, const char* v) {
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  if (*v == '\0' || *end != '\0' || n < 0 || n > 1000000)
    usage(flag + " wants a number, not '" + v + "'");
  return static_cast<int>(n);
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) usage(s + " wants a value");
      return argv[++i];
    };
    if (s == "--world-size") {
      a.world_size = to_int(s, value());
    } else if (s == "--steps") {
      a.steps = to_int(s, value());
    } else if (s == "--slow-rank") {
      a.slow_rank = to_int(s, value());
    } else if (s == "--slow-ms") {
      a.slow_ms = to_int(s, value());
    } else if (s == "--record-shapes") {
      a.record_shapes = true;
    } else if (s == "--flight") {
      a.flight = true;
    } else if (s == "--hang-s") {
      a.hang_s = to_int(s, value());
    } else if (s == "--timeout-s") {
      a.timeout_s = to_int(s, value());
    } else if (s == "--stall-rank") {
      a.stall_rank = to_int(s, value());
    } else if (s == "--stall-step") {
      a.stall_step = to_int(s, value());
    } else if (s == "--stall-ms") {
      a.stall_ms = to_int(s, value());
    } else if (s == "--crash-rank") {
      a.crash_rank = to_int(s, value());
    } else if (s == "--crash-step") {
      a.crash_step = to_int(s, value());
    } else if (s == "--crash") {
      a.crash = value();
      if (a.crash != "segv" && a.crash != "check") usage("--crash is segv or check");
    } else if (!s.empty() && s[0] == '-') {
      usage("unknown flag " + s);
    } else if (a.logdir.empty()) {
      a.logdir = s;
    } else {
      usage("one log directory, not " + a.logdir + " and " + s);
    }
  }
  if (a.logdir.empty()) usage("give a log directory");
  if (a.steps < 6) usage("--steps must be at least 6 (the profiled window is steps 3..5)");
  if (a.timeout_s < 1) usage("--timeout-s must be at least 1");
  if ((a.crash_rank >= 0) != !a.crash.empty()) usage("--crash-rank and --crash go together");
  return a;
}

// A TCP port nobody listens on now (the store's server binds it a moment later).
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    std::perror("ddp_example: finding a free port");
    std::exit(1);
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

// What torch.distributed.init_process_group("gloo") builds: a TCPStore, the default group
// "0" (desc "default_pg") with a Gloo backend for CPU tensors, registered under its name.
c10::intrusive_ptr<c10d::ProcessGroup> init_process_group(const std::string& host, int port,
                                                          int rank, int size, int timeout_s) {
  c10d::TCPStoreOptions so;
  so.port = static_cast<uint16_t>(port);
  so.isServer = rank == 0;
  so.numWorkers = size;
  so.timeout = std::chrono::seconds(60);  // the ranks' start, not the collectives
  auto store = c10::make_intrusive<c10d::TCPStore>(host, so);
  auto prefixed = c10::make_intrusive<c10d::PrefixStore>("default_pg", store);

  auto opts = c10d::ProcessGroupGloo::Options::create(std::chrono::seconds(timeout_s));
  opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(host));
  opts->group_name = "0";
  auto gloo = c10::make_intrusive<c10d::ProcessGroupGloo>(
      c10::make_intrusive<c10d::PrefixStore>("0/", prefixed), rank, size, opts);

  auto pg = c10::make_intrusive<c10d::ProcessGroup>(prefixed, rank, size);
  pg->setBackend(c10::DeviceType::CPU, c10d::ProcessGroup::BackendType::GLOO, gloo);
  pg->setDefaultBackend(c10d::ProcessGroup::BackendType::GLOO);
  pg->setGroupName("0");
  pg->setGroupDesc("default_pg");
  c10d::register_process_group("0", pg);
  return pg;
}

struct NetImpl : torch::nn::Module {
  NetImpl()
      : fc1(register_module("fc1", torch::nn::Linear(128, 512))),
        fc2(register_module("fc2", torch::nn::Linear(512, 512))),
        fc3(register_module("fc3", torch::nn::Linear(512, 10))) {}
  torch::Tensor forward(torch::Tensor x) {
    x = torch::relu(fc1(x));
    x = torch::relu(fc2(x));
    return fc3(x);
  }
  torch::nn::Linear fc1, fc2, fc3;
};
TORCH_MODULE(Net);

// DistributedDataParallel's reduction: the gradients as one flat bucket, all-reduced and
// averaged, copied back.
void allreduce_gradients(c10d::ProcessGroup& pg, Net& net) {
  ptprof::Range range("DistributedDataParallel.allreduce_gradients");
  std::vector<torch::Tensor> grads;
  for (auto& p : net->parameters()) grads.push_back(p.grad().view(-1));
  std::vector<torch::Tensor> bucket{torch::cat(grads)};
  pg.allreduce(bucket)->wait();
  bucket[0].div_(pg.getSize());
  int64_t at = 0;
  for (auto& p : net->parameters()) {
    const int64_t n = p.grad().numel();
    p.grad().view(-1).copy_(bucket[0].slice(0, at, at + n));
    at += n;
  }
}

// A rank that stops before its all-reduce (the flight recorder's case): it sleeps in a range.
void stuck_on_purpose(int ms) {
  ptprof::Range range("stuck_on_purpose");
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

// A worker thread that dies in an op: a write through a null pointer, or a failed check that
// nobody catches. Neither returns.
void crash_in_worker(const std::string& how) {
  std::thread([how] {
    ptprof::Range task("worker_task");
    RECORD_FUNCTION("ddp_example::faulting_op", std::vector<c10::IValue>());
    if (how == "segv") {
      volatile int* nowhere = nullptr;
      *nowhere = 1;
    }
    TORCH_CHECK(false, "ddp_example: the bucket's shapes differ (on purpose)");
  }).join();
}

// Busy work that shows in the trace: matrix products until `ms` have passed.
void straggler_extra_work(int ms) {
  ptprof::Range range("straggler_extra_work");
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  auto a = torch::randn({128, 128});
  while (std::chrono::steady_clock::now() < until) a = torch::tanh(a.mm(a));
}

int run_rank(const Args& a, const std::string& host, int port, int rank, int size) {
  torch::set_num_threads(1);  // ranks share this machine's cores
  auto pg = init_process_group(host, port, rank, size, a.timeout_s);
  torch::manual_seed(0);  // the same initial weights on every rank, as DDP broadcasts them
  Net net;
  torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9));
  torch::manual_seed(1000 + rank);  // each rank its own shard
  auto inputs = torch::randn({a.steps, 64, 128});
  auto labels = torch::randint(0, 10, {a.steps, 64});

  ptprof::Options o;
  o.schedule = ptprof::Schedule{/*wait=*/1, /*warmup=*/1, /*active=*/3, /*repeat=*/1};
  o.distributed = ptprof::distributed_info(*pg);
  o.record_shapes = a.record_shapes;
  o.on_trace_ready = {ptprof::tensorboard_trace_handler(a.logdir)};
  o.flight_recorder.enabled = a.flight;
  o.flight_recorder.dir = a.logdir + "/flight";
  o.flight_recorder.hang_seconds = a.hang_s;
  ptprof::Status status;
  {
    ptprof::ProfileSession session(o);
    for (int s = 0; s < a.steps; ++s) {
      torch::Tensor x, y;
      {
        ptprof::DataLoaderRange loader;
        x = inputs[s];
        y = labels[s];
      }
      if (rank == a.slow_rank) straggler_extra_work(a.slow_ms);
      if (rank == a.crash_rank && s == a.crash_step) crash_in_worker(a.crash);
      opt.zero_grad();
      torch::Tensor loss;
      {
        ptprof::Range r("forward");
        loss = torch::nn::functional::cross_entropy(net->forward(x), y);
        if (rank == a.stall_rank && s == a.stall_step) stuck_on_purpose(a.stall_ms);
      }
      {
        ptprof::Range r("backward");
        loss.backward();
      }
      allreduce_gradients(*pg, net);
      {
        ptprof::Range r("Optimizer.step#SGD.step");
        opt.step();
      }
      session.step();
    }
    status = session.stop();
  }
  // The ranks leave together, so none tears the store down under another.
  pg->barrier()->wait();
  if (!status.ok()) {
    std::cerr << "rank " << rank << ": " << status.message() << "\n";
    return 1;
  }
  std::printf("rank %d of %d: traces in %s\n", rank, size, a.logdir.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse(argc, argv);
  if (a.world_size == 0) {  // one rank of a launched job
    const char* rank = std::getenv("RANK");
    const char* size = std::getenv("WORLD_SIZE");
    const char* addr = std::getenv("MASTER_ADDR");
    const char* port = std::getenv("MASTER_PORT");
    if (!rank || !size || !port)
      usage("without --world-size, RANK, WORLD_SIZE and MASTER_PORT name this rank");
    const int r = to_int("RANK", rank), n = to_int("WORLD_SIZE", size);
    if (r >= n) usage("RANK must be below WORLD_SIZE");
    return run_rank(a, addr ? addr : "127.0.0.1", to_int("MASTER_PORT", port), r, n);
  }
  if (a.world_size < 1) usage("--world-size must be at least 1");
  if (a.slow_rank >= a.world_size) usage("--slow-rank must be below --world-size");
  // Forked before libtorch starts any thread; each child is a whole rank.
  const int port = free_port();
  std::vector<pid_t> children;
  for (int r = 0; r < a.world_size; ++r) {
    const pid_t pid = ::fork();
    if (pid < 0) {
      std::perror("ddp_example: fork");
      return 1;
    }
    if (pid == 0) {
      int rc = 1;
      try {
        rc = run_rank(a, "127.0.0.1", port, r, a.world_size);
      } catch (const std::exception& e) {
        std::cerr << "rank " << r << ": " << e.what() << "\n";
      }
      std::fflush(stdout);
      ::_exit(rc);
    }
    children.push_back(pid);
  }
  int failed = 0;
  for (std::size_t r = 0; r < children.size(); ++r) {
    int st = 0;
    ::waitpid(children[r], &st, 0);
    if (WIFSIGNALED(st)) {
      std::cerr << "ddp_example: rank " << r << " killed by signal " << WTERMSIG(st)
                << (WCOREDUMP(st) ? " (core dumped)" : "") << "\n";
      ++failed;
    } else if (WEXITSTATUS(st) != 0) {
      std::cerr << "ddp_example: rank " << r << " exited with status " << WEXITSTATUS(st) << "\n";
      ++failed;
    }
  }
  return failed == 0 ? 0 : 1;
}
