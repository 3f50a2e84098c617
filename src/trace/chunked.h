// chunked.h: a vector's worth of items collected without a vector's growth.
#pragma once

#include <cstddef>
#include <vector>

namespace ptprof::detail {

// Collects in chunks and hands over in one exact allocation: a growing vector would hold up
// to three times the final size while it reallocates.
template <typename T>
class Chunked {
 public:
  T& push(const T& v) {
    if (chunks_.empty() || chunks_.back().size() == kChunk) {
      chunks_.emplace_back();
      chunks_.back().reserve(kChunk);
    }
    chunks_.back().push_back(v);
    ++size_;
    return chunks_.back().back();
  }
  T* last() { return chunks_.empty() ? nullptr : &chunks_.back().back(); }
  std::size_t size() const { return size_; }
  void move_into(std::vector<T>& out) {
    out.reserve(out.size() + size_);
    for (auto& c : chunks_) {
      out.insert(out.end(), c.begin(), c.end());
      std::vector<T>().swap(c);
    }
    chunks_.clear();
    size_ = 0;
  }

 private:
  static constexpr std::size_t kChunk = 4096;
  std::vector<std::vector<T>> chunks_;
  std::size_t size_ = 0;
};

}  // namespace ptprof::detail
