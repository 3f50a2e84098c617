// rings.h: the flight recorder's memory: one ring per recording thread holding its last ops,
// the stack of ops it has open, and one log of the collectives the process entered.
//
// - The owner thread alone writes its ring and stack, lock-free and allocation-free: an op's
//   entry is written into the stack when it begins (so a dump can say what the thread is
//   inside, and for how long), and into the ring, whole, when it ends; the oldest record is
//   overwritten. Readers (a dumper thread, a crash handler) copy while writers run
//   (live_record.h).
// - Memory is fixed: rings are allocated when a thread first records, at most max_threads of
//   them, never freed. A ring outlives its thread (a dump still shows what an exited thread
//   did) and is handed to a new thread once no ring is free.
// - Threads that find no ring record nothing and are counted.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include "recording/flight/live_record.h"
#include "trace/flight_dump.h"

namespace ptprof::detail::flight {

struct RingConfig {
  uint32_t capacity = 1u << 16;  // records per thread (rounded up to a power of two)
  uint32_t max_threads = 64;
};

class ThreadRing {
 public:
  static constexpr uint32_t kStackCapacity = 128;  // open ops kept; deeper ones are counted
  static constexpr std::size_t kAltStackBytes = 64 * 1024;

  // ---- the owner thread's ----
  // An op begins; it is the innermost open op until it ends.
  void push(uint32_t name, uint32_t group, int64_t aux, uint8_t scope, uint8_t flags,
            uint64_t correlation, int64_t start_ticks) {
    const uint32_t d = depth_.load(std::memory_order_relaxed);
    if (__builtin_expect(d < kStackCapacity, 1)) {
      uint64_t words[kWords];
      words[kStart] = static_cast<uint64_t>(start_ticks);
      words[kEnd] = 0;
      words[kCorrelation] = correlation;
      words[kAux] = static_cast<uint64_t>(aux);
      words[kNames] = pack_names(name, group);
      words[kBits] = pack_bits(d, scope, flags, tid32_);
      stack_[d].store(words, version_of(pushes_++));
    }
    depth_.store(d + 1, std::memory_order_release);
  }
  // The op open at `depth` ends; those open above it were abandoned (their ends will not
  // come to this thread) and go to the ring unfinished.
  void pop_to(uint32_t depth, int64_t end_ticks);
  void pop(int64_t end_ticks) {
    const uint32_t d = depth_.load(std::memory_order_relaxed);
    if (d > 0) pop_to(d - 1, end_ticks);
  }
  uint32_t depth() const { return depth_.load(std::memory_order_relaxed); }

  // ---- readers ----
  // The ring's state as a dump's thread: header, open ops, and the ring when `ring`.
  void snapshot(FlightDumpThread* out, bool ring) const;
  // For the crash handler's raw copy.
  void header(ThreadHeader* out) const;
  const LiveRecord* stack() const { return stack_; }
  const LiveRecord* ring() const { return ring_; }
  uint32_t capacity() const { return mask_ + 1; }

 private:
  friend class Rings;
  ThreadRing(uint32_t capacity, LiveRecord* ring, void* altstack);
  void append(uint64_t* words);
  void adopt(uint64_t logical_tid);  // a thread takes the ring (owner)

  const uint32_t mask_;
  LiveRecord* const ring_;
  void* const altstack_;
  std::atomic<uint64_t> written_{0};
  std::atomic<uint64_t> first_{0};
  std::atomic<uint64_t> dropped_{0};
  std::atomic<uint32_t> depth_{0};
  std::atomic<uint32_t> exited_{0};
  std::atomic<int64_t> os_tid_{0};
  std::atomic<uint64_t> logical_tid_{0};
  std::atomic<int64_t> exited_at_{0};  // ticks; which exited ring to hand out first
  uint32_t tid32_ = 0;
  uint64_t pushes_ = 1;  // versions of stack entries, never repeated for the ring's life
  bool own_altstack_ = false;
  // The owner's pthread name, as words a dumper may read while a new owner writes them.
  std::atomic<uint64_t> name_[4] = {};
  LiveRecord stack_[kStackCapacity];
};

// The collectives the process entered, any thread, the last kCapacity of them.
class CollectiveLog {
 public:
  static constexpr uint32_t kCapacity = 256;
  // A collective entered (words as a record's); its number, for done().
  uint64_t enter(uint64_t* words);
  // The collective `n` returned (its entering thread, `end_ticks`).
  void done(uint64_t n, int64_t end_ticks);
  // Copies of the slots, as a dump's collectives section holds them.
  void copy(std::vector<Record>* out) const;
  const LiveRecord* slots() const { return slots_; }

 private:
  LiveRecord slots_[kCapacity];
  std::atomic<uint64_t> next_{0};
};

// The last step() and when it came (ticks): what the watchdog and every dump read.
inline std::atomic<int64_t> g_last_step{-1};
inline std::atomic<int64_t> g_last_step_ticks{0};

class Rings {
 public:
  static Rings& get();

  // The rings' size; the first call wins (rings are never reallocated), later ones with
  // other sizes return false.
  bool configure(const RingConfig& config);
  RingConfig config() const;

  // The calling thread's ring, taken at its first op. nullptr when every ring is taken.
  ThreadRing* this_thread(uint64_t logical_tid) {
    ThreadRing* r = tl_ring_;
    return __builtin_expect(r != nullptr, 1) ? r : acquire(logical_tid);
  }

  // Lock-free, for dumpers and the crash handler: rings [0, count()) are valid.
  uint32_t count() const { return count_.load(std::memory_order_acquire); }
  const ThreadRing* at(uint32_t i) const { return rings_[i]; }
  uint64_t threads_without_ring() const { return without_.load(std::memory_order_relaxed); }
  CollectiveLog& collectives() { return log_; }
  const CollectiveLog& collectives() const { return log_; }

  static constexpr uint32_t kMaxRings = 4096;

  // The calling thread gives its ring back (at its exit; a later thread may take it).
  static void release();

 private:
  Rings();
  ThreadRing* acquire(uint64_t logical_tid);
  static void after_fork_in_child();

  static thread_local ThreadRing* tl_ring_;
  mutable std::mutex mu_;
  RingConfig config_;
  bool configured_ = false;
  ThreadRing* rings_[kMaxRings] = {};
  std::atomic<uint32_t> count_{0};
  std::atomic<uint64_t> without_{0};
  CollectiveLog log_;
};

}  // namespace ptprof::detail::flight
