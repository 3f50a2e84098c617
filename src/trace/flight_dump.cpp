#include "trace/flight_dump.h"
#include "trace/trace_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <limits>
#include <map>

#include "ptprof/error.h"
#include "trace/chrome_trace.h"
#include "trace/json_writer.h"

namespace ptprof::detail {

namespace flight {

const char* reason_name(uint32_t reason) {
  switch (static_cast<Reason>(reason)) {
    case Reason::kApi:
      return "api";
    case Reason::kTriggerFile:
      return "trigger_file";
    case Reason::kSignal:
      return "signal";
    case Reason::kHang:
      return "hang";
    case Reason::kCrash:
      return "crash";
    case Reason::kTerminate:
      return "terminate";
    case Reason::kCollectiveTimeout:
      return "collective_timeout";
  }
  return "unknown";
}

const char* fatal_signal_name(int sig) {
  switch (sig) {
    case SIGSEGV:
      return "SIGSEGV";
    case SIGBUS:
      return "SIGBUS";
    case SIGFPE:
      return "SIGFPE";
    case SIGILL:
      return "SIGILL";
    case SIGABRT:
      return "SIGABRT";
  }
  return nullptr;
}

}  // namespace flight

namespace {

using flight::Record;

// Sequential input with the offset for messages: a file (the rings can be skipped unread) or
// bytes in memory (the fuzz target).
class Input {
 public:
  Input(std::string what, int fd) : what_(std::move(what)), fd_(fd) {
    struct stat st;
    if (::fstat(fd, &st) != 0) fail("cannot stat: " + std::string(std::strerror(errno)));
    size_ = static_cast<uint64_t>(st.st_size);
  }
  Input(std::string what, std::string_view bytes)
      : what_(std::move(what)), bytes_(bytes), size_(bytes.size()) {}

  uint64_t remaining() const { return size_ - at_; }
  uint64_t offset() const { return at_; }

  void read(void* dst, uint64_t n, const char* part) {
    if (n > remaining())
      fail("ends inside " + std::string(part) + " (" + std::to_string(n) + " bytes wanted, " +
           std::to_string(remaining()) + " left): a truncated dump");
    if (n == 0) return;  // an empty part: dst may be an empty vector's null data()
    if (fd_ < 0) {
      std::memcpy(dst, bytes_.data() + at_, n);
    } else {
      auto* p = static_cast<char*>(dst);
      uint64_t done = 0;
      while (done < n) {
        const ssize_t got = ::pread(fd_, p + done, n - done, static_cast<off_t>(at_ + done));
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) fail("cannot read " + std::string(part) + ": " + std::strerror(errno));
        done += static_cast<uint64_t>(got);
      }
    }
    at_ += n;
  }
  template <typename T>
  void read_vector(std::vector<T>* out, uint64_t count, const char* part) {
    // Checked against what is left before anything is allocated: a count a dump cannot hold
    // is an error, not an allocation.
    if (count > remaining() / sizeof(T))
      fail(std::string(part) + ": " + std::to_string(count) + " entries do not fit in the " +
           std::to_string(remaining()) + " bytes left");
    out->resize(static_cast<std::size_t>(count));
    read(out->data(), count * sizeof(T), part);
  }

  [[noreturn]] void fail(const std::string& why) const {
    throw Error("ptprof: " + what_ + ": not a readable flight recorder dump at byte " +
                std::to_string(at_) + ": " + why);
  }

 private:
  std::string what_;
  int fd_ = -1;
  std::string_view bytes_;
  uint64_t size_ = 0;
  uint64_t at_ = 0;
};

// A text field as the writer puts it (put_text: at most size - 1 bytes and a NUL); a field
// without its NUL is cut there too, so what is read writes back the same.
std::string text_of(const char* field, std::size_t size) {
  return std::string(field, strnlen(field, size - 1));
}

void check_bound(Input& in, uint64_t value, uint64_t max, const char* what) {
  if (value > max)
    in.fail(std::string(what) + " is " + std::to_string(value) + ", more than any dump has (" +
            std::to_string(max) + ")");
}

}  // namespace

