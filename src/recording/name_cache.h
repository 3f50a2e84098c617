// name_cache.h: op and range names to ids, on the hot path.
//
// Names are interned into one process-wide table (ids never change). Each thread keeps an
// open-addressing cache from name content to id (NameCache), so the per-op cost is a hash and
// a memcmp; only a name the thread has not seen takes the table's lock. Once the flight
// recorder has run, every name also goes to its table (flight/names.h), in id order, so a
// ring's name ids are the recorder's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

namespace ptprof::detail {

// name_id of a "ProfilerStep#N" range, whose N is in RawRecord::seq_nr (never interned).
constexpr uint32_t kStepNameId = 0xFFFFFFFEu;

// What the hot path needs to know of a name beyond its id, worked out once per name.
constexpr uint8_t kTraitCollective = 1;        // is_collective_name: its arguments are read
constexpr uint8_t kTraitFlops = 2;             // has_flops_formula: with_flops keeps its inputs
constexpr uint8_t kTraitFlightCollective = 4;  // flight::is_flight_collective: the rings' log

// The process-wide table, under its lock.
uint32_t intern_name(std::string_view s);
// The names interned so far go to the flight recorder's table, and every later one.
void share_names_with_flight();
// Every name by id. Views, not copies: the table only grows and is never freed.
std::vector<std::string_view> interned_names();

// One thread's cache. Owned and used by that thread alone.
class NameCache {
 public:
  NameCache() = default;
  NameCache(const NameCache&) = delete;
  NameCache& operator=(const NameCache&) = delete;
  ~NameCache();

  // "ProfilerStep#<N>" is a new name every step. Interning each would grow the table (and
  // every window's snapshot of it) without bound, so such a name is not interned: its lookup
  // returns kStepNameId, its record keeps N in its seq_nr (a user-scope range has no
  // sequence number) and the name is rebuilt at collection. This is the N of the last
  // lookup that returned kStepNameId.
  int64_t last_step() const { return last_step_; }

  // Exact: a pointer hit is confirmed by comparing the bytes, NUL included, with the cached
  // copy (op names from schemas keep their pointer; names of ranges live in the
  // RecordFunction and may reuse an address for other text, which then falls through).
  // The name's id, and its traits in `*traits`.
  uint32_t lookup(const char* s, uint8_t* traits) {
    PtrEntry& p = by_ptr_[(reinterpret_cast<uintptr_t>(s) >> 3) & (kPtrSize - 1)];
    // strlen first: the address may now hold a shorter string, and reading p.len + 1 bytes of
    // it could run past its end.
    if (p.ptr == s && std::strlen(s) == p.len && std::memcmp(p.text, s, p.len) == 0) {
      *traits = p.traits;
      return p.id;
    }
    return lookup_by_content(s, &p, traits);
  }

 private:
  struct Entry {
    uint64_t hash = 0;
    const char* text = nullptr;
    uint32_t len = 0;
    uint32_t id = 0;
    uint8_t traits = 0;
  };
  struct PtrEntry {
    const char* ptr = nullptr;
    const char* text = nullptr;
    // 24 bits keep an entry at 24 bytes; a name of 16 MiB or more never hits here (its
    // length does not fit) and is found by content instead.
    uint32_t len : 24;
    uint32_t traits : 8;
    uint32_t id = 0;
  };

  // The pointer cache's miss: by content, then `*p` remembers `s`. Out of line: a thread
  // sees the same name pointers op after op.
  uint32_t lookup_by_content(const char* s, PtrEntry* p, uint8_t* traits);
  // By content; nullptr (with last_uncached_ set) when the table is full.
  const Entry* find(const char* s);
  // kStepNameId (the number kept in last_step_) or the name's id in the process table.
  uint32_t intern_or_step(const char* s, std::size_t n);

  static constexpr std::size_t kSize = 4096;
  static constexpr std::size_t kPtrSize = 1024;
  PtrEntry by_ptr_[kPtrSize];
  Entry entries_[kSize];
  std::size_t used_ = 0;
  uint32_t last_uncached_ = 0;
  int64_t last_step_ = 0;
};

}  // namespace ptprof::detail
