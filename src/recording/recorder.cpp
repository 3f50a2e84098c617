#include "recording/recorder.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <string_view>

#include <ATen/record_function.h>
#include <c10/core/Allocator.h>

#include "ptprof/event.h"

#include "recording/collective_args.h"
#include "recording/details.h"
#include "recording/flight/collectives.h"
#include "recording/flight/names.h"
#include "recording/flight/rings.h"
#include "recording/input_encoder.h"
#include "recording/memory_reporter.h"
#include "recording/name_cache.h"
#include "recording/stack_capture.h"
#include "trace/clock.h"
#include "trace/flops.h"

namespace ptprof::detail {
namespace {

// The hot-path record. end_ns is atomic because the collector may read it while the owner
// thread ends the op (an op that spans the end of a window).
struct Slot {
  int64_t start;  // ticks
  std::atomic<int64_t> end;
  uint64_t correlation;
  uint64_t bytes;  // memory records; unused by ops
  int64_t seq_nr;
  uint64_t fwd_tid;
  uint32_t name_id;
  uint8_t scope;
  uint8_t flags;
};
static_assert(sizeof(Slot) <= 64, "keep a recorded op within 64 bytes");

constexpr uint32_t kChunkSlots = 2048;
struct Chunk {
  Slot slots[kChunkSlots];
  Chunk* next;
};

// The detail arena: blocks of bytes, each record's details as u32 length + payload, in the
// order of the records that carry kFlagDetails, so the reader finds them by walking both in
// step. A record moves whole to the next block when it does not fit; a length of kNextBlock
// (or a tail too short for a length) says the walk goes on in the next block.
constexpr uint32_t kDetailBlockBytes = 256 * 1024;
constexpr uint32_t kNextBlock = 0xffffffffu;
constexpr std::size_t kDetailPrefetchBytes = 512;
static_assert(kMaxDetailBytes <= UINT16_MAX, "RawRecord::details_len holds a record's length");
struct DetailBlock {
  DetailBlock* next;
  uint32_t used;
  char data[kDetailBlockBytes];
};

constexpr uint32_t kNoGen = 0xffffffffu;

// One window's records of one thread: a list of chunks filled front to back.
struct Half {
  std::atomic<uint32_t> gen{kNoGen};
  std::atomic<uint32_t> size{0};  // published records
  Chunk* head = nullptr;          // written by the owner before a size that reaches it
  DetailBlock* detail_head = nullptr;
};

// ---- global state ----------------------------------------------------------------------

std::atomic<uint32_t> g_gen{0};
std::atomic<bool> g_recording{false};
// The flight recorder's rings are written (flight/rings.h), with or without a window.
std::atomic<bool> g_flight{false};
// Budget of the current window, in records (each window_bytes_per_record()).
std::atomic<int64_t> g_window_slots_left{0};
std::atomic<uint64_t> g_next_corr_block{0};
std::atomic<CorrelationHook> g_push_hook{nullptr};
std::atomic<CorrelationHook> g_pop_hook{nullptr};
// Capture options of the installed callback; written only while no callback is installed.
// Atomics (relaxed: a plain load on x86) because a callback removed by at::removeCallback
// may still be running on another thread when the next install() writes them.
std::atomic<bool> g_capture_inputs{false};
std::atomic<bool> g_inputs_for_flops_only{false};  // with_flops alone: see record_details
std::atomic<bool> g_capture_any_details{false};    // inputs or stacks
std::atomic<bool> g_capture_stacks{false};
std::atomic<int> g_stack_depth{64};
constexpr auto kRelaxed = std::memory_order_relaxed;
std::atomic<bool> g_capture_memory{false};
constexpr uint64_t kCorrBlock = 1 << 16;

struct ThreadState {
  Half halves[2];
  uint32_t seen_gen = kNoGen;
  // Cursor into the current half (owner only).
  Half* cur = nullptr;
  Chunk* cur_chunk = nullptr;
  uint32_t cur_size = 0;
  uint32_t chunk_pos = kChunkSlots;
  uint32_t cur_capacity = 0;  // slots claimed from the window budget
  uint64_t next_corr = 0;
  uint64_t corr_end = 0;
  std::atomic<uint64_t> dropped{0};         // ops and ranges not recorded
  std::atomic<uint64_t> dropped_memory{0};  // memory events not recorded
  std::atomic<bool> exited{false};
  int64_t os_tid = 0;
  uint64_t logical_tid = 0;
  char thread_name[32] = {0};
  Chunk* spare = nullptr;  // chunks of an old window, reused before allocating
  DetailBlock* cur_block = nullptr;
  DetailBlock* spare_blocks = nullptr;
  NameCache names;
  // with_stack: the stacks of the ops open here (stack_capture.h), for stacks up to
  // stack_memo_cap frames.
  StackMemo* stack_memo = nullptr;
  int stack_memo_cap = 0;