std::vector<Record> records_in_order(const std::vector<Record>& ring, uint64_t* torn) {
  std::vector<std::pair<uint64_t, uint32_t>> order;  // (record number, slot)
  for (uint32_t i = 0; i < ring.size(); ++i) {
    const Record& r = ring[i];
    if (!flight::whole(r)) {
      if (r.w[flight::kBegin] != 0 || r.w[flight::kEndSeq] != 0) ++*torn;
      continue;
    }
    const uint64_t n = r.w[flight::kBegin] / 2 - 1;
    if (n % ring.size() != i) {
      ++*torn;
      continue;
    }
    order.emplace_back(n, i);
  }
  std::sort(order.begin(), order.end());
  std::vector<Record> out;
  out.reserve(order.size());
  for (const auto& [n, i] : order) out.push_back(ring[i]);
  return out;
}

namespace {

FlightDump parse(Input& in, bool rings) {
  FlightDump d;
  flight::FileHeader& h = d.header;
  in.read(&h, sizeof(h), "the header");
  if (std::memcmp(h.magic, flight::kMagic, sizeof(flight::kMagic)) != 0)
    in.fail("no PTFLIGHT magic at its start");
  if (h.version != flight::kVersion)
    in.fail("format version " + std::to_string(h.version) + ", this ptprof reads version " +
            std::to_string(flight::kVersion));
  if (h.header_bytes != sizeof(flight::FileHeader))
    in.fail("header of " + std::to_string(h.header_bytes) + " bytes, expected " +
            std::to_string(sizeof(flight::FileHeader)));
  check_bound(in, h.n_names, flight::kMaxNames, "the name count");
  check_bound(in, h.name_bytes, flight::kMaxNameBytes, "the names' size");
  check_bound(in, h.n_threads, flight::kMaxThreads, "the thread count");
  check_bound(in, h.collective_capacity, flight::kMaxCollectives, "the collectives' capacity");
  check_bound(in, h.ring_capacity, flight::kMaxRingCapacity, "the ring capacity");
  d.worker = text_of(h.worker, sizeof(h.worker));
  d.backend = text_of(h.backend, sizeof(h.backend));
  d.message = text_of(h.message, sizeof(h.message));

  in.read_vector(&d.name_ends, h.n_names, "the name table");
  uint32_t prev = 0;
  for (uint32_t end : d.name_ends) {
    if (end < prev || end > h.name_bytes)
      in.fail("name table offsets out of order or past its " + std::to_string(h.name_bytes) +
              " bytes");
    prev = end;
  }
  if (h.name_bytes > in.remaining()) in.fail("ends inside the names");
  d.name_bytes.resize(h.name_bytes);
  in.read(d.name_bytes.data(), h.name_bytes, "the names");

  d.threads.resize(h.n_threads);
  for (FlightDumpThread& t : d.threads) {
    in.read(&t.header, sizeof(t.header), "a thread's header");
    check_bound(in, t.header.stack_entries, flight::kMaxStackEntries, "a thread's open ops");
    t.name = text_of(t.header.name, sizeof(t.header.name));
    std::vector<Record> entries;
    in.read_vector(&entries, t.header.stack_entries, "a thread's open ops");
    for (uint32_t i = 0; i < entries.size(); ++i) {
      // Each entry sits at its own depth; one being pushed or popped while copied is left out.
      if (flight::whole(entries[i]) && flight::depth_of(entries[i]) == i)
        t.open.push_back(entries[i]);
      else if (entries[i].w[flight::kBegin] != 0 || entries[i].w[flight::kEndSeq] != 0)
        ++d.torn;
    }
  }

  std::vector<Record> log;
  in.read_vector(&log, h.collective_capacity, "the collectives");
  d.collectives = records_in_order(log, &d.torn);

  const bool file_has_rings = (h.flags & flight::kHasRings) != 0;
  if (!rings || !file_has_rings) return d;
  const uint64_t ring_bytes = static_cast<uint64_t>(h.ring_capacity) * sizeof(Record);
  if (ring_bytes != 0 && h.n_threads > in.remaining() / ring_bytes)
    in.fail("the rings: " + std::to_string(h.n_threads) + " of " +
            std::to_string(h.ring_capacity) + " records do not fit in the " +
            std::to_string(in.remaining()) + " bytes left: a truncated dump");
  d.has_rings = true;
  std::vector<Record> ring;
  for (FlightDumpThread& t : d.threads) {
    in.read_vector(&ring, h.ring_capacity, "a thread's ring");
    t.records = records_in_order(ring, &d.torn);
    // A previous owner's records (the ring was an exited thread's) are not this thread's.
    const uint64_t first = t.header.first;
    t.records.erase(std::remove_if(t.records.begin(), t.records.end(),
                                   [&](const Record& r) {
                                     return r.w[flight::kBegin] < flight::version_of(first);
                                   }),
                    t.records.end());
  }
  return d;
}

int64_t clamp_ns(long double v) {
  constexpr long double kMax = static_cast<long double>(int64_t{1} << 62);
  if (!(v > -kMax)) return -(int64_t{1} << 62);  // NaN lands here too
  if (v > kMax) return int64_t{1} << 62;
  return static_cast<int64_t>(v);
}

// a - b where a is later, else 0: both come from clamp_ns (within +-2^62), so their difference
// fits in uint64_t however hostile the dump's ticks are.
int64_t elapsed_ns(int64_t a, int64_t b) {
  if (a <= b) return 0;
  const uint64_t d = static_cast<uint64_t>(a) - static_cast<uint64_t>(b);
  return d > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())
             ? std::numeric_limits<int64_t>::max()
             : static_cast<int64_t>(d);
}

