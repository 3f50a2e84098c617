// FlightBuilder: flight recorder dumps made by hand, for the tests and the benchmark that read
// them. Its clock is the simplest a dump can have: ticks are Unix ns (no TSC, offset 0).
#pragma once

#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "trace/flight_dump.h"

namespace ptprof::test {

constexpr int64_t kSec = 1000000000;
constexpr int64_t kDump = int64_t{1790000000} * kSec;  // a dump's time, Unix ns

class FlightBuilder {
 public:
  using Record = detail::flight::Record;

  FlightBuilder(int64_t rank, int64_t world_size, detail::flight::Reason reason, int64_t dump_ns) {
    auto& h = d_.header;
    h.reason = static_cast<uint32_t>(reason);
    h.rank = rank;
    h.world_size = world_size;
    h.pid = 1000 + rank;
    h.dump_unix_ns = dump_ns;
    h.dump_ticks = dump_ns;
    h.last_step = -1;
    h.window_ns = 0;
    h.ring_capacity = 0;
    d_.worker = "host_" + std::to_string(1000 + rank) + (rank >= 0 ? "_rank" + std::to_string(rank) : "");
    d_.backend = "gloo";
  }

  detail::FlightDump& dump() { return d_; }
  detail::flight::FileHeader& header() { return d_.header; }

  // A thread; its index for the calls below.
  int thread(int64_t tid, const std::string& name) {
    detail::FlightDumpThread t;
    t.header.os_tid = tid;
    t.header.logical_tid = static_cast<uint64_t>(d_.threads.size() + 1);
    t.name = name;
    d_.threads.push_back(std::move(t));
    pushes_.push_back(0);
    return static_cast<int>(d_.threads.size() - 1);
  }

  uint32_t name(const std::string& n) {
    auto it = names_.find(n);
    if (it == names_.end()) it = names_.emplace(n, d_.add_name(n)).first;
    return it->second;
  }

  // An op still open at the dump, inside those opened before it on the thread.
  Record& open(int thread, const std::string& n, int64_t start_ns, bool range = false,
               uint8_t flags = 0) {
    auto& t = d_.threads[static_cast<std::size_t>(thread)];
    const auto depth = static_cast<uint32_t>(t.open.size());
    Record r = make(n, start_ns, 0, depth, range, flags, t.header.os_tid);
    r.w[detail::flight::kBegin] = r.w[detail::flight::kEndSeq] =
        detail::flight::version_of(pushes_[static_cast<std::size_t>(thread)]++);
    t.open.push_back(r);
    t.header.stack_depth = depth + 1;
    return t.open.back();
  }
  // A step range, open.
  Record& open_step(int thread, int64_t step, int64_t start_ns) {
    Record& r = open(thread, "ProfilerStep#" + std::to_string(step), start_ns, true);
    r.w[detail::flight::kNames] = detail::flight::pack_names(detail::flight::kStepName,
                                                             detail::flight::kNoName);
    r.w[detail::flight::kAux] = static_cast<uint64_t>(step);
    return r;
  }
  // A finished op in the thread's ring (rings are written when any thread has one).
  Record& done(int thread, const std::string& n, int64_t start_ns, int64_t end_ns,
               uint32_t depth = 0, bool range = false, uint8_t flags = 0) {
    auto& t = d_.threads[static_cast<std::size_t>(thread)];
    Record r = make(n, start_ns, end_ns, depth, range, flags, t.header.os_tid);
    r.w[detail::flight::kBegin] = r.w[detail::flight::kEndSeq] =
        detail::flight::version_of(t.header.written++);
    t.records.push_back(r);
    d_.has_rings = true;
    return t.records.back();
  }
  // A collective entered (end_ns 0: not finished), in the log of the process's collectives.
  Record& collective(int thread, const std::string& op, const std::string& group, int64_t seq,
                     int64_t start_ns, int64_t end_ns) {
    auto& t = d_.threads[static_cast<std::size_t>(thread)];
    Record r = make(op, start_ns, end_ns, 0, op.find(':') != std::string::npos &&
                                                 op.rfind("c10d::", 0) != 0,
                    detail::flight::kCollective, t.header.os_tid);
    r.w[detail::flight::kAux] = static_cast<uint64_t>(seq);
    r.w[detail::flight::kNames] = detail::flight::pack_names(
        name(op), group.empty() ? detail::flight::kNoName : name(group));
    r.w[detail::flight::kBegin] = r.w[detail::flight::kEndSeq] =
        detail::flight::version_of(collectives_++);
    d_.collectives.push_back(r);
    return d_.collectives.back();
  }
  void step(int64_t n, int64_t at_ns) {
    d_.header.last_step = n;
    d_.header.last_step_ticks = at_ns;
  }
  void message(const std::string& m) { d_.message = m; }

  std::string bytes() const { return detail::flight_dump_bytes(d_); }

 private:
  Record make(const std::string& n, int64_t start, int64_t end, uint32_t depth, bool range,
              uint8_t flags, int64_t tid) {
    Record r{};
    r.w[detail::flight::kStart] = static_cast<uint64_t>(start);
    r.w[detail::flight::kEnd] = static_cast<uint64_t>(end);
    r.w[detail::flight::kCorrelation] = ++correlation_;
    r.w[detail::flight::kAux] = static_cast<uint64_t>(int64_t{-1});
    r.w[detail::flight::kNames] = detail::flight::pack_names(name(n), detail::flight::kNoName);
    r.w[detail::flight::kBits] = detail::flight::pack_bits(
        depth, range ? detail::flight::kUserScope : 0, flags, static_cast<uint32_t>(tid));
    return r;
  }

  detail::FlightDump d_;
  std::map<std::string, uint32_t> names_;
  std::vector<uint64_t> pushes_;
  uint64_t collectives_ = 0;
  uint64_t correlation_ = 0;
};

}  // namespace ptprof::test