  // The flight recorder's ring of this thread (nullptr: none yet, or none free), and how many
  // ops go by before a thread without one asks again (asking takes the rings' lock).
  flight::ThreadRing* ring = nullptr;
  uint32_t ring_retry = 0;

  // Ops that have started and not ended on this thread, innermost last. The exit callback
  // finds its record here by the RecordFunction's address instead of through an ObserverContext,
  // which would cost an allocation per op.
  struct Open {
    Slot* slot;  // nullptr: in the flight recorder's ring only
    const at::RecordFunction* fn;  // identifies the op at its exit (the object lives across both)
    uint32_t gen;
    bool pushed;  // an external correlation id was pushed and must be popped
    uint64_t correlation;
    uint32_t ring_depth;  // its depth in the ring's stack; kNotInRing
    uint64_t log;         // a collective: its number in the rings' log + 1; 0: none
  };
  static constexpr uint32_t kNotInRing = 0xFFFFFFFFu;
  static constexpr uint32_t kMaxOpen = 1024;
  Open open[kMaxOpen];
  uint32_t open_n = 0;

  ~ThreadState() {
    for (Half& h : halves) {
      free_list(h.head);
      free_list(h.detail_head);
    }
    free_list(spare);
    free_list(spare_blocks);
    delete_stack_memo(stack_memo);
  }
  static void free_list(Chunk* c) {
    while (c) {
      Chunk* n = c->next;
      delete c;
      c = n;
    }
  }
  static void free_list(DetailBlock* b) {
    while (b) {
      DetailBlock* n = b->next;
      delete b;
      b = n;
    }
  }
  template <typename T>
  static void splice(T*& list, T*& onto) {
    if (!list) return;
    T* last = list;
    while (last->next) last = last->next;
    last->next = onto;
    onto = list;
    list = nullptr;
  }

  // Starts writing generation g: the half for g is reset (its chunks become spares).
  void rotate(uint32_t g) {
    Half& h = halves[g & 1];
    // Nobody reads this half now: its last generation (g - 2 or older) was collected
    // synchronously before the generation moved past it.
    splice(h.head, spare);
    splice(h.detail_head, spare_blocks);
    cur_block = nullptr;
    h.size.store(0, std::memory_order_relaxed);
    h.gen.store(g, std::memory_order_release);
    cur = &h;
    cur_chunk = nullptr;
    cur_size = 0;
    chunk_pos = kChunkSlots;
    cur_capacity = 0;
    seen_gen = g;
  }

  // Next free slot of the current half, or nullptr when the window budget is spent.
  Slot* next_slot() {
    if (chunk_pos == kChunkSlots) {
      if (g_window_slots_left.fetch_sub(kChunkSlots, std::memory_order_relaxed) < kChunkSlots) {
        g_window_slots_left.fetch_add(kChunkSlots, std::memory_order_relaxed);
        return nullptr;
      }
      Chunk* c = spare;
      if (c) {
        spare = c->next;
      } else {
        c = new (std::nothrow) Chunk;  // no zeroing: every slot is written before use
        if (!c) return nullptr;
      }
      c->next = nullptr;
      // Linked before the size that covers it is published.
      if (cur_chunk)
        cur_chunk->next = c;
      else
        cur->head = c;
      cur_chunk = c;
      chunk_pos = 0;
    }
    return &cur_chunk->slots[chunk_pos];
  }

