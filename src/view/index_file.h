// index_file.h: the viewer's index of one trace: a file of named sections (JSON the views
// serve, and columns of plain numbers), written once and then read through mmap, so a trace
// opened again costs neither its reading nor its memory.
//
// Layout: a header (magic, format version, the trace's IndexKey), the sections one after the
// other (each 8-byte aligned), their table, and a trailer (the table's offset and size, the
// magic again). Written through a temporary file renamed into place (write_file_atomically),
// so a reader sees a whole index or none; one that does not match its trace, is of another
// version or is damaged is not used (open() gives null) and is built again.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "trace/json_writer.h"  // Sink

namespace ptprof::view {

// What identifies the trace an index was built from: its size, its modification time, and a
// hash of its first and last 64 KiB (a trace rewritten within the same second and size).
struct IndexKey {
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  uint64_t head_hash = 0;
  uint64_t tail_hash = 0;
  bool operator==(const IndexKey& o) const {
    return size == o.size && mtime_ns == o.mtime_ns && head_hash == o.head_hash &&
           tail_hash == o.tail_hash;
  }
  bool operator!=(const IndexKey& o) const { return !(*this == o); }
};
// Throws ptprof::Error naming the file when it cannot be read.
IndexKey index_key_of(const std::string& trace_path);

// A read-only view of `count` values of T.
template <class T>
struct Column {
  const T* data = nullptr;
  std::size_t count = 0;
  const T& operator[](std::size_t i) const { return data[i]; }
  std::size_t size() const { return count; }
  const T* begin() const { return data; }
  const T* end() const { return data + count; }
};

// Appends sections to an index being written (inside write_file_atomically's body).
class IndexWriter {
 public:
  IndexWriter(detail::Sink& sink, const IndexKey& key);
  void add(std::string_view name, std::string_view bytes);
  template <class T>
  void add_column(std::string_view name, const std::vector<T>& values) {
    static_assert(std::is_trivially_copyable<T>::value, "columns hold plain values");
    add(name, std::string_view(reinterpret_cast<const char*>(values.data()),
                               values.size() * sizeof(T)));
  }
  // A section written in pieces: begin, append..., end.
  void begin(std::string_view name);
  void append(const void* data, std::size_t n);
  void end();
  void finish();  // the table and the trailer

 private:
  struct Entry {
    std::string name;
    uint64_t offset = 0, size = 0;
  };
  void put(const void* data, std::size_t n);
  detail::Sink& sink_;
  uint64_t pos_ = 0;
  std::vector<Entry> entries_;
  bool open_ = false;
};

class IndexFile {
 public:
  // The index at `path` if it is whole, of this format and built from the trace `key` names;
  // else null.
  static std::shared_ptr<const IndexFile> open(const std::string& path, const IndexKey& key);
  ~IndexFile();
  IndexFile(const IndexFile&) = delete;
  IndexFile& operator=(const IndexFile&) = delete;

  bool has(std::string_view name) const;
  std::string_view section(std::string_view name) const;  // "" when absent
  template <class T>
  Column<T> column(std::string_view name) const {
    const std::string_view s = section(name);
    return {reinterpret_cast<const T*>(s.data()), s.size() / sizeof(T)};
  }
  uint64_t bytes() const { return size_; }

 private:
  IndexFile() = default;
  const char* base_ = nullptr;
  uint64_t size_ = 0;
  struct Entry {
    std::string name;
    uint64_t offset = 0, size = 0;
  };
  std::vector<Entry> entries_;
};

}  // namespace ptprof::view
