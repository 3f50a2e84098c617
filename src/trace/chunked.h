// chunked.h: a vector's worth of items collected without a vector's growth.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <new>
#include <vector>

namespace ptprof::detail {

// Chunks are mapped and unmapped whole, outside malloc: freed while they are handed over,
// they are given back at once, even those a second reading thread allocated (glibc keeps what
// is freed in another thread's arena, and the hand-over would then hold the items twice).
template <typename T>
struct ChunkPages {
  using value_type = T;
  ChunkPages() = default;
  template <typename U>
  ChunkPages(const ChunkPages<U>&) {}
  T* allocate(std::size_t n) {
    void* p = ::mmap(nullptr, n * sizeof(T), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                     -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t n) { ::munmap(p, n * sizeof(T)); }
  template <typename U>
  bool operator==(const ChunkPages<U>&) const { return true; }
  template <typename U>
  bool operator!=(const ChunkPages<U>&) const { return false; }
};

// Collects in chunks and hands over in one exact allocation: a growing vector would hold up
// to three times the final size while it reallocates.
template <typename T>
class Chunked {
 public:
  T& push(const T& v) {
    if (chunks_.empty() || chunks_.back().size() == kChunk) {
      chunks_.emplace_back();
      chunks_.back().reserve(kChunk);  // the only allocation of the chunk: never regrown
    }
    chunks_.back().push_back(v);
    ++size_;
    return chunks_.back().back();
  }
  T* last() { return chunks_.empty() ? nullptr : &chunks_.back().back(); }
  std::size_t size() const { return size_; }
  template <typename F>
  void for_each(F f) {
    for (auto& c : chunks_)
      for (T& v : c) f(v);
  }
  // Another's items after these, their chunks moved over as they are.
  void append(Chunked&& other) {
    for (auto& c : other.chunks_) chunks_.push_back(std::move(c));
    size_ += other.size_;
    other.chunks_.clear();
    other.size_ = 0;
  }
  void move_into(std::vector<T>& out) {
    out.reserve(out.size() + size_);
    for (auto& c : chunks_) {
      out.insert(out.end(), c.begin(), c.end());
      Chunk().swap(c);
    }
    chunks_.clear();
    size_ = 0;
  }

 private:
  static constexpr std::size_t kChunk = 4096;
  using Chunk = std::vector<T, ChunkPages<T>>;
  std::vector<Chunk> chunks_;
  std::size_t size_ = 0;
};

}  // namespace ptprof::detail
