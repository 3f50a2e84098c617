#include "gpu/cupti_buffers.h"

#include <algorithm>
#include <cstdlib>

namespace ptprof::detail {
namespace {
// CUPTI requires activity buffers aligned to 8 bytes.
constexpr std::size_t kAlign = 8;
}  // namespace

BufferPool::BufferPool(std::size_t buffer_size, std::size_t max_bytes, bool may_refuse)
    : buffer_size_((std::max<std::size_t>(buffer_size, 1024) + kAlign - 1) / kAlign * kAlign),
      max_buffers_(std::max<std::size_t>(1, max_bytes / buffer_size_)),
      may_refuse_(may_refuse) {}

BufferPool::~BufferPool() {
  // Buffers still with CUPTI are freed too: the backend flushes before it lets a pool go.
  for (uint8_t* b : pooled_) std::free(b);
  for (uint8_t* b : overflow_) std::free(b);
}

uint8_t* BufferPool::allocate() const {
  return static_cast<uint8_t*>(std::aligned_alloc(kAlign, buffer_size_));
}

void BufferPool::reserve(std::size_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  n = std::min(n, max_buffers_);
  while (pooled_.size() < n) {
    uint8_t* b = allocate();
    if (b == nullptr) return;
    pooled_.insert(b);
    free_.push_back(b);
  }
}

void BufferPool::request(uint8_t** buffer, std::size_t* size) {
  *buffer = nullptr;
  *size = 0;
  std::lock_guard<std::mutex> lock(mu_);
  uint8_t* b = nullptr;
  if (!free_.empty()) {
    b = free_.back();
    free_.pop_back();
  } else if (pooled_.size() < max_buffers_) {
    b = allocate();
    if (b != nullptr) pooled_.insert(b);
  } else if (!may_refuse_) {
    b = allocate();
    if (b != nullptr) overflow_.insert(b);
  }
  if (b == nullptr) {
    ++refused_;
    return;
  }
  *buffer = b;
  *size = buffer_size_;
}

bool BufferPool::complete(uint8_t* buffer, std::size_t valid_size) {
  if (buffer == nullptr) return true;
  std::lock_guard<std::mutex> lock(mu_);
  const bool is_overflow = overflow_.count(buffer) != 0;
  if (!is_overflow && pooled_.count(buffer) == 0) return false;
  if (valid_size == 0) {
    if (is_overflow) {
      overflow_.erase(buffer);
      std::free(buffer);
    } else {
      free_.push_back(buffer);
    }
    return true;
  }
  completed_.push_back(CompletedBuffer{buffer, valid_size, is_overflow});
  return true;
}

std::vector<CompletedBuffer> BufferPool::take_completed() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<CompletedBuffer> out;
  out.swap(completed_);
  return out;
}

void BufferPool::recycle(uint8_t* buffer) {
  std::lock_guard<std::mutex> lock(mu_);
  if (overflow_.erase(buffer) != 0) {
    std::free(buffer);
  } else if (pooled_.count(buffer) != 0) {
    free_.push_back(buffer);
  }
}

void BufferPool::recycle_completed() {
  for (const CompletedBuffer& c : take_completed()) recycle(c.data);
}

void BufferPool::trim() {
  std::lock_guard<std::mutex> lock(mu_);
  for (uint8_t* b : free_) {
    pooled_.erase(b);
    std::free(b);
  }
  free_.clear();
}

uint64_t BufferPool::take_refused() {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t n = refused_;
  refused_ = 0;
  return n;
}

std::size_t BufferPool::allocated_buffers() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pooled_.size();
}

std::size_t BufferPool::free_buffers() const {
  std::lock_guard<std::mutex> lock(mu_);
  return free_.size();
}

}  // namespace ptprof::detail