// "c10d::allreduce_" -> "allreduce", "gloo:all_reduce" -> "all_reduce".
std::string collective_name(const std::string& op) {
  std::string n = op;
  for (const char* prefix : {"c10d::", "gloo:", "nccl:", "ucc:", "mpi:"}) {
    const std::size_t len = std::strlen(prefix);
    if (n.compare(0, len, prefix) == 0) {
      n = n.substr(len);
      break;
    }
  }
  while (!n.empty() && n.back() == '_') n.pop_back();
  while (!n.empty() && n.front() == '_') n.erase(n.begin());
  return n.empty() ? op : n;
}

// An fd-backed Sink for write_file_atomically's body.
void write_all(Sink& out, const void* p, std::size_t n) {
  out.write(static_cast<const char*>(p), n);
}

void write_dump(const FlightDump& d, Sink& out) {
  flight::FileHeader h = d.header;
  std::memcpy(h.magic, flight::kMagic, sizeof(h.magic));
  h.version = flight::kVersion;
  h.header_bytes = sizeof(flight::FileHeader);
  h.n_names = static_cast<uint32_t>(d.name_ends.size());
  h.name_bytes = static_cast<uint32_t>(d.name_bytes.size());
  h.n_threads = static_cast<uint32_t>(d.threads.size());
  // Capacities kept as read: records sit at their number modulo the capacity they had.
  h.collective_capacity =
      std::max(d.header.collective_capacity, static_cast<uint32_t>(d.collectives.size()));
  h.flags = d.has_rings ? (h.flags | flight::kHasRings) : (h.flags & ~flight::kHasRings);
  auto put_text = [](char* field, std::size_t size, const std::string& s) {
    std::memset(field, 0, size);
    std::memcpy(field, s.data(), std::min(s.size(), size - 1));
  };
  put_text(h.worker, sizeof(h.worker), d.worker);
  put_text(h.backend, sizeof(h.backend), d.backend);
  put_text(h.message, sizeof(h.message), d.message);
  uint32_t capacity = 0;
  for (const FlightDumpThread& t : d.threads)
    capacity = std::max<uint32_t>(capacity, static_cast<uint32_t>(t.records.size()));
  if (d.has_rings) h.ring_capacity = std::max(h.ring_capacity, capacity);
  write_all(out, &h, sizeof(h));
  write_all(out, d.name_ends.data(), d.name_ends.size() * sizeof(uint32_t));
  write_all(out, d.name_bytes.data(), d.name_bytes.size());
  for (const FlightDumpThread& t : d.threads) {
    // Each open op at its own depth (a reader takes an entry only there).
    std::vector<Record> stack;
    for (const Record& r : t.open) {
      const uint32_t depth = flight::depth_of(r);
      if (depth >= stack.size()) stack.resize(depth + 1);
      stack[depth] = r;
    }
    flight::ThreadHeader th = t.header;
    th.stack_entries = static_cast<uint32_t>(stack.size());
    put_text(th.name, sizeof(th.name), t.name);
    write_all(out, &th, sizeof(th));
    write_all(out, stack.data(), stack.size() * sizeof(Record));
  }
  // Rings, as the recorder lays them out: record n at slot n % capacity.
  auto write_ring = [&](const std::vector<Record>& records, uint32_t capacity) {
    std::vector<Record> ring(capacity);
    for (const Record& r : records) {
      const uint64_t v = std::min(r.w[flight::kBegin], r.w[flight::kEndSeq]);
      if (v >= 2 && !ring.empty()) ring[(v / 2 - 1) % ring.size()] = r;
    }
    write_all(out, ring.data(), ring.size() * sizeof(Record));
  };
  write_ring(d.collectives, h.collective_capacity);
  if (!d.has_rings) return;
  for (const FlightDumpThread& t : d.threads) write_ring(t.records, h.ring_capacity);
}

