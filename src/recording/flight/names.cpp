#include "recording/flight/names.h"

#include <sys/mman.h>

#include <cstring>

#include "trace/flight_format.h"

namespace ptprof::detail::flight {

FlightNames& FlightNames::get() {
  static FlightNames* n = new FlightNames();  // leaked: read by crash handlers until the end
  return *n;
}

FlightNames::FlightNames() {
  // Reserved, not committed: pages are touched only as names arrive.
  void* p = ::mmap(nullptr, kMaxNames * sizeof(uint32_t) + kMaxBytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    ends_ = nullptr;
    bytes_ = nullptr;
    return;
  }
  ends_ = static_cast<uint32_t*>(p);
  bytes_ = static_cast<char*>(p) + kMaxNames * sizeof(uint32_t);
}

uint32_t FlightNames::append(std::string_view name) {
  const uint32_t id = count_.load(std::memory_order_relaxed);
  // Full once, full for good: a later, shorter name must not take another name's id.
  if (full_ || ends_ == nullptr || id == kMaxNames || name.size() > kMaxBytes - used_) {
    full_ = true;
    return kNoName;
  }
  std::memcpy(bytes_ + used_, name.data(), name.size());
  used_ += static_cast<uint32_t>(name.size());
  ends_[id] = used_;
  count_.store(id + 1, std::memory_order_release);
  return id;
}

}  // namespace ptprof::detail::flight
