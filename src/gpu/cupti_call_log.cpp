#include "gpu/cupti_call_log.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>

namespace ptprof::detail {

struct CallLog::Chunk {
  HostCall calls[kChunkCalls];
  std::atomic<uint32_t> count{0};  // published calls; written by the owning thread only
  std::atomic<Chunk*> next{nullptr};
};

struct CallLog::ThreadLog {
  int64_t tid = 0;
  Chunk* tail = nullptr;  // the writer's chunk
  Chunk* head = nullptr;  // the reader's: the oldest chunk not read to its end
  uint32_t read_pos = 0;  // in head
  std::atomic<bool> exited{false};
};

namespace {

thread_local CallLog::ThreadLog* tl_log = nullptr;
thread_local bool tl_dead = false;  // past ExitMark's destructor: record nothing more

// Marks the thread's log when the thread ends, so the reader can free it once read.
struct ExitMark {
  bool armed = false;
  ~ExitMark() {
    if (!armed || tl_log == nullptr) return;
    // Forgotten first: once marked, the reader may free it, and a CUDA call made later in
    // this thread's teardown must not write into it (it is counted as dropped instead).
    CallLog::ThreadLog* t = tl_log;
    tl_log = nullptr;
    tl_dead = true;
    t->exited.store(true, std::memory_order_release);
  }
};
thread_local ExitMark tl_exit;

}  // namespace

CallLog& CallLog::get() {
  static CallLog* log = new CallLog();  // leaked: threads may record during exit
  return *log;
}

void CallLog::reserve(std::size_t chunks, std::size_t max_chunks) {
  std::lock_guard<std::mutex> lock(mu_);
  max_chunks_ = std::max(max_chunks, chunks);
  while (allocated_ < chunks) {
    free_.push_back(new Chunk());
    ++allocated_;
  }
}

CallLog::Chunk* CallLog::take_chunk() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!free_.empty()) {
    Chunk* c = free_.back();
    free_.pop_back();
    return c;
  }
  if (allocated_ >= max_chunks_) return nullptr;
  ++allocated_;
  return new Chunk();
}

void CallLog::give_back(Chunk* c) {
  c->count.store(0, std::memory_order_relaxed);
  c->next.store(nullptr, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(mu_);
  free_.push_back(c);
}

CallLog::ThreadLog* CallLog::register_thread() {
  Chunk* first = take_chunk();
  if (first == nullptr) return nullptr;
  auto* t = new ThreadLog();
  t->tid = static_cast<int64_t>(::syscall(SYS_gettid));
  t->tail = t->head = first;
  {
    std::lock_guard<std::mutex> lock(mu_);
    threads_.push_back(t);
  }
  tl_log = t;
  tl_exit.armed = true;
  return t;
}

void CallLog::append(const HostCall& call) {
  ThreadLog* t = tl_log;
  if (__builtin_expect(t == nullptr, 0)) {
    t = tl_dead ? nullptr : register_thread();
    if (t == nullptr) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
  }
  Chunk* c = t->tail;
  uint32_t n = c->count.load(std::memory_order_relaxed);
  if (__builtin_expect(n == kChunkCalls, 0)) {
    Chunk* fresh = take_chunk();
    if (fresh == nullptr) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    c->next.store(fresh, std::memory_order_release);
    t->tail = c = fresh;
    n = 0;
  }
  c->calls[n] = call;
  c->count.store(n + 1, std::memory_order_release);
}

void CallLog::read(int64_t until, const std::function<void(int64_t, const HostCall&)>& fn) {
  std::vector<ThreadLog*> threads;
  {
    std::lock_guard<std::mutex> lock(mu_);
    threads = threads_;
  }
  std::vector<ThreadLog*> finished;
  for (ThreadLog* t : threads) {
    // Everything an ended thread wrote is visible once its mark is.
    const bool ended = t->exited.load(std::memory_order_acquire);
    Chunk* c = t->head;
    uint32_t pos = t->read_pos;
    bool stopped = false;
    for (;;) {
      const uint32_t n = c->count.load(std::memory_order_acquire);
      for (; pos < n; ++pos) {
        const HostCall& call = c->calls[pos];
        if (call.start > until) {
          stopped = true;
          break;
        }
        if (fn) fn(t->tid, call);
      }
      if (stopped || n < kChunkCalls) break;
      // A full chunk: the writer has moved on once `next` is set, and never comes back.
      Chunk* next = c->next.load(std::memory_order_acquire);
      if (next == nullptr) break;
      give_back(c);
      c = next;
      pos = 0;
    }
    t->head = c;
    t->read_pos = pos;
    if (ended && !stopped && pos == c->count.load(std::memory_order_acquire))
      finished.push_back(t);
  }
  if (finished.empty()) return;
  for (ThreadLog* t : finished) give_back(t->head);
  std::lock_guard<std::mutex> lock(mu_);
  for (ThreadLog* t : finished) {
    threads_.erase(std::find(threads_.begin(), threads_.end(), t));
    delete t;
  }
}

void CallLog::discard() {
  read(INT64_MAX, nullptr);
}

uint64_t CallLog::take_dropped() {
  return dropped_.exchange(0, std::memory_order_relaxed);
}

std::size_t CallLog::pooled_chunks() const {
  std::lock_guard<std::mutex> lock(mu_);
  return free_.size();
}

std::size_t CallLog::allocated_chunks() const {
  std::lock_guard<std::mutex> lock(mu_);
  return allocated_;
}

}  // namespace ptprof::detail
