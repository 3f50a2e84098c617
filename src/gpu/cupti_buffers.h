// cupti_buffers.h: the pool of activity buffers handed to CUPTI.
//
// CUPTI asks for a buffer from whatever thread needs one (bufferRequested) and hands it back
// full, or at a flush, on its worker thread or on the flushing thread (bufferCompleted). The
// pool keeps completed buffers until the window ends and then takes them back for reuse, so a
// steady state allocates nothing. Memory is capped: beyond the cap requests are refused (CUPTI
// then drops records and counts them) or, where CUPTI cannot take a refusal, served from an
// overflow buffer whose records are counted as dropped and which is freed, not pooled.
//
// The mutex guards only the pool's own lists; nothing calls into CUPTI while holding it
// (CUPTI holds its own lock around bufferRequested, and bufferCompleted runs inside FlushAll).
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_set>
#include <vector>

namespace ptprof::detail {

struct CompletedBuffer {
  uint8_t* data = nullptr;
  std::size_t valid_size = 0;
  bool overflow = false;  // over the cap: its records are to be counted as dropped
};

class BufferPool {
 public:
  // CUPTI before API version 27 (CUDA 12.9) can crash when a buffer is refused.
  static constexpr uint32_t kFirstVersionAcceptingRefusal = 27;

  BufferPool(std::size_t buffer_size, std::size_t max_bytes, bool may_refuse);
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // Allocates buffers up front until `n` exist (within the cap), so that CUPTI's requests
  // during a step are served without allocating.
  void reserve(std::size_t n);
  // bufferRequested: *buffer null and *size 0 when refused.
  void request(uint8_t** buffer, std::size_t* size);
  // bufferCompleted. Returns false for a buffer this pool did not hand out (left alone).
  bool complete(uint8_t* buffer, std::size_t valid_size);

  // Completed buffers in completion order; the caller gives each back with recycle().
  std::vector<CompletedBuffer> take_completed();
  void recycle(uint8_t* buffer);
  // Drops whatever completed so far (a window opening discards warmup records).
  void recycle_completed();
  // Frees the free buffers (collection stopped; CUPTI holds none of ours after its flush).
  void trim();
  // Requests refused since the last call.
  uint64_t take_refused();

  std::size_t buffer_size() const { return buffer_size_; }
  std::size_t max_buffers() const { return max_buffers_; }
  // Pooled buffers that exist (free, with CUPTI, or completed); overflow buffers not counted.
  std::size_t allocated_buffers() const;
  std::size_t free_buffers() const;

 private:
  uint8_t* allocate() const;

  const std::size_t buffer_size_;
  const std::size_t max_buffers_;
  const bool may_refuse_;
  mutable std::mutex mu_;
  std::vector<uint8_t*> free_;
  std::vector<CompletedBuffer> completed_;
  std::unordered_set<uint8_t*> pooled_;
  std::unordered_set<uint8_t*> overflow_;
  uint64_t refused_ = 0;
};

}  // namespace ptprof::detail
