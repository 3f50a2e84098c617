// flight_format.h: the flight recorder's raw dump, in memory and on disk.
//
// The recorder keeps its per-thread rings in memory exactly as a raw dump lays them out, so a
// crash handler writes them with write(2) alone (nothing else is safe in a signal handler), and
// `ptprof` turns the file into a trace later (flight_dump.h). A dump is, in this order:
//
//   FileHeader
//   names          uint32 end offsets [n_names], then name_bytes bytes of text (no NULs needed)
//   per thread     ThreadHeader, then its open ops: Record [stack_entries], outermost first
//   collectives    Record [collective_capacity]: the last collectives entered, any thread
//   rings          (flags & kHasRings) per thread, in the same order: Record [ring_capacity]
//
// Everything before the rings is the dump's digest: what each thread was inside and the last
// collectives, which is all the cross-rank answer reads (a reader stops before the rings).
// Numbers are little-endian, as on every machine ptprof runs on.
//
// A Record is eight 64-bit words. Writers run while readers copy (a dumper thread, or write(2)
// in a crash handler copying front to back), so each record carries its version twice: the
// writer stores kEndSeq odd first, then the data, then kBegin and kEndSeq to the new version.
// A copy is whole exactly when its kBegin and kEndSeq are equal, even and non-zero (a reader
// that saw the new kBegin first saw all the data before it; one that saw the old kEndSeq last
// read nothing new). Ring slot n%capacity holding the n-th record has version 2(n+1), so a
// reader knows each record's place from its version alone.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ptprof::detail::flight {

constexpr char kMagic[8] = {'P', 'T', 'F', 'L', 'I', 'G', 'H', 'T'};
constexpr uint32_t kVersion = 1;

// Why a dump was written.
enum class Reason : uint32_t {
  kApi = 1,         // ptprof::flight_dump()
  kTriggerFile = 2, // DUMP=1 in the on-demand trigger file
  kSignal = 3,      // the opt-in trigger signal
  kHang = 4,        // no step() for the hang threshold, seen by the watchdog
  kCrash = 5,       // a fatal signal: SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT
  kTerminate = 6,   // std::terminate (an uncaught exception), then SIGABRT
  kCollectiveTimeout = 7,  // c10d reported a collective that timed out
};
constexpr uint32_t kMaxReason = 7;
const char* reason_name(uint32_t reason);  // "hang", "crash", ...; "unknown" otherwise
// "SIGSEGV", "SIGBUS", "SIGFPE", "SIGILL", "SIGABRT"; nullptr for another signal. Safe in a
// signal handler.
const char* fatal_signal_name(int sig);

// FileHeader::flags
constexpr uint32_t kHasRings = 1;

// Record words.
enum Word : int {
  kBegin = 0,        // version (see above)
  kStart = 1,        // ticks at entry
  kEnd = 2,          // ticks at exit; 0: not ended (open ops; a collective still running)
  kCorrelation = 3,  // the op's id in the process (External id); collectives: ptprof's count
  kAux = 4,          // ProfilerStep#N: N; a collective: its sequence number (-1: not known)
  kNames = 5,        // name id (low 32 bits) | process group's name id (high 32; kNoName)
  kBits = 6,         // depth (16) | RecordFunction scope (8) | flags (8) | OS thread id (32)
  kEndSeq = 7,       // version again
  kWords = 8,
};
struct Record {
  uint64_t w[kWords];
};
static_assert(sizeof(Record) == 64, "a record is one cache line");

constexpr uint32_t kNoName = 0xFFFFFFFFu;
// A "ProfilerStep#N" range, N in kAux (the recorder's kStepNameId: never interned).
constexpr uint32_t kStepName = 0xFFFFFFFEu;

// Record flags.
constexpr uint8_t kAsync = 1;
constexpr uint8_t kCollective = 2;  // a collective op (c10d::*, record_param_comms, gloo:*, nccl:*)
constexpr uint8_t kAbandoned = 4;   // its exit was never seen (kEnd is when it was given up)
constexpr uint8_t kSeqIsCount = 8;  // kAux is ptprof's count of the process's collectives, not
                                    // the group's sequence number (no group was known)

// RecordFunction's USER_SCOPE (at::RecordScope): ranges, "gloo:*", ProfilerStep#N.
constexpr uint8_t kUserScope = 7;

