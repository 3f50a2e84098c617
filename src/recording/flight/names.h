// names.h: the names a flight dump's records point to, kept where a crash handler can write
// them: one arena of text and one array of end offsets, both fixed at first use and only
// appended to, the count published last. The recorder's interning hands every new name to it
// in id order (under its own lock), so a record's name id is the same in both.
#pragma once

#include <atomic>
#include <cstdint>
#include <string_view>

namespace ptprof::detail::flight {

class FlightNames {
 public:
  static constexpr uint32_t kMaxNames = 1u << 16;
  static constexpr uint32_t kMaxBytes = 2u << 20;

  static FlightNames& get();

  // Appends `name` as the next id; kNoName once the table is full (its records are then named
  // by id only). Callers serialize (the recorder's interning lock).
  uint32_t append(std::string_view name);

  // For dumpers, lock-free: ids below count() have their text in bytes()[start, ends()[id]).
  uint32_t count() const { return count_.load(std::memory_order_acquire); }
  const uint32_t* ends() const { return ends_; }
  const char* bytes() const { return bytes_; }

 private:
  FlightNames();
  uint32_t* ends_;
  char* bytes_;
  uint32_t used_ = 0;  // bytes, writer's
  bool full_ = false;
  std::atomic<uint32_t> count_{0};
};

}  // namespace ptprof::detail::flight
