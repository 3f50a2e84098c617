#include "trace/byte_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

#include "trace/reader_error.h"
#include "ptprof/error.h"

namespace ptprof::detail {

std::size_t MemorySource::read(char* dst, std::size_t cap) {
  const std::size_t n = std::min(cap, text_.size() - pos_);
  std::memcpy(dst, text_.data() + pos_, n);
  pos_ += n;
  return n;
}

namespace {

// An open file descriptor, closed with the source.
class Fd {
 public:
  Fd(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { ::close(fd_); }
  // Up to `cap` bytes; 0 at the end of the file. `offset` (of the uncompressed stream) names
  // where in the trace a failing read was.
  std::size_t read(char* dst, std::size_t cap, uint64_t offset) const {
    for (;;) {
      const ssize_t n = ::read(fd_, dst, cap);
      if (n >= 0) return static_cast<std::size_t>(n);
      if (errno == EINTR) continue;
      throw Error(reader_error_prefix(path_, offset) +
                  "cannot read the file: " + std::strerror(errno));
    }
  }
  // The same at `offset` of the file, leaving the descriptor's own position alone: sources
  // sharing one descriptor read independently.
  std::size_t pread(char* dst, std::size_t cap, uint64_t offset) const {
    for (;;) {
      const ssize_t n = ::pread(fd_, dst, cap, static_cast<off_t>(offset));
      if (n >= 0) return static_cast<std::size_t>(n);
      if (errno == EINTR) continue;
      throw Error(reader_error_prefix(path_, offset) +
                  "cannot read the file: " + std::strerror(errno));
    }
  }
  // The size of a regular file, else 0.
  uint64_t regular_size() const {
    struct stat st {};
    return ::fstat(fd_, &st) == 0 && S_ISREG(st.st_mode) ? static_cast<uint64_t>(st.st_size) : 0;
  }
  const std::string& path() const { return path_; }

 private:
  int fd_;
  std::string path_;
};

class PlainSource final : public ByteSource {
 public:
  // A regular file (`size` > 0) is read with pread from offset_ on, so sources sharing `fd`
  // each read where they are; anything else with read, after the bytes already taken (head).
  PlainSource(std::shared_ptr<const Fd> fd, std::string head, uint64_t size)
      : fd_(std::move(fd)), head_(size > 0 ? "" : head), size_(size) {}
  std::size_t read(char* dst, std::size_t cap) override {
    std::size_t n = 0;
    if (head_pos_ < head_.size()) {  // the bytes read to tell gzip from plain
      n = std::min(cap, head_.size() - head_pos_);
      std::memcpy(dst, head_.data() + head_pos_, n);
      head_pos_ += n;
    } else {
      n = size_ > 0 ? fd_->pread(dst, cap, offset_) : fd_->read(dst, cap, offset_);
    }
    offset_ += n;
    return n;
  }
  uint64_t seekable_size() const override { return size_; }
  void seek(uint64_t offset) override {
    if (size_ > 0) offset_ = offset;
  }
  std::unique_ptr<ByteSource> another_reader() const override {
    return size_ > 0 ? std::make_unique<PlainSource>(fd_, "", size_) : nullptr;
  }

 private:
  std::shared_ptr<const Fd> fd_;
  std::string head_;
  uint64_t size_ = 0;
  std::size_t head_pos_ = 0;
  uint64_t offset_ = 0;
};

// Inflates gzip members one after the other. zlib sees one input buffer and one output
// buffer at a time, both far below 4 GiB; the totals are counted here in 64 bits.
class GzipSource final : public ByteSource {
 public:
  GzipSource(std::unique_ptr<Fd> fd, const std::string& head)
      : fd_(std::move(fd)), in_(new unsigned char[kIn]) {
    std::memset(&zs_, 0, sizeof(zs_));
    // 15 + 16: gzip framing only; the magic bytes were checked.
    if (inflateInit2(&zs_, 15 + 16) != Z_OK)
      throw Error("ptprof: " + fd_->path() + ": cannot start zlib's inflate");
    std::memcpy(in_.get(), head.data(), head.size());
    zs_.next_in = in_.get();
    zs_.avail_in = static_cast<uInt>(head.size());
    in_total_ = head.size();
  }
  ~GzipSource() override { inflateEnd(&zs_); }