  // Where the current slot's details go: past a u32 length in the current block (or a fresh
  // one), with `*cap` bytes of room, at most kMaxDetailBytes. nullptr: the record keeps none.
  char* detail_room(bool fresh_block, std::size_t* cap) {
    if (cur_block == nullptr || fresh_block || cur_block->used + 4 > kDetailBlockBytes) {
      DetailBlock* b = spare_blocks;
      if (b) {
        spare_blocks = b->next;
      } else {
        // Counted as the records its bytes would hold: details grow in the Trace as records do.
        constexpr int64_t kBlockRecords = kDetailBlockBytes / sizeof(Slot);
        if (g_window_slots_left.fetch_sub(kBlockRecords, std::memory_order_relaxed) <
            kBlockRecords) {
          g_window_slots_left.fetch_add(kBlockRecords, std::memory_order_relaxed);
          return nullptr;
        }
        b = new (std::nothrow) DetailBlock;
        if (!b) return nullptr;
      }
      b->next = nullptr;
      b->used = 0;
      if (cur_block) {
        if (cur_block->used + 4 <= kDetailBlockBytes)
          std::memcpy(cur_block->data + cur_block->used, &kNextBlock, 4);
        cur_block->next = b;
      } else {
        cur->detail_head = b;
      }
      cur_block = b;
    }
    *cap = std::min<std::size_t>(kDetailBlockBytes - cur_block->used - 4, kMaxDetailBytes);
    return cur_block->data + cur_block->used + 4;
  }
  // Keeps the `n` bytes written at detail_room() as the current slot's details.
  void commit_details(uint32_t n) {
    std::memcpy(cur_block->data + cur_block->used, &n, 4);
    cur_block->used += n + 4;
  }

  void publish() {
    ++chunk_pos;
    cur->size.store(++cur_size, std::memory_order_release);
  }