class StringSink final : public Sink {
 public:
  void write(const char* data, std::size_t size) override { s.append(data, size); }
  std::string s;
};

FlightOpenOp open_op(const FlightDump& d, const Record& r, int64_t now) {
  FlightOpenOp op;
  op.name = d.op_name(r);
  op.start_ns = d.unix_ns(static_cast<int64_t>(r.w[flight::kStart]));
  op.open_ns = elapsed_ns(now, op.start_ns);
  op.range = flight::scope_of(r) == flight::kUserScope;
  op.collective = (flight::flags_of(r) & flight::kCollective) != 0;
  return op;
}

constexpr std::size_t kDigestCollectives = 16;  // the last ones entered, per rank

}  // namespace

}  // namespace ptprof::detail

namespace ptprof {

const FlightThreadState* FlightRank::main_thread() const {
  const FlightThreadState* best = nullptr;
  for (const FlightThreadState& t : threads)
    if (t.crashed) return &t;
  for (const FlightThreadState& t : threads)
    for (const FlightOpenOp& o : t.open)
      if (o.range && o.name.rfind("ProfilerStep#", 0) == 0) return &t;
  for (const FlightThreadState& t : threads) {
    if (t.open.empty()) continue;
    if (best == nullptr || t.open.back().start_ns < best->open.back().start_ns) best = &t;
  }
  return best;
}

const FlightCollective* FlightRank::last_collective() const {
  for (auto it = collectives.rbegin(); it != collectives.rend(); ++it)
    if (it->seq >= 0) return &*it;
  return nullptr;
}

bool FlightRank::in_collective() const {
  for (const FlightThreadState& t : threads)
    for (const FlightOpenOp& o : t.open)
      if (o.collective) return true;
  // c10d's op returns once the work is queued; the backend's own op (gloo:*) runs it.
  return !collectives.empty() && collectives.back().end_ns == 0;
}

std::string FlightRank::position() const {
  const FlightThreadState* t = main_thread();
  if (t == nullptr || t->open.empty()) return "";
  // The innermost op, and the innermost range around it that is not the step itself.
  std::string s = t->open.front().name;
  for (std::size_t i = 1; i < t->open.size(); ++i) {
    const FlightOpenOp& o = t->open[i];
    if (o.range && o.name.rfind("ProfilerStep#", 0) != 0) {
      s += " inside " + o.name;
      break;
    }
  }
  return s;
}

}  // namespace ptprof