  std::size_t read(char* dst, std::size_t cap) override {
    std::size_t produced = 0;
    while (produced < cap && !finished_) {
      if (zs_.avail_in < 2 && !in_eof_) fill_input();
      if (member_ended_) {
        if (zs_.avail_in == 0) {  // in_eof_ here: the last member ended the file
          finished_ = true;
          break;
        }
        if (zs_.avail_in < 2 || zs_.next_in[0] != 0x1f || zs_.next_in[1] != 0x8b)
          fail("the bytes after a complete gzip member are not another gzip member");
        if (inflateReset(&zs_) != Z_OK) fail("cannot restart zlib's inflate");
        member_ended_ = false;
      }
      zs_.next_out = reinterpret_cast<Bytef*>(dst + produced);
      zs_.avail_out = static_cast<uInt>(std::min<std::size_t>(cap - produced, 1u << 30));
      const uInt before_in = zs_.avail_in;
      const uInt room = zs_.avail_out;
      const int rc = inflate(&zs_, Z_NO_FLUSH);
      const std::size_t out = room - zs_.avail_out;
      produced += out;
      out_total_ += out;
      if (rc == Z_STREAM_END) {
        member_ended_ = true;
      } else if (rc == Z_BUF_ERROR || (rc == Z_OK && out == 0 && before_in == zs_.avail_in)) {
        // No progress: inflate needs input that is not there.
        if (zs_.avail_in == 0 && in_eof_) fail("the gzip data is truncated");
      } else if (rc != Z_OK) {
        fail(std::string("the gzip data is corrupt") +
             (zs_.msg ? std::string(": ") + zs_.msg : ""));
      }
    }
    return produced;
  }

  std::string compressed_position() const override {
    return "compressed byte " + std::to_string(in_total_ - zs_.avail_in);
  }

 private:
  static constexpr std::size_t kIn = kGzipInputBytes;

  // Keeps the unread input and appends what the file has next.
  void fill_input() {
    if (zs_.avail_in > 0 && zs_.next_in != in_.get())
      std::memmove(in_.get(), zs_.next_in, zs_.avail_in);
    zs_.next_in = in_.get();
    while (zs_.avail_in < kIn && !in_eof_) {
      const std::size_t n = fd_->read(reinterpret_cast<char*>(in_.get()) + zs_.avail_in,
                                      kIn - zs_.avail_in, out_total_);
      if (n == 0) in_eof_ = true;
      zs_.avail_in += static_cast<uInt>(n);
      in_total_ += n;
      if (zs_.avail_in >= 2) break;  // enough to go on; the next call reads more
    }
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw Error(reader_error_prefix(fd_->path(), out_total_) + what + " (" + compressed_position() +
                ")");
  }

  std::unique_ptr<Fd> fd_;
  std::unique_ptr<unsigned char[]> in_;
  z_stream zs_;
  uint64_t in_total_ = 0;   // compressed bytes read from the file
  uint64_t out_total_ = 0;  // uncompressed bytes produced
  bool in_eof_ = false;
  bool member_ended_ = false;
  bool finished_ = false;
};

}  // namespace

std::unique_ptr<ByteSource> open_trace_source(const std::string& path) {
  const int raw = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (raw < 0) throw Error("ptprof: cannot open " + path + ": " + std::strerror(errno));
  auto fd = std::make_unique<Fd>(raw, path);
  // The first two bytes decide; read() may return fewer than asked (pipes).
  char head[2];
  std::size_t got = 0;
  while (got < 2) {
    const std::size_t n = fd->read(head + got, 2 - got, 0);
    if (n == 0) break;
    got += n;
  }
  std::string h(head, got);
  if (got == 2 && static_cast<unsigned char>(head[0]) == 0x1f &&
      static_cast<unsigned char>(head[1]) == 0x8b)
    return std::make_unique<GzipSource>(std::move(fd), h);
  const uint64_t size = fd->regular_size();
  return std::make_unique<PlainSource>(std::move(fd), h, size);
}

}  // namespace ptprof::detail
