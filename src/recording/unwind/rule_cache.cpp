// rule_cache.cpp: the shared rule table, and where a miss finds the .eh_frame of the code it
// is for.
//
// Process-wide open addressing table, insert-only: a slot's rule is written before its key is
// published (release), and never changes after, so lookups need no lock. Inserts take a mutex
// that guards nothing but the table (the rule is computed outside it, so the loader lock that
// dl_iterate_phdr takes is never held with it). A full probe window leaves the address
// uncached (computed per capture, correct but slow); 32K slots hold the few thousand distinct
// return addresses of a training loop many times over.
//
// Rules are kept for the life of the process: after a dlclose, code loaded at the same address
// would meet stale rules. Every read is still bounds-checked against the thread's stack, so the
// worst case is a wrong or short stack, never a bad read.
#include "recording/unwind/rule_cache.h"

#include "recording/unwind/platform.h"

#ifdef PTPROF_CFI_UNWINDER

#include <elf.h>
#include <link.h>

#include <atomic>
#include <cstddef>
#include <mutex>

#include "recording/unwind/eh_frame_cfi.h"

namespace ptprof::detail::unwind {

constexpr int kSlotBits = 15;
constexpr std::size_t kSlots = std::size_t{1} << kSlotBits;
constexpr int kMaxProbes = 32;

struct Slot {
  std::atomic<uint64_t> key{0};
  std::atomic<uint64_t> rule{0};
};

namespace {

std::atomic<Slot*> g_slots{nullptr};
std::once_flag g_slots_once;
std::mutex g_insert_mutex;
std::atomic<uint64_t> g_rule_misses{0};
std::atomic<uint64_t> g_unsupported{0};

std::size_t slot_of(uint64_t key) {
  return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ull) >> (64 - kSlotBits));
}

bool cached_rule(const Slot* table, uint64_t key, Rule* out) {
  std::size_t i = slot_of(key);
  for (int p = 0; p < kMaxProbes; ++p, i = (i + 1) & (kSlots - 1)) {
    const uint64_t k = table[i].key.load(std::memory_order_acquire);
    if (k == key) {
      *out = unpack(table[i].rule.load(std::memory_order_relaxed));
      return true;
    }
    if (k == 0) return false;
  }
  return false;
}

void insert_rule(Slot* table, uint64_t key, Rule rule) {
  std::lock_guard<std::mutex> lock(g_insert_mutex);
  std::size_t i = slot_of(key);
  for (int p = 0; p < kMaxProbes; ++p, i = (i + 1) & (kSlots - 1)) {
    const uint64_t k = table[i].key.load(std::memory_order_relaxed);
    if (k == key) return;
    if (k == 0) {
      table[i].rule.store(pack(rule), std::memory_order_relaxed);
      table[i].key.store(key, std::memory_order_release);
      return;
    }
  }
}

// The loaded object holding `pc`: its program headers, read after dl_iterate_phdr returns (they
// are mapped for as long as the object is loaded).
struct ModuleQuery {
  uint64_t pc;
  uint64_t base = 0;
  const ElfW(Phdr) * phdr = nullptr;
  int phnum = 0;
};

int find_module(dl_phdr_info* info, size_t, void* data) {
  auto* q = static_cast<ModuleQuery*>(data);
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    const uint64_t start = info->dlpi_addr + ph.p_vaddr;
    if (ph.p_type == PT_LOAD && q->pc >= start && q->pc < start + ph.p_memsz) {
      q->base = info->dlpi_addr;
      q->phdr = info->dlpi_phdr;
      q->phnum = info->dlpi_phnum;
      return 1;
    }
  }
  return 0;
}

// The object's mapped bytes as Sections: .eh_frame_hdr (its PT_GNU_EH_FRAME segment) and the
// readable PT_LOAD segment .eh_frame lies in, which bounds every read of the CFI parser.
bool module_sections(const ModuleQuery& q, Section* hdr, Section* eh_frame) {
  for (int i = 0; i < q.phnum; ++i) {
    const ElfW(Phdr)& ph = q.phdr[i];
    if (ph.p_type != PT_GNU_EH_FRAME) continue;
    const uint64_t start = q.base + ph.p_vaddr;
    *hdr = Section{reinterpret_cast<const uint8_t*>(start), ph.p_memsz, start};
  }
  if (!hdr->data) return false;
  const uint64_t eh = eh_frame_start(*hdr);
  for (int i = 0; i < q.phnum; ++i) {
    const ElfW(Phdr)& ph = q.phdr[i];
    const uint64_t start = q.base + ph.p_vaddr;
    if (ph.p_type == PT_LOAD && (ph.p_flags & PF_R) && eh >= start && eh < start + ph.p_memsz) {
      *eh_frame = Section{reinterpret_cast<const uint8_t*>(start), ph.p_memsz, start};
      return true;
    }
  }
  return false;
}

Rule compute_rule(uint64_t key) {
  ModuleQuery q{key};
  dl_iterate_phdr(find_module, &q);
  Section hdr, eh_frame;
  if (!q.phdr || !module_sections(q, &hdr, &eh_frame)) return Rule{};
  return eh_frame_rule(hdr, eh_frame, key);
}

}  // namespace

Slot* slots() {
  Slot* s = g_slots.load(std::memory_order_acquire);
  if (s) return s;
  // Never freed: other threads may be capturing while the process exits.
  std::call_once(g_slots_once, [] { g_slots.store(new Slot[kSlots], std::memory_order_release); });
  return g_slots.load(std::memory_order_acquire);
}

Rule rule_for(Slot* table, uint64_t key) {
  Rule r;
  if (cached_rule(table, key, &r)) return r;
  g_rule_misses.fetch_add(1, std::memory_order_relaxed);
  r = compute_rule(key);
  if (r.cfa == kUnsupported) g_unsupported.fetch_add(1, std::memory_order_relaxed);
  insert_rule(table, key, r);
  return r;
}

RuleCacheStats rule_cache_stats() {
  RuleCacheStats s;
  s.misses = g_rule_misses.load(std::memory_order_relaxed);
  s.unsupported = g_unsupported.load(std::memory_order_relaxed);
  return s;
}

}  // namespace ptprof::detail::unwind

#else

namespace ptprof::detail::unwind {
RuleCacheStats rule_cache_stats() {
  return {};
}
}  // namespace ptprof::detail::unwind

#endif  // PTPROF_CFI_UNWINDER
