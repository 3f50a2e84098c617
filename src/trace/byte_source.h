// byte_source.h: the bytes of a trace, in chunks: a plain file, a gzip file (one member or
// several, as `cat a.gz b.gz` makes), or a string in memory.
//
// Nothing here holds more than its fixed buffers, so a reader on top of it needs the same
// memory for a 100 MB trace as for a 10 GB one. Offsets are 64-bit throughout; zlib's 32-bit
// counts (avail_in, avail_out) only ever see one buffer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace ptprof::detail {

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Up to `cap` bytes of the (uncompressed) stream into `dst`; 0 only at its end. Throws
  // ptprof::Error naming the file and where the stream broke.
  virtual std::size_t read(char* dst, std::size_t cap) = 0;
  // Where the compressed input stands, for messages about corrupt gzip data ("" if plain).
  virtual std::string compressed_position() const { return ""; }
  // A plain regular file can also be read from any offset, by a second source over the same
  // open file: a second thread reads part of a large trace that way (trace_builder.cpp).
  // Its size, else 0 (gzip, a pipe, memory): then seek and another_reader are not available.
  virtual uint64_t seekable_size() const { return 0; }
  // Reads on from `offset` of the stream (seekable_size() > 0 only).
  virtual void seek(uint64_t /*offset*/) {}
  // A source of its own over the same open file, at offset 0 (seekable_size() > 0 only).
  virtual std::unique_ptr<ByteSource> another_reader() const { return nullptr; }
};

// `path` as a source: gzip when it starts with gzip's magic bytes, whatever its name.
// Throws ptprof::Error if it cannot be opened.
std::unique_ptr<ByteSource> open_trace_source(const std::string& path);

// A string that outlives the source (tests, the fuzz targets, metadata values).
class MemorySource final : public ByteSource {
 public:
  explicit MemorySource(std::string_view text) : text_(text) {}
  std::size_t read(char* dst, std::size_t cap) override;

 private:
  std::string_view text_;
  std::size_t pos_ = 0;
};

// The gzip source's buffer of compressed input; zlib adds its state and a 32 KiB window. A
// plain file is read straight into the caller's buffer.
constexpr std::size_t kGzipInputBytes = std::size_t{128} << 10;

}  // namespace ptprof::detail