inline uint64_t pack_names(uint32_t name, uint32_t group) {
  return static_cast<uint64_t>(name) | (static_cast<uint64_t>(group) << 32);
}
inline uint64_t pack_bits(uint32_t depth, uint8_t scope, uint8_t flags, uint32_t tid) {
  return (depth & 0xFFFFu) | (static_cast<uint64_t>(scope) << 16) |
         (static_cast<uint64_t>(flags) << 24) | (static_cast<uint64_t>(tid) << 32);
}
inline uint32_t name_of(const Record& r) { return static_cast<uint32_t>(r.w[kNames]); }
inline uint32_t group_of(const Record& r) { return static_cast<uint32_t>(r.w[kNames] >> 32); }
inline uint32_t depth_of(const Record& r) { return static_cast<uint32_t>(r.w[kBits] & 0xFFFFu); }
inline uint8_t scope_of(const Record& r) { return static_cast<uint8_t>(r.w[kBits] >> 16); }
inline uint8_t flags_of(const Record& r) { return static_cast<uint8_t>(r.w[kBits] >> 24); }
inline uint32_t tid_of(const Record& r) { return static_cast<uint32_t>(r.w[kBits] >> 32); }
// Whether a copy of a record is whole (see above); 0 versions are never-written slots.
inline bool whole(const Record& r) {
  return r.w[kBegin] != 0 && r.w[kBegin] == r.w[kEndSeq] && (r.w[kBegin] & 1) == 0;
}
// The version of the n-th record of a ring (or of a thread's n-th push).
inline uint64_t version_of(uint64_t n) { return 2 * (n + 1); }

struct FileHeader {
  char magic[8];
  uint32_t version;
  uint32_t header_bytes;  // sizeof(FileHeader); a reader refuses any other
  uint32_t reason;        // Reason
  uint32_t flags;         // kHasRings
  int32_t signal;         // a crash's signal number, else 0
  int32_t signal_code;    // its si_code
  uint64_t fault_address; // its si_addr
  int64_t pid;
  int64_t dump_tid;       // the thread that crashed, or that took the dump
  int64_t rank;           // -1: not known
  int64_t world_size;     // -1: not known
  int64_t dump_unix_ns;   // CLOCK_REALTIME when the dump was taken
  int64_t dump_ticks;     // the recorder's clock then
  // The recorder's ticks as Unix ns: with ticks_are_tsc, monotonic ns lie on the line through
  // (tick0, ns0) and (tick1, ns1); otherwise ticks are monotonic ns. Unix = monotonic +
  // unix_offset_ns.
  int64_t tick0;
  int64_t ns0;
  int64_t tick1;
  int64_t ns1;
  int64_t unix_offset_ns;
  uint32_t ticks_are_tsc;
  uint32_t ring_capacity;        // records per thread ring
  int64_t window_ns;             // a trace of the dump keeps what ended this long before it
  int64_t last_step;             // the last step() (-1: none yet)
  int64_t last_step_ticks;       // when it was
  int64_t hang_ns;               // the watchdog's threshold (0: no watchdog)
  uint32_t n_names;
  uint32_t name_bytes;
  uint32_t n_threads;
  uint32_t collective_capacity;  // Records in the collectives section
  uint64_t threads_without_ring; // threads that recorded nothing: every ring was taken
  char worker[128];              // the worker name (NUL-terminated), "<host>_<pid>[_rank<R>]"
  char backend[32];              // "gloo", "nccl", "" when not known
  char message[1024];            // why, in words ("no step() for 5.0 s", the exception's what())
};
static_assert(sizeof(FileHeader) == 1376, "the header's layout is the format's (no padding)");

struct ThreadHeader {
  int64_t os_tid;
  uint64_t logical_tid;  // RecordFunction's thread id
  // Rings outlive their threads and are handed to new ones: the thread's records are those
  // numbered from `first` (older ones were an exited thread's) up to `written`.
  uint64_t first;
  uint64_t written;
  uint64_t dropped;        // ops it could not keep open (deeper than its stack)
  uint32_t stack_depth;    // ops open when the dump was taken (deeper ones are not kept)
  uint32_t stack_entries;  // Records that follow
  uint32_t flags;          // kThreadExited
  uint32_t reserved;
  char name[32];  // pthread name, NUL-terminated
};
static_assert(sizeof(ThreadHeader) == 88, "the thread header's layout is the format's");
constexpr uint32_t kThreadExited = 1;

// Bounds a reader holds a dump to (a recorder writes far less).
constexpr uint32_t kMaxNames = 1u << 22;
constexpr uint32_t kMaxNameBytes = 1u << 28;
constexpr uint32_t kMaxThreads = 1u << 16;
constexpr uint32_t kMaxStackEntries = 1u << 16;
constexpr uint32_t kMaxRingCapacity = 1u << 26;
constexpr uint32_t kMaxCollectives = 1u << 20;

}  // namespace ptprof::detail::flight