  uint64_t next_correlation() {
    if (next_corr == corr_end) {
      next_corr = 1 + kCorrBlock * g_next_corr_block.fetch_add(1, std::memory_order_relaxed);
      corr_end = next_corr + kCorrBlock;
    }
    return next_corr++;
  }
};

struct Registry {
  std::mutex mu;
  std::vector<ThreadState*> threads;
};
Registry& registry() {
  static Registry* r = new Registry();  // leaked: callbacks may run during static destruction
  return *r;
}

thread_local ThreadState* tl_state = nullptr;

// Marks the thread's state as exited when the thread ends; the state is freed by the
// collector (which may still need its records) or right away when no window needs it.
struct ThreadExit {
  ~ThreadExit() {
    ThreadState* ts = tl_state;
    if (!ts) return;
    tl_state = nullptr;
    std::lock_guard<std::mutex> lock(registry().mu);
    ts->exited.store(true, std::memory_order_release);
  }
};
thread_local ThreadExit tl_exit;

ThreadState* register_thread() {
  auto* ts = new (std::nothrow) ThreadState();
  if (!ts) return nullptr;
  ts->os_tid = static_cast<int64_t>(::syscall(SYS_gettid));
  ts->logical_tid = at::RecordFunction::currentThreadId();
  pthread_getname_np(pthread_self(), ts->thread_name, sizeof(ts->thread_name));
  {
    std::lock_guard<std::mutex> lock(registry().mu);
    registry().threads.push_back(ts);
  }
  (void)&tl_exit;  // instantiates the thread-exit hook for this thread
  tl_state = ts;
  return ts;
}

// ---- details: op inputs (input_encoder.h) and native stacks ------------------------

// Frames a capture asks for: ptprof's own frames come first; a few spare slots keep
// `depth_limit` for the rest, and one more than kept tells a cut stack.
constexpr int kOwnMax = 6;
int stack_capture_cap(int depth_limit) {
  return std::min(depth_limit + kOwnMax + 1, 256);
}

// The stack section, like encode_inputs. `from`: on_enter's registers, where the unwind
// starts (ptprof's own frames below it are not walked). Where the fast unwinder cannot run,
// the frames start in ptprof: `caller_pc`, the return address into on_enter, is exactly the
// pc the unwinder reports for on_enter's frame, and everything up to it is ptprof's own (code
// size and inlining aside). `memo` and `op`: see capture_stack_nested.
__attribute__((noinline)) char* encode_stack(char* p, char* end, int depth_limit,
                                             const void* caller_pc, StackMemo* memo,
                                             const NestedOp& op, const UnwindStart& from) {
  // The frames are captured straight into the record, after the header and the padding that
  // aligns them: no copy from a buffer of their own (that copy was 8% of what with_stack adds
  // to bench_step --model deep's step, callgrind). The room is checked for every frame the
  // capture may return, before it runs.
  const int cap = stack_capture_cap(depth_limit);
  const std::size_t pad = (8 - (reinterpret_cast<uintptr_t>(p) + 2) % 8) % 8;
  if (end - p < static_cast<std::ptrdiff_t>(2 + pad + static_cast<std::size_t>(cap) * 8))
    return nullptr;
  void** const frames = reinterpret_cast<void**>(p + 2 + pad);
  const int n = capture_stack_nested(frames, cap, memo, op, &from);
  const auto want = reinterpret_cast<uintptr_t>(caller_pc);
  int skip = 0;
  for (int i = 0; i < std::min(n, kOwnMax); ++i) {
    const auto pc = reinterpret_cast<uintptr_t>(frames[i]);
    if (pc == want || pc + 1 == want) {
      skip = i + 1;
      break;
    }
  }
  const int kept = std::min(n - skip, depth_limit);
  if (skip > 0) std::memmove(frames, frames + skip, static_cast<std::size_t>(kept) * 8);
  p[0] = static_cast<char>(static_cast<uint8_t>(kept));
  p[1] = static_cast<char>(encode_stack_flags(n - skip > depth_limit, pad));
  return p + 2 + pad + static_cast<std::size_t>(kept) * 8;
}

// Encodes straight into the thread's detail arena. When the current block's tail is too
// short for this record, it is encoded once more at the start of a fresh block. A record
// whose details could not be kept goes without kFlagDetails.
__attribute__((noinline)) void record_details(ThreadState* ts, Slot* s,
                                              const at::RecordFunction& fn, uint8_t traits,
                                              const UnwindStart& from) {
  // with_flops without record_shapes: the inputs of ops with a FLOP formula only; the others
  // have nothing to keep unless with_stack is on.
  const bool inputs = g_capture_inputs.load(kRelaxed) &&
                      (!g_inputs_for_flops_only.load(kRelaxed) || (traits & kTraitFlops));
  if (!inputs && !g_capture_stacks.load(kRelaxed)) return;
  for (bool fresh_block : {false, true}) {
    std::size_t cap = 0;
    char* const buf = ts->detail_room(fresh_block, &cap);
    if (buf == nullptr) break;
    char* const end = buf + cap;
    // The arena is written once and read at window close, a new cache line every other op or
    // so; asking for the line a few records ahead hides the write miss (bench_overhead:
    // ptprof_shapes ~9 ns/op less; the same for the records' chunks changed nothing).
    if (cap > kDetailPrefetchBytes) __builtin_prefetch(buf + kDetailPrefetchBytes, 1);
    char* p = buf;
    if (inputs) {
      p = encode_inputs(p, end, fn.inputs());
    } else if (p < end) {
      *p++ = static_cast<char>(kNotCaptured);
    } else {
      p = nullptr;
    }
    // Without with_stack the stack section is left out (the reader takes none).
    if (p != nullptr && g_capture_stacks.load(kRelaxed)) {
      const int depth = g_stack_depth.load(kRelaxed);
      if (__builtin_expect(ts->stack_memo_cap < stack_capture_cap(depth), 0)) {
        delete_stack_memo(ts->stack_memo);  // made for other options, or not made yet
        ts->stack_memo = new_stack_memo(stack_capture_cap(depth));
        ts->stack_memo_cap = ts->stack_memo ? stack_capture_cap(depth) : 0;
      }
      NestedOp op;
      op.level = ts->open_n;
      op.parent_id = ts->open_n > 0 ? ts->open[ts->open_n - 1].correlation : 0;
      op.id = s->correlation;
      op.owner = &fn;
      p = encode_stack(p, end, depth, __builtin_return_address(0), ts->stack_memo, op, from);
    }
    if (p != nullptr) {
      ts->commit_details(static_cast<uint32_t>(p - buf));
      s->flags |= kFlagDetails;
      return;
    }
    if (cap == kMaxDetailBytes) break;  // too big for any block
  }
}

// ---- collectives -----------------------------------------------------------------------
// A collective's arguments go to one shared list, not the per-thread arena: a collective is
// rare (one per gradient bucket and step) and costs far more than this lock and allocation.

struct CollectiveRecord {
  uint32_t gen;
  uint64_t correlation;
  CollectiveInfo info;
};
std::mutex& collectives_mu() {
  static auto* m = new std::mutex();  // leaked, as the registry
  return *m;
}
std::vector<CollectiveRecord>& collective_records() {
  static auto* v = new std::vector<CollectiveRecord>();
  return *v;
}

__attribute__((noinline)) void record_collective(const at::RecordFunction& fn, uint32_t gen,
                                                 uint64_t correlation) {
  CollectiveInfo info;
  if (!collective_args(fn, g_capture_inputs.load(kRelaxed), &info)) return;
  try {
    std::lock_guard<std::mutex> lock(collectives_mu());
    collective_records().push_back(CollectiveRecord{gen, correlation, std::move(info)});
  } catch (...) {  // out of memory: the op is still recorded, without its arguments
  }
}

// ---- the flight recorder's rings --------------------------------------------------------
// The rings' records name ops by the recorder's name ids, ProfilerStep#N ranges included.
static_assert(kStepNameId == flight::kStepName, "one id for ProfilerStep#N in both");

flight::ThreadRing* flight_ring(ThreadState* ts) {
  if (__builtin_expect(ts->ring != nullptr, 1)) return ts->ring;
  if (ts->ring_retry > 0) {  // every ring was taken: ask again later, not at each op
    --ts->ring_retry;
    return nullptr;
  }
  ts->ring = flight::Rings::get().this_thread(ts->logical_tid);
  if (ts->ring == nullptr) ts->ring_retry = 4096;
  return ts->ring;
}

// A collective enters the rings' log with its group and sequence number (its arguments read
// as the window reads them; without op inputs, the default group's count).
__attribute__((noinline)) flight::CollectiveMark flight_collective(const at::RecordFunction& fn,
                                                                   uint32_t name_id,
                                                                   uint64_t correlation,
                                                                   int64_t start, uint32_t tid) {
  CollectiveInfo info;
  const bool known = is_collective_name(fn.name()) &&
                     collective_args(fn, g_capture_inputs.load(kRelaxed), &info);
  return flight::enter_collective(fn.name(), name_id, known ? &info : nullptr, &intern_name,
                                  correlation, start, tid, static_cast<uint8_t>(fn.scope()));
}

// The op enters its thread's ring (its stack of open ops); `*o` remembers where.
inline void flight_enter(ThreadState* ts, const at::RecordFunction& fn, uint32_t name_id,
                         uint8_t traits, int64_t step, ThreadState::Open* o, int64_t start) {
  flight::ThreadRing* r = flight_ring(ts);
  if (__builtin_expect(r == nullptr, 0)) return;
  uint32_t group = flight::kNoName;
  int64_t aux = name_id == kStepNameId ? step : -1;
  uint8_t flags = fn.isAsync() ? flight::kAsync : 0;
  if (__builtin_expect(traits & kTraitFlightCollective, 0)) {
    const flight::CollectiveMark m = flight_collective(
        fn, name_id, o->correlation, start, static_cast<uint32_t>(ts->os_tid));
    group = m.group;
    aux = m.seq;
    flags |= m.flags;
    o->log = m.log + 1;
  }
  o->ring_depth = r->depth();
  r->push(name_id, group, aux, static_cast<uint8_t>(fn.scope()), flags, o->correlation, start);
}

// ---- the callbacks ---------------------------------------------------------------------

std::unique_ptr<at::ObserverContext> on_enter(const at::RecordFunction& fn) {
  const bool window = g_recording.load(std::memory_order_relaxed);
  const bool flight = g_flight.load(std::memory_order_relaxed);
  if (!window && !flight) return nullptr;
  ThreadState* ts = tl_state;
  if (__builtin_expect(ts == nullptr, 0)) {
    ts = register_thread();
    if (!ts) return nullptr;
  }
  if (__builtin_expect(ts->open_n == ThreadState::kMaxOpen, 0)) {
    // Full: what sits at the bottom is ops whose exit ran on another thread (a ProfilerStep
    // range ended by step() on another thread, async ops) and will never pop here. Drop the
    // older half; an op among them that does end later just stays unfinished.
    constexpr uint32_t kKeep = ThreadState::kMaxOpen / 2;
    // The external correlation stack mirrors this one: unwind it and push the kept ids
    // again, so neither keeps what was dropped.
    CorrelationHook pop = g_pop_hook.load(std::memory_order_relaxed);
    CorrelationHook push = g_push_hook.load(std::memory_order_relaxed);
    for (uint32_t i = ThreadState::kMaxOpen; i-- > 0;)
      if (ts->open[i].pushed && pop) pop(0);
    std::memmove(ts->open, ts->open + (ThreadState::kMaxOpen - kKeep),
                 kKeep * sizeof(ThreadState::Open));
    ts->open_n = kKeep;
    for (uint32_t i = 0; i < kKeep; ++i) {
      ThreadState::Open& o = ts->open[i];
      o.pushed = o.pushed && push != nullptr && pop != nullptr;
      if (o.pushed) push(o.correlation);
    }
  }
  uint32_t g = kNoGen;
  Slot* s = nullptr;
  if (window) {
    g = g_gen.load(std::memory_order_acquire);
    if (__builtin_expect(ts->seen_gen != g, 0)) ts->rotate(g);
    s = ts->next_slot();
    if (__builtin_expect(s == nullptr, 0)) {
      ts->dropped.fetch_add(1, std::memory_order_relaxed);
      if (!flight) return nullptr;
    }
  }
  uint8_t traits;
  const uint32_t name_id = ts->names.lookup(fn.name(), &traits);
  const uint64_t correlation = ts->next_correlation();
  CorrelationHook push = g_push_hook.load(std::memory_order_relaxed);
  ThreadState::Open o{s, &fn, g, push != nullptr, correlation, ThreadState::kNotInRing, 0};
  if (s != nullptr) {
    s->name_id = name_id;
    s->scope = static_cast<uint8_t>(fn.scope());
    s->flags = fn.isAsync() ? kFlagAsync : 0;
    s->seq_nr = fn.seqNr();
    if (__builtin_expect(name_id == kStepNameId, 0)) s->seq_nr = ts->names.last_step();
    s->fwd_tid = fn.forwardThreadId();
    s->correlation = correlation;
    s->end.store(0, std::memory_order_relaxed);
    if (__builtin_expect(traits & kTraitCollective, 0)) record_collective(fn, g, correlation);
    if (g_capture_any_details.load(kRelaxed)) {
      // A stack starts here, at on_enter's caller: ptprof's frames below are not unwound.
      UnwindStart here;
      unwind_start_here(&here);
      record_details(ts, s, fn, traits, here);
    }
    // The reporter's slot can only change between outermost ops (thread-local state is
    // swapped at task boundaries: autograd graph tasks, at::launch), so nested ops skip the
    // check.
    if (__builtin_expect(g_capture_memory.load(std::memory_order_relaxed), 0) &&
        ts->open_n == 0) {
      ensure_memory_reporter();
    }
  }
  if (push) push(correlation);
  const int64_t start = now_ticks();
  if (flight) flight_enter(ts, fn, name_id, traits, ts->names.last_step(), &o, start);
  ts->open[ts->open_n++] = o;
  if (s != nullptr) {
    s->start = start;
    ts->publish();
  }
  return nullptr;
}

}  // namespace

// memory_reporter.h's: c10's allocators report through the reporter to here.
void record_memory(void* ptr, int64_t bytes, std::size_t total_allocated,
                   std::size_t total_reserved, c10::Device device) {
  const int64_t t = now_ticks();
  if (!g_recording.load(std::memory_order_relaxed)) return;
  ThreadState* ts = tl_state;
  if (ts == nullptr) {
    ts = register_thread();
    if (!ts) return;
  }
  const uint32_t g = g_gen.load(std::memory_order_acquire);
  if (ts->seen_gen != g) ts->rotate(g);
  Slot* s = ts->next_slot();
  if (s == nullptr) {
    ts->dropped_memory.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  s->start = t;
  s->end.store(t, std::memory_order_relaxed);
  s->correlation = reinterpret_cast<uint64_t>(ptr);
  s->bytes = static_cast<uint64_t>(bytes);
  s->seq_nr = static_cast<int64_t>(total_allocated);
  s->fwd_tid = static_cast<uint64_t>(total_reserved);
  s->flags = 0;
  s->name_id = pack_memory_device(static_cast<uint8_t>(device.type()), device.index());
  s->scope = kScopeMemory;
  ts->publish();
}

namespace {

void on_exit(const at::RecordFunction& fn, at::ObserverContext*) {
  const int64_t t = now_ticks();
  ThreadState* ts = tl_state;
  if (ts == nullptr || ts->open_n == 0) return;
  const at::RecordFunction* const key = &fn;
  uint32_t k = ts->open_n - 1;
  if (__builtin_expect(ts->open[k].fn != key, 0)) {
    // Not the innermost op: an async op, or one that started on another thread. Search; what
    // lies above a match was abandoned (its exit will find nothing and it stays unfinished).
    while (k > 0 && ts->open[k].fn != key) --k;
    if (ts->open[k].fn != key) return;
  }
  const ThreadState::Open o = ts->open[k];
  // One pop per pushed entry from the match up: the abandoned ones above it pushed too.
  if (CorrelationHook pop = g_pop_hook.load(std::memory_order_relaxed)) {
    for (uint32_t i = ts->open_n; i-- > k;)
      if (ts->open[i].pushed) pop(0);
  }
  ts->open_n = k;
  if (o.ring_depth != ThreadState::kNotInRing) {
    // What lies above it in the ring's stack was abandoned, as here.
    ts->ring->pop_to(o.ring_depth, t);
    if (o.log != 0) flight::leave_collective(flight::CollectiveMark{0, 0, 0, o.log - 1}, t);
  }
  // A record of a window that has closed may be in a buffer that is being reused.
  if (o.slot == nullptr || g_gen.load(std::memory_order_acquire) != o.gen) return;
  o.slot->end.store(t, std::memory_order_relaxed);
}

std::mutex g_install_mu;
at::CallbackHandle g_handle = 0;
bool g_window_installed = false;  // install() until uninstall(); under g_install_mu

// (Re)registers the callback for `capture`, unless it is registered for the same. Under
// g_install_mu.
void register_callback(const CaptureOptions& capture) {
  calibrate_clock();
  const bool same = g_handle != 0 && g_capture_inputs.load() == capture.inputs &&
                    g_inputs_for_flops_only.load() == capture.inputs_for_flops_only &&
                    g_capture_stacks.load() == capture.stacks &&
                    g_stack_depth.load() == std::max(1, std::min(capture.stack_depth, 250));
  if (same) return;
  if (g_handle != 0) at::removeCallback(g_handle);
  // The capture flags change only while no callback of ours is registered.
  g_capture_inputs.store(capture.inputs);
  g_inputs_for_flops_only.store(capture.inputs && capture.inputs_for_flops_only);
  g_capture_stacks.store(capture.stacks);
  g_stack_depth.store(std::max(1, std::min(capture.stack_depth, 250)));
  g_capture_any_details.store(capture.inputs || capture.stacks);
  if (capture.stacks) warm_up_stack_capture();  // first-use costs outside the window
  g_handle = at::addGlobalCallback(
      at::RecordFunctionCallback(&on_enter, &on_exit).needsInputs(capture.inputs));
}

void unregister_callback() {
  if (g_handle != 0) {
    at::removeCallback(g_handle);
    g_handle = 0;
  }
}

}  // namespace

Recorder& Recorder::get() {
  static Recorder r;
  return r;
}

std::size_t Recorder::record_bytes() {
  return sizeof(Slot);
}

std::size_t Recorder::window_bytes_per_record() {
  return sizeof(Slot) + sizeof(RawRecord) + sizeof(ptprof::Event);
}

void Recorder::install(const CaptureOptions& capture) {
  std::lock_guard<std::mutex> lock(g_install_mu);
  register_callback(capture);
  g_window_installed = true;
  g_capture_memory.store(capture.memory, std::memory_order_relaxed);
  set_memory_reporting(capture.memory);
  if (capture.memory) {
    ensure_memory_reporter();  // the installing thread; others on their first op
  } else {
    remove_memory_reporter();
  }
}

void Recorder::uninstall() {
  std::lock_guard<std::mutex> lock(g_install_mu);
  g_recording.store(false, std::memory_order_relaxed);
  g_window_installed = false;
  // The flight recorder keeps the callback, without the window's inputs and stacks.
  if (g_flight.load())
    register_callback(CaptureOptions{});
  else
    unregister_callback();
  g_capture_memory.store(false, std::memory_order_relaxed);
  set_memory_reporting(false);
  remove_memory_reporter();
}

void Recorder::set_flight(bool on) {
  std::lock_guard<std::mutex> lock(g_install_mu);
  if (on) {
    share_names_with_flight();
    g_flight.store(true);
    if (!g_window_installed) register_callback(CaptureOptions{});
  } else {
    g_flight.store(false);
    if (!g_window_installed) unregister_callback();
  }
}

bool Recorder::flight() const {
  return g_flight.load(std::memory_order_relaxed);
}

bool Recorder::installed() const {
  std::lock_guard<std::mutex> lock(g_install_mu);
  return g_handle != 0;
}

void Recorder::set_correlation_hooks(CorrelationHook push, CorrelationHook pop) {
  g_push_hook.store(push, std::memory_order_relaxed);
  g_pop_hook.store(pop, std::memory_order_relaxed);
}

void Recorder::begin_window(std::size_t max_event_bytes) {
  g_window_slots_left.store(static_cast<int64_t>(max_event_bytes / window_bytes_per_record()),
                            std::memory_order_relaxed);
  g_gen.fetch_add(1, std::memory_order_acq_rel);
  g_recording.store(true, std::memory_order_release);
  // Reset the calling thread's counters of the new window right away.
  std::lock_guard<std::mutex> lock(registry().mu);
  for (ThreadState* ts : registry().threads) {
    ts->dropped.store(0, std::memory_order_relaxed);
    ts->dropped_memory.store(0, std::memory_order_relaxed);
  }
}

void Recorder::discard_window() {
  g_gen.fetch_add(1, std::memory_order_acq_rel);
}

Collected Recorder::end_window() {
  const uint32_t g = g_gen.fetch_add(1, std::memory_order_acq_rel);
  Collected out;
  {
    std::lock_guard<std::mutex> lock(registry().mu);
    auto& threads = registry().threads;
    for (ThreadState* ts : threads) {
      out.dropped += ts->dropped.exchange(0, std::memory_order_relaxed);
      out.dropped_memory += ts->dropped_memory.exchange(0, std::memory_order_relaxed);
      Half& h = ts->halves[g & 1];
      if (h.gen.load(std::memory_order_acquire) != g) continue;
      const uint32_t n = h.size.load(std::memory_order_acquire);
      if (n == 0) continue;
      CollectedThread ct;
      ct.os_tid = ts->os_tid;
      ct.logical_tid = ts->logical_tid;
      ct.name = ts->thread_name;
      ct.records.reserve(n);
      // Details lie in the order of the records that carry them (see kNextBlock). Each block
      // and link is read only for a published record that needs it: the owner may still be
      // appending past the published size.
      const DetailBlock* block = nullptr;
      bool started = false;
      uint32_t off = 0;
      struct Span {
        uint64_t at = kNoDetails;
        uint16_t len = 0;
      };
      auto next_details = [&]() -> Span {
        if (!started) {
          block = h.detail_head;
          started = true;
        }
        while (block) {
          uint32_t len = kNextBlock;
          if (off + 4 <= kDetailBlockBytes) std::memcpy(&len, block->data + off, 4);
          if (len == kNextBlock) {
            block = block->next;
            off = 0;
            continue;
          }
          if (len > kDetailBlockBytes - off - 4) break;  // cannot happen: the writer checked
          const Span span{ct.details.size(), static_cast<uint16_t>(len)};
          ct.details.append(block->data + off + 4, len);
          off += 4 + len;
          return span;
        }
        return Span{};
      };
      Chunk* c = h.head;
      for (uint32_t i = 0; i < n && c; c = c->next) {
        for (uint32_t k = 0; k < kChunkSlots && i < n; ++k, ++i) {
          const Slot& s = c->slots[k];
          const Span details = (s.flags & kFlagDetails) ? next_details() : Span{};
          ct.records.push_back(RawRecord{s.start, s.end.load(std::memory_order_relaxed),
                                         s.correlation, s.bytes, s.seq_nr, s.fwd_tid, s.name_id,
                                         s.scope, s.flags, details.len, details.at});
        }
      }
      out.threads.push_back(std::move(ct));
    }
    // States of exited threads are no longer written; free them now that they are read.
    for (auto it = threads.begin(); it != threads.end();) {
      if ((*it)->exited.load(std::memory_order_acquire)) {
        delete *it;
        it = threads.erase(it);
      } else {
        ++it;
      }
    }
  }
  {
    // This window's; the next one's (recorded since the generation moved) stay.
    std::lock_guard<std::mutex> lock(collectives_mu());
    std::vector<CollectiveRecord> keep;
    for (CollectiveRecord& r : collective_records()) {
      if (r.gen == g)
        out.collectives.emplace_back(r.correlation, std::move(r.info));
      else if (r.gen == g + 1)
        keep.push_back(std::move(r));
    }
    collective_records().swap(keep);
  }
  out.names = interned_names();
  out.clock = TickConverter::current();
  return out;
}

}  // namespace ptprof::detail
