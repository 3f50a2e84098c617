// ptprof/flight_report.h: what every rank was doing when a job hung or crashed, from the flight
// recorder's dumps (docs/flight-recorder.md).
//
// Each rank writes its own dumps (<worker>.<time>.ptflight, with a trace of its last seconds
// beside each one that was not written from a crash). flight_report reads the digests of a
// directory's dumps one at a time (the rings are skipped unread, so 1,024 ranks take seconds)
// and says, per rank, what each thread was inside at the end, the last collective it entered
// with its sequence number, which ranks never entered the collective the others wait in, and
// one line that puts it together ("rank 3 is stuck in aten::nonzero inside forward; ranks 0-2
// and 4-7 wait in allreduce #1812 for it"). 'ptprof report DIR' prints it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ptprof {

// An op or range open on a thread when the dump was taken.
struct FlightOpenOp {
  std::string name;
  int64_t start_ns = 0;  // Unix ns
  int64_t open_ns = 0;   // how long it had been open at the dump
  bool range = false;    // a user range (RECORD_USER_SCOPE, ptprof::Range, gloo:*, ...)
  bool collective = false;
};

struct FlightThreadState {
  int64_t tid = 0;
  std::string name;                 // pthread name
  std::vector<FlightOpenOp> open;   // innermost first
  uint32_t depth = 0;               // ops open; more than open.size() when the stack was cut
  bool exited = false;
  bool crashed = false;             // the thread the fatal signal hit
};

// A collective as a rank entered it.
struct FlightCollective {
  std::string op;       // the op: "c10d::allreduce_", "gloo:all_reduce", ...
  std::string name;     // what it does: "allreduce", "all_reduce", ...
  std::string group;    // its process group's name ("0": the default group); "" not known
  int64_t seq = -1;     // the group's sequence number (the same on every rank); -1 not known
  bool seq_is_count = false;  // seq is ptprof's count of the process's collectives (no group)
  int64_t tid = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;   // 0: had not returned at the dump
};

// One rank's dump, as its digest tells it.
struct FlightRank {
  int64_t rank = -1;
  int64_t world_size = -1;
  std::string file;     // the .ptflight dump
  std::string trace;    // the trace written with it; "" (a crash: 'ptprof flight FILE -o')
  std::string worker;
  std::string backend;
  int64_t pid = 0;
  std::string reason;   // "hang", "crash", "terminate", "api", "trigger_file", "signal", ...
  std::string message;  // in words: the signal, the exception, the seconds without a step
  int signal = 0;
  uint64_t fault_address = 0;
  int64_t dump_tid = 0;
  int64_t dump_ns = 0;       // Unix ns
  int64_t last_step = -1;
  int64_t since_step_ns = -1;  // from the last step() to the dump; -1: no step yet
  std::vector<FlightThreadState> threads;       // threads with open ops, and the one that crashed
  std::vector<FlightCollective> collectives;    // the last ones entered, oldest first
  uint64_t torn_records = 0;  // records being written as the dump copied them (left out)
  int dumps = 1;              // this rank's dumps in the directory (the last is described)

  // The thread that tells what the rank is doing: the one that crashed, else the one in a
  // ProfilerStep#N range (the training loop's), else the one with the oldest open op.
  const FlightThreadState* main_thread() const;
  // The last collective with a sequence number; nullptr when none.
  const FlightCollective* last_collective() const;
  // Whether a collective had been entered and not finished on any thread at the dump.
  bool in_collective() const;
  // "stuck_on_purpose inside forward" (innermost open op, and the range around it); "" idle.
  std::string position() const;
};

struct FlightReport {
  int64_t world_size = 0;
  std::vector<FlightRank> ranks;        // by rank
  std::vector<int64_t> missing_ranks;   // below world_size, with no dump (killed? SIGKILL
                                        // leaves none)
  // The collective the ranks wait in: the furthest any rank entered.
  FlightCollective waiting_in;          // seq -1: none
  std::vector<int64_t> waiting_ranks;   // entered it and had not finished
  std::vector<int64_t> not_entered;     // dumped, but never entered it
  std::string verdict;                  // one line
  std::vector<std::string> notes;       // what could not be told, and why

  std::string summary() const;  // plain text: the verdict, then each rank
  std::string to_json() const;  // keys as the fields' names
};

// Reads the dumps (*.ptflight) in `dir`, each rank's last one by time. Throws ptprof::Error
// naming the directory when it holds none, or a dump that cannot be read (file, offset, why).
FlightReport flight_report(const std::string& dir);
// One dump's digest. Throws ptprof::Error as flight_report does.
FlightRank flight_rank(const std::string& dump);
// Whether `dir` holds flight recorder dumps.
bool has_flight_dumps(const std::string& dir);

}  // namespace ptprof