namespace ptprof::detail {

std::string_view FlightDump::name(uint32_t id) const {
  if (id >= name_ends.size()) return {};
  const uint32_t begin = id == 0 ? 0 : name_ends[id - 1];
  return std::string_view(name_bytes).substr(begin, name_ends[id] - begin);
}

std::string FlightDump::op_name(const flight::Record& r) const {
  const uint32_t id = flight::name_of(r);
  if (id == flight::kStepName)
    return "ProfilerStep#" + std::to_string(static_cast<int64_t>(r.w[flight::kAux]));
  if (id >= name_ends.size()) return "<name #" + std::to_string(id) + ">";
  return std::string(name(id));
}

int64_t FlightDump::unix_ns(int64_t ticks) const {
  const flight::FileHeader& h = header;
  long double mono = static_cast<long double>(ticks);
  if (h.ticks_are_tsc != 0) {
    const long double dt = static_cast<long double>(h.tick1) - static_cast<long double>(h.tick0);
    const long double dn = static_cast<long double>(h.ns1) - static_cast<long double>(h.ns0);
    const long double slope = dt > 0 && dn >= 0 ? dn / dt : 1.0L;
    mono = static_cast<long double>(h.ns0) +
           (static_cast<long double>(ticks) - static_cast<long double>(h.tick0)) * slope;
  }
  return clamp_ns(mono + static_cast<long double>(h.unix_offset_ns));
}

uint32_t FlightDump::add_name(std::string_view n) {
  name_bytes.append(n.data(), n.size());
  name_ends.push_back(static_cast<uint32_t>(name_bytes.size()));
  return static_cast<uint32_t>(name_ends.size() - 1);
}

bool is_flight_dump(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char magic[sizeof(flight::kMagic)];
  const bool yes = ::pread(fd, magic, sizeof(magic), 0) == static_cast<ssize_t>(sizeof(magic)) &&
                   std::memcmp(magic, flight::kMagic, sizeof(magic)) == 0;
  ::close(fd);
  return yes;
}

FlightDump read_flight_dump(const std::string& path, bool rings) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error("ptprof: cannot open " + path + ": " + std::strerror(errno));
  try {
    Input in(path, fd);
    FlightDump d = parse(in, rings);
    ::close(fd);
    return d;
  } catch (...) {
    ::close(fd);
    throw;
  }
}

FlightDump parse_flight_dump(std::string_view bytes, const std::string& what, bool rings) {
  Input in(what, bytes);
  return parse(in, rings);
}

std::string flight_dump_bytes(const FlightDump& dump) {
  StringSink s;
  write_dump(dump, s);
  return std::move(s.s);
}

void write_flight_dump(const FlightDump& dump, const std::string& path) {
  write_file_atomically(path, [&](Sink& out) { write_dump(dump, out); });
}

std::string flight_trace_path(const std::string& dump_path) {
  static constexpr char kExt[] = ".ptflight";
  std::string stem = dump_path;
  if (stem.size() > sizeof(kExt) - 1 &&
      stem.compare(stem.size() - (sizeof(kExt) - 1), sizeof(kExt) - 1, kExt) == 0)
    stem.resize(stem.size() - (sizeof(kExt) - 1));
  return stem + ".pt.trace.json.gz";
}

FlightRank flight_digest(const FlightDump& d, const std::string& file) {
  const flight::FileHeader& h = d.header;
  FlightRank r;
  r.rank = h.rank;
  r.world_size = h.world_size;
  r.file = file;
  r.worker = d.worker;
  r.backend = d.backend;
  r.pid = h.pid;
  r.reason = flight::reason_name(h.reason);
  r.message = d.message;
  r.signal = h.signal;
  r.fault_address = h.fault_address;
  r.dump_tid = h.dump_tid;
  const int64_t now = d.dump_ns();
  r.dump_ns = now;
  r.last_step = h.last_step;
  if (h.last_step_ticks != 0) r.since_step_ns = elapsed_ns(now, d.unix_ns(h.last_step_ticks));
  r.torn_records = d.torn;
  const bool crash = h.reason == static_cast<uint32_t>(flight::Reason::kCrash) ||
                     h.reason == static_cast<uint32_t>(flight::Reason::kTerminate);
  for (const FlightDumpThread& t : d.threads) {
    const bool crashed = crash && t.header.os_tid == h.dump_tid;
    if (t.open.empty() && !crashed) continue;
    FlightThreadState s;
    s.tid = t.header.os_tid;
    s.name = t.name;
    s.depth = t.header.stack_depth;
    s.exited = (t.header.flags & flight::kThreadExited) != 0;
    s.crashed = crashed;
    for (auto it = t.open.rbegin(); it != t.open.rend(); ++it) s.open.push_back(open_op(d, *it, now));
    r.threads.push_back(std::move(s));
  }
  const std::size_t first =
      d.collectives.size() > kDigestCollectives ? d.collectives.size() - kDigestCollectives : 0;
  for (std::size_t i = first; i < d.collectives.size(); ++i) {
    const Record& c = d.collectives[i];
    FlightCollective fc;
    fc.op = d.op_name(c);
    fc.name = collective_name(fc.op);
    const uint32_t group = flight::group_of(c);
    if (group != flight::kNoName) fc.group = std::string(d.name(group));
    fc.seq = static_cast<int64_t>(c.w[flight::kAux]);
    fc.seq_is_count = (flight::flags_of(c) & flight::kSeqIsCount) != 0;
    fc.tid = flight::tid_of(c);
    fc.start_ns = d.unix_ns(static_cast<int64_t>(c.w[flight::kStart]));
    fc.end_ns = c.w[flight::kEnd] != 0 ? d.unix_ns(static_cast<int64_t>(c.w[flight::kEnd])) : 0;
    r.collectives.push_back(std::move(fc));
  }
  return r;
}

