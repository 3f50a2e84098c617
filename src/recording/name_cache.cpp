#include "recording/name_cache.h"

#include <cstdlib>
#include <deque>
#include <mutex>
#include <string>
#include <unordered_map>

#include "recording/collective_args.h"
#include "recording/flight/collectives.h"
#include "recording/flight/names.h"
#include "trace/flops.h"

namespace ptprof::detail {

namespace {

class NameTable {
 public:
  uint32_t intern(std::string_view s) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = ids_.find(s);
    if (it != ids_.end()) return it->second;
    names_.emplace_back(s);
    const auto id = static_cast<uint32_t>(names_.size() - 1);
    ids_.emplace(names_.back(), id);
    if (flight_) flight::FlightNames::get().append(s);
    return id;
  }
  void share_with_flight() {
    std::lock_guard<std::mutex> lock(mu_);
    if (flight_) return;
    flight_ = true;
    flight::FlightNames& table = flight::FlightNames::get();
    // Names the table has that the recorder has not (written to it directly, as its tests
    // do) become the recorder's under the same ids, so the two tables agree.
    for (uint32_t id = static_cast<uint32_t>(names_.size()); id < table.count(); ++id) {
      const uint32_t begin = id == 0 ? 0 : table.ends()[id - 1];
      names_.emplace_back(table.bytes() + begin, table.ends()[id] - begin);
      ids_.emplace(names_.back(), id);
    }
    for (std::size_t id = table.count(); id < names_.size(); ++id) table.append(names_[id]);
  }
  std::vector<std::string_view> snapshot() {
    std::lock_guard<std::mutex> lock(mu_);
    return {names_.begin(), names_.end()};
  }

 private:
  std::mutex mu_;
  std::deque<std::string> names_;  // deque: stable storage for the views in ids_
  std::unordered_map<std::string_view, uint32_t> ids_;
  bool flight_ = false;
};

NameTable& table() {
  static NameTable* t = new NameTable();  // leaked: callbacks may run during static destruction
  return *t;
}

uint64_t hash_bytes(const char* p, std::size_t n) {
  uint64_t h = 0x9E3779B97F4A7C15ull ^ n;
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    h = (h ^ w) * 0xff51afd7ed558ccdull;
    h ^= h >> 32;
    p += 8;
    n -= 8;
  }
  uint64_t w = 0;
  std::memcpy(&w, p, n);
  h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
  return h ^ (h >> 29);
}

uint8_t name_traits(const char* s, std::size_t n) {
  return static_cast<uint8_t>((is_collective_name(s) ? kTraitCollective : 0) |
                              (has_flops_formula(std::string_view(s, n)) ? kTraitFlops : 0) |
                              (flight::is_flight_collective(s) ? kTraitFlightCollective : 0));
}

// "ProfilerStep#<N>" with N in range and without leading zeros (see NameCache::last_step).
bool parse_step_name(const char* s, int64_t* step) {
  static constexpr char kPrefix[] = "ProfilerStep#";
  if (std::strncmp(s, kPrefix, sizeof(kPrefix) - 1) != 0) return false;
  const char* d = s + sizeof(kPrefix) - 1;
  int64_t n = 0;
  int digits = 0;
  for (; *d >= '0' && *d <= '9'; ++d, ++digits) {
    if (digits == 18) return false;  // keeps n in range
    n = n * 10 + (*d - '0');
  }
  if (digits == 0 || *d != '\0' || (digits > 1 && s[sizeof(kPrefix) - 1] == '0')) return false;
  *step = n;
  return true;
}

}  // namespace

uint32_t intern_name(std::string_view s) {
  return table().intern(s);
}

void share_names_with_flight() {
  table().share_with_flight();
}

std::vector<std::string_view> interned_names() {
  return table().snapshot();
}


NameCache::~NameCache() {
  for (Entry& e : entries_) std::free(const_cast<char*>(e.text));
}

uint32_t NameCache::lookup_by_content(const char* s, PtrEntry* p, uint8_t* traits) {
  const Entry* e = find(s);
  if (e) {
    *p = PtrEntry{s, e->text, e->len, e->traits, e->id};
    *traits = e->traits;
    return e->id;
  }
  *traits = last_uncached_ == kStepNameId ? 0 : name_traits(s, std::strlen(s));
  return last_uncached_;
}

const NameCache::Entry* NameCache::find(const char* s) {
  const std::size_t n = std::strlen(s);
  const uint64_t h = hash_bytes(s, n);
  std::size_t i = h & (kSize - 1);
  for (std::size_t probe = 0; probe < kSize; ++probe, i = (i + 1) & (kSize - 1)) {
    Entry& e = entries_[i];
    if (e.text == nullptr) {
      const uint32_t id = intern_or_step(s, n);
      if (id == kStepNameId) {
        last_uncached_ = id;
        return nullptr;
      }
      if (used_ * 4 < kSize * 3) {  // keep the table under 75% full
        char* copy = static_cast<char*>(std::malloc(n + 1));
        if (copy != nullptr) {
          std::memcpy(copy, s, n + 1);
          e = Entry{h, copy, static_cast<uint32_t>(n), id, name_traits(s, n)};
          ++used_;
          return &e;
        }
      }
      last_uncached_ = id;
      return nullptr;
    }
    if (e.hash == h && e.len == n && std::memcmp(e.text, s, n) == 0) return &e;
  }
  last_uncached_ = intern_or_step(s, n);
  return nullptr;
}

uint32_t NameCache::intern_or_step(const char* s, std::size_t n) {
  return parse_step_name(s, &last_step_) ? kStepNameId : intern_name(std::string_view(s, n));
}

}  // namespace ptprof::detail
