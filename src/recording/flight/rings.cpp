#include "recording/flight/rings.h"

#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <new>

#include "trace/clock.h"

namespace ptprof::detail::flight {

namespace {

int64_t os_tid() {
  return static_cast<int64_t>(::syscall(SYS_gettid));
}

uint32_t round_up_pow2(uint32_t n) {
  uint32_t p = 1;
  while (p < n && p < kMaxRingCapacity) p <<= 1;
  return p;
}

}  // namespace

// ---- ThreadRing -------------------------------------------------------------------------

ThreadRing::ThreadRing(uint32_t capacity, LiveRecord* ring, void* altstack)
    : mask_(capacity - 1), ring_(ring), altstack_(altstack) {}

void ThreadRing::append(uint64_t* words) {
  const uint64_t n = written_.load(std::memory_order_relaxed);
  ring_[n & mask_].store(words, version_of(n));
  written_.store(n + 1, std::memory_order_release);
}

void ThreadRing::pop_to(uint32_t depth, int64_t end_ticks) {
  const uint32_t d = depth_.load(std::memory_order_relaxed);
  if (depth >= d) return;
  for (uint32_t i = d; i-- > depth;) {
    if (i >= kStackCapacity) {
      dropped_.fetch_add(1, std::memory_order_relaxed);  // never had an entry
      continue;
    }
    uint64_t words[kWords];
    for (int k = kStart; k < kEndSeq; ++k) words[k] = stack_[i].get(k);
    words[kEnd] = static_cast<uint64_t>(end_ticks);
    if (i > depth) words[kBits] |= static_cast<uint64_t>(kAbandoned) << 24;
    append(words);
  }
  // After the ring has them: a reader may see an op in both (it keeps the ring's), never in
  // neither.
  depth_.store(depth, std::memory_order_release);
}

void ThreadRing::header(ThreadHeader* out) const {
  std::memset(out, 0, sizeof(*out));
  out->os_tid = os_tid_.load(std::memory_order_relaxed);
  out->logical_tid = logical_tid_.load(std::memory_order_relaxed);
  out->first = first_.load(std::memory_order_acquire);
  out->written = written_.load(std::memory_order_acquire);
  out->dropped = dropped_.load(std::memory_order_relaxed);
  out->stack_depth = depth_.load(std::memory_order_acquire);
  out->stack_entries = std::min(out->stack_depth, kStackCapacity);
  out->flags = exited_.load(std::memory_order_acquire) ? kThreadExited : 0;
  for (int i = 0; i < 4; ++i) {
    const uint64_t w = name_[i].load(std::memory_order_relaxed);
    std::memcpy(out->name + 8 * i, &w, 8);
  }
  out->name[sizeof(out->name) - 1] = '\0';
}

void ThreadRing::snapshot(FlightDumpThread* out, bool ring) const {
  header(&out->header);
  out->name = std::string(out->header.name, strnlen(out->header.name, sizeof(out->header.name)));
  std::vector<Record> entries(out->header.stack_entries);
  for (uint32_t i = 0; i < entries.size(); ++i) stack_[i].load(&entries[i]);
  // Entries pushed and popped meanwhile are kept only where whole and at their depth, as a
  // reader of a file takes them.
  out->open.clear();
  for (uint32_t i = 0; i < entries.size(); ++i)
    if (whole(entries[i]) && depth_of(entries[i]) == i) out->open.push_back(entries[i]);
  out->records.clear();
  if (!ring) return;
  std::vector<Record> slots(capacity());
  for (uint32_t i = 0; i < slots.size(); ++i) ring_[i].load(&slots[i]);
  uint64_t torn = 0;
  out->records = records_in_order(slots, &torn);
  const uint64_t first = version_of(out->header.first);
  out->records.erase(std::remove_if(out->records.begin(), out->records.end(),
                                    [&](const Record& r) { return r.w[kBegin] < first; }),
                     out->records.end());
}

void ThreadRing::adopt(uint64_t logical_tid) {
  const int64_t tid = os_tid();
  os_tid_.store(tid, std::memory_order_relaxed);
  tid32_ = static_cast<uint32_t>(tid);
  logical_tid_.store(logical_tid, std::memory_order_relaxed);
  char name[32] = {0};
  pthread_getname_np(pthread_self(), name, sizeof(name));
  for (int i = 0; i < 4; ++i) {
    uint64_t w;
    std::memcpy(&w, name + 8 * i, 8);
    name_[i].store(w, std::memory_order_relaxed);
  }
  dropped_.store(0, std::memory_order_relaxed);
  depth_.store(0, std::memory_order_relaxed);
  first_.store(written_.load(std::memory_order_relaxed), std::memory_order_release);
  exited_.store(0, std::memory_order_release);
  // A crash on this thread (a stack overflow included) is handled on a stack of its own,
  // unless the thread has one already.
  stack_t current;
  own_altstack_ = false;
  if (altstack_ != nullptr && ::sigaltstack(nullptr, &current) == 0 &&
      (current.ss_flags & SS_DISABLE) != 0) {
    stack_t mine{};
    mine.ss_sp = altstack_;
    mine.ss_size = kAltStackBytes;
    own_altstack_ = ::sigaltstack(&mine, nullptr) == 0;
  }
}

// ---- CollectiveLog ------------------------------------------------------------------------

uint64_t CollectiveLog::enter(uint64_t* words) {
  const uint64_t n = next_.fetch_add(1, std::memory_order_relaxed);
  slots_[n % kCapacity].store(words, version_of(n));
  return n;
}

void CollectiveLog::done(uint64_t n, int64_t end_ticks) {
  LiveRecord& slot = slots_[n % kCapacity];
  if (slot.get(kBegin) != version_of(n)) return;  // kCapacity collectives later: gone
  uint64_t words[kWords];
  for (int k = kStart; k < kEndSeq; ++k) words[k] = slot.get(k);
  words[kEnd] = static_cast<uint64_t>(end_ticks);
  slot.store(words, version_of(n));
}

void CollectiveLog::copy(std::vector<Record>* out) const {
  out->resize(kCapacity);
  for (uint32_t i = 0; i < kCapacity; ++i) slots_[i].load(&(*out)[i]);
}

// ---- Rings --------------------------------------------------------------------------------

thread_local ThreadRing* Rings::tl_ring_ = nullptr;

namespace {
// Set for a thread that took a ring: its destructor gives the ring back.
struct RingOwner {
  ~RingOwner();
};
thread_local RingOwner tl_owner;
}  // namespace

Rings& Rings::get() {
  static Rings* r = new Rings();  // leaked: crash handlers read it until the very end
  return *r;
}

Rings::Rings() {
  pthread_atfork(nullptr, nullptr, &Rings::after_fork_in_child);
}

bool Rings::configure(const RingConfig& config) {
  std::lock_guard<std::mutex> lock(mu_);
  RingConfig c = config;
  c.capacity = round_up_pow2(std::max<uint32_t>(c.capacity, 16));
  c.max_threads = std::clamp<uint32_t>(c.max_threads, 1, kMaxRings);
  if (!configured_) {
    config_ = c;
    configured_ = true;
    return true;
  }
  return c.capacity == config_.capacity && c.max_threads == config_.max_threads;
}

RingConfig Rings::config() const {
  std::lock_guard<std::mutex> lock(mu_);
  return config_;
}

ThreadRing* Rings::acquire(uint64_t logical_tid) {
  ThreadRing* ring = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!configured_) return nullptr;
    const uint32_t n = count_.load(std::memory_order_relaxed);
    if (n < config_.max_threads) {
      const std::size_t bytes = std::size_t{config_.capacity} * sizeof(LiveRecord);
      // Reserved now, committed as the ring fills; zero pages read as never-written records.
      void* mem = ::mmap(nullptr, bytes + ThreadRing::kAltStackBytes, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (mem != MAP_FAILED) {
        ring = new (std::nothrow) ThreadRing(config_.capacity, static_cast<LiveRecord*>(mem),
                                             static_cast<char*>(mem) + bytes);
        if (ring == nullptr) ::munmap(mem, bytes + ThreadRing::kAltStackBytes);
      }
      if (ring != nullptr) {
        ring->adopt(logical_tid);
        rings_[n] = ring;
        count_.store(n + 1, std::memory_order_release);
      }
    } else {
      // The ring of the thread that exited first.
      for (uint32_t i = 0; i < n; ++i) {
        ThreadRing* r = rings_[i];
        if (!r->exited_.load(std::memory_order_acquire)) continue;
        if (ring == nullptr || r->exited_at_.load(std::memory_order_relaxed) <
                                   ring->exited_at_.load(std::memory_order_relaxed))
          ring = r;
      }
      if (ring != nullptr) ring->adopt(logical_tid);
    }
    if (ring == nullptr) {
      without_.fetch_add(1, std::memory_order_relaxed);
      return nullptr;
    }
  }
  (void)&tl_owner;  // instantiates the exit hook for this thread
  tl_ring_ = ring;
  return ring;
}

void Rings::release() {
  ThreadRing* r = tl_ring_;
  if (r == nullptr) return;
  tl_ring_ = nullptr;
  if (r->own_altstack_) {
    stack_t off{};
    off.ss_flags = SS_DISABLE;
    ::sigaltstack(&off, nullptr);
    r->own_altstack_ = false;
  }
  r->exited_at_.store(now_ticks(), std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(get().mu_);  // ordered with acquire()'s reuse
  r->exited_.store(1, std::memory_order_release);
}

RingOwner::~RingOwner() {
  Rings::release();
}

void Rings::after_fork_in_child() {
  // Only the forking thread goes on in the child: the other rings' threads are gone.
  Rings& self = get();
  new (&self.mu_) std::mutex();  // another thread may have held it at the fork
  const uint32_t n = self.count_.load(std::memory_order_acquire);
  for (uint32_t i = 0; i < n; ++i) {
    ThreadRing* r = self.rings_[i];
    if (r == tl_ring_) {
      r->os_tid_.store(os_tid(), std::memory_order_relaxed);
      r->tid32_ = static_cast<uint32_t>(os_tid());
    } else {
      r->exited_.store(1, std::memory_order_release);
    }
  }
}

}  // namespace ptprof::detail::flight