void write_flight_collective(JsonWriter& w, const FlightCollective& c) {
  w.begin_object();
  w.key("op").value(c.op);
  w.key("name").value(c.name);
  w.key("group").value(c.group);
  w.key("seq").value(c.seq);
  w.key("seq_is_count").value(c.seq_is_count);
  w.key("tid").value(c.tid);
  w.key("start_ns").value(c.start_ns);
  w.key("end_ns").value(c.end_ns);
  w.end_object();
}

std::string flight_rank_json(const FlightRank& r) {
  JsonWriter w;
  w.begin_object();
  w.key("rank").value(r.rank);
  w.key("world_size").value(r.world_size);
  w.key("file").value(r.file);
  w.key("trace").value(r.trace);
  w.key("worker").value(r.worker);
  w.key("backend").value(r.backend);
  w.key("pid").value(r.pid);
  w.key("reason").value(r.reason);
  w.key("message").value(r.message);
  w.key("signal").value(static_cast<int64_t>(r.signal));
  w.key("fault_address").value(r.fault_address);
  w.key("dump_tid").value(r.dump_tid);
  w.key("dump_ns").value(r.dump_ns);
  w.key("last_step").value(r.last_step);
  w.key("since_step_ns").value(r.since_step_ns);
  w.key("torn_records").value(r.torn_records);
  w.key("dumps").value(static_cast<int64_t>(r.dumps));
  w.key("position").value(r.position());
  w.key("threads").begin_array();
  for (const FlightThreadState& t : r.threads) {
    w.begin_object();
    w.key("tid").value(t.tid);
    w.key("name").value(t.name);
    w.key("depth").value(t.depth);
    w.key("exited").value(t.exited);
    w.key("crashed").value(t.crashed);
    w.key("open").begin_array();
    for (const FlightOpenOp& o : t.open) {
      w.begin_object();
      w.key("name").value(o.name);
      w.key("start_ns").value(o.start_ns);
      w.key("open_ns").value(o.open_ns);
      w.key("range").value(o.range);
      w.key("collective").value(o.collective);
      w.end_object();
    }
    w.end_array();
    w.end_object();
  }
  w.end_array();
  w.key("collectives").begin_array();
  for (const FlightCollective& c : r.collectives) write_flight_collective(w, c);
  w.end_array();
  w.end_object();
  w.finish();
  std::string s = w.take();
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

Trace flight_trace(const FlightDump& d) {
  const flight::FileHeader& h = d.header;
  Trace t;
  t.pid = h.pid;
  t.worker_name = d.worker;
  const int64_t now = d.dump_ns();
  const int64_t window = std::clamp<int64_t>(h.window_ns, 0, int64_t{1} << 62);
  const int64_t keep_from = window > 0 ? now - window : std::numeric_limits<int64_t>::min();

  std::map<uint32_t, std::string_view> names;
  auto name_of = [&](const Record& r) -> std::string_view {
    const uint32_t id = flight::name_of(r);
    if (id == flight::kStepName) return t.intern(d.op_name(r));
    auto it = names.find(id);
    if (it == names.end()) it = names.emplace(id, t.intern(d.op_name(r))).first;
    return it->second;
  };
  std::map<std::pair<uint32_t, int64_t>, int32_t> collective_index;  // (group, seq)
  auto add = [&](const FlightDumpThread& th, const Record& r, bool open) {
    Event e;
    e.kind = flight::scope_of(r) == flight::kUserScope ? EventKind::UserAnnotation
                                                      : EventKind::CpuOp;
    e.name = name_of(r);
    e.start_ns = d.unix_ns(static_cast<int64_t>(r.w[flight::kStart]));
    const bool abandoned = (flight::flags_of(r) & flight::kAbandoned) != 0;
    const int64_t end = open ? now : d.unix_ns(static_cast<int64_t>(r.w[flight::kEnd]));
    e.duration_ns = elapsed_ns(end, e.start_ns);
    if (e.duration_ns > kMaxEventDurationNs) return;  // a torn or hostile record, not an op
    e.finished = !open && !abandoned;
    e.pid = h.pid;
    e.tid = th.header.os_tid;
    e.thread_id = th.header.logical_tid;
    e.external_id = r.w[flight::kCorrelation];
    e.record_function_id = r.w[flight::kCorrelation];
    e.is_async = (flight::flags_of(r) & flight::kAsync) != 0;
    if ((flight::flags_of(r) & flight::kCollective) != 0 &&
        static_cast<int64_t>(r.w[flight::kAux]) >= 0 &&
        (flight::flags_of(r) & flight::kSeqIsCount) == 0) {
      const uint32_t group = flight::group_of(r);
      const auto key = std::make_pair(group, static_cast<int64_t>(r.w[flight::kAux]));
      auto it = collective_index.find(key);
      if (it == collective_index.end()) {
        CollectiveInfo c;
        c.name = collective_name(std::string(e.name));
        if (group != flight::kNoName) c.pg_name = std::string(d.name(group));
        c.seq = key.second;
        it = collective_index.emplace(key, static_cast<int32_t>(t.collectives.size())).first;
        t.collectives.push_back(std::move(c));
      }
      e.collective = it->second;
    }
    if (flight::name_of(r) == flight::kStepName)
      t.steps.push_back(static_cast<int64_t>(r.w[flight::kAux]));
    t.events.push_back(e);
  };
  for (const FlightDumpThread& th : d.threads) {
    t.threads.push_back(ThreadInfo{th.header.os_tid, th.header.logical_tid, th.name});
    const std::size_t first = t.events.size();
    std::vector<uint64_t> ended;  // correlations of the ring's records
    for (const Record& r : th.records) {
      if (d.unix_ns(static_cast<int64_t>(r.w[flight::kEnd])) < keep_from) continue;
      ended.push_back(r.w[flight::kCorrelation]);
      add(th, r, false);
    }
    std::sort(ended.begin(), ended.end());
    // An op that ended while a live snapshot was taken can be in both: the ring has its end.
    for (const Record& r : th.open)
      if (!std::binary_search(ended.begin(), ended.end(), r.w[flight::kCorrelation]))
        add(th, r, true);
    std::stable_sort(t.events.begin() + static_cast<std::ptrdiff_t>(first), t.events.end(),
                     [](const Event& a, const Event& b) {
                       return a.start_ns != b.start_ns ? a.start_ns < b.start_ns
                                                       : a.duration_ns > b.duration_ns;
                     });
  }
  std::sort(t.steps.begin(), t.steps.end());
  t.steps.erase(std::unique(t.steps.begin(), t.steps.end()), t.steps.end());
  t.window_end_ns = now;
  t.window_start_ns = now;
  for (const Event& e : t.events) t.window_start_ns = std::min(t.window_start_ns, e.start_ns);
  t.rebuild_tree();
  t.metadata["ptprof_flight"] = flight_rank_json(flight_digest(d, ""));
  if (h.rank >= 0) {
    JsonWriter w;
    w.begin_object();
    if (!d.backend.empty()) w.key("backend").value(d.backend);
    w.key("rank").value(h.rank);
    if (h.world_size > 0) w.key("world_size").value(h.world_size);
    w.end_object();
    w.finish();
    std::string s = w.take();
    while (!s.empty() && s.back() == '\n') s.pop_back();
    t.metadata["distributedInfo"] = s;
  }
  return t;
}

}  // namespace ptprof::detail
