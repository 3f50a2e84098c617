#include "view/index_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "ptprof/error.h"

namespace ptprof::view {

namespace {

constexpr char kMagic[8] = {'P', 'T', 'P', 'V', 'I', 'D', 'X', '\n'};
// Bumped whenever a section's meaning changes: an older index is then built again.
constexpr uint64_t kVersion = 4;  // 3: tl.fwdbwd; 4: the report's profiler_cost
constexpr std::size_t kNameBytes = 48;
constexpr std::size_t kHashBytes = std::size_t{64} << 10;

struct Header {
  char magic[8];
  uint64_t version;
  IndexKey key;
};
struct TableEntry {
  char name[kNameBytes];
  uint64_t offset;
  uint64_t size;
};
struct Trailer {
  uint64_t table_offset;
  uint64_t entries;
  char magic[8];
};

uint64_t fnv1a(const char* p, std::size_t n) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (std::size_t i = 0; i < n; ++i) {
    h ^= static_cast<unsigned char>(p[i]);
    h *= 0x100000001b3ULL;
  }
  return h;
}

std::string errno_text() { return std::strerror(errno); }

// Reads up to n bytes at `offset`.
std::size_t read_at(int fd, char* dst, std::size_t n, uint64_t offset) {
  std::size_t got = 0;
  while (got < n) {
    const ssize_t r = ::pread(fd, dst + got, n - got, static_cast<off_t>(offset + got));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += static_cast<std::size_t>(r);
  }
  return got;
}

}  // namespace

IndexKey index_key_of(const std::string& trace_path) {
  const int fd = ::open(trace_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error("ptprof view: cannot open " + trace_path + ": " + errno_text());
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const std::string why = errno_text();
    ::close(fd);
    throw Error("ptprof view: cannot stat " + trace_path + ": " + why);
  }
  IndexKey k;
  k.size = static_cast<uint64_t>(st.st_size);
  k.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  std::string buf(kHashBytes, '\0');
  std::size_t n = read_at(fd, &buf[0], kHashBytes, 0);
  k.head_hash = fnv1a(buf.data(), n);
  const uint64_t tail = k.size > kHashBytes ? k.size - kHashBytes : 0;
  n = read_at(fd, &buf[0], kHashBytes, tail);
  k.tail_hash = fnv1a(buf.data(), n);
  ::close(fd);
  return k;
}

IndexWriter::IndexWriter(detail::Sink& sink, const IndexKey& key) : sink_(sink) {
  Header h{};
  std::memcpy(h.magic, kMagic, sizeof(kMagic));
  h.version = kVersion;
  h.key = key;
  put(&h, sizeof(h));
}

void IndexWriter::put(const void* data, std::size_t n) {
  sink_.write(static_cast<const char*>(data), n);
  pos_ += n;
}

void IndexWriter::begin(std::string_view name) {
  if (open_) throw Error("ptprof view: index section " + std::string(name) + " begun inside another");
  if (name.size() >= kNameBytes) throw Error("ptprof view: index section name too long: " + std::string(name));
  static const char zeros[8] = {};
  if (pos_ % 8) put(zeros, 8 - pos_ % 8);
  entries_.push_back({std::string(name), pos_, 0});
  open_ = true;
}

void IndexWriter::append(const void* data, std::size_t n) {
  put(data, n);
  entries_.back().size += n;
}

void IndexWriter::end() { open_ = false; }

void IndexWriter::add(std::string_view name, std::string_view bytes) {
  begin(name);
  append(bytes.data(), bytes.size());
  end();
}

void IndexWriter::finish() {
  static const char zeros[8] = {};
  if (pos_ % 8) put(zeros, 8 - pos_ % 8);
  const uint64_t table = pos_;
  for (const Entry& e : entries_) {
    TableEntry t{};
    std::memcpy(t.name, e.name.data(), e.name.size());
    t.offset = e.offset;
    t.size = e.size;
    put(&t, sizeof(t));
  }
  Trailer tr{};
  tr.table_offset = table;
  tr.entries = entries_.size();
  std::memcpy(tr.magic, kMagic, sizeof(kMagic));
  put(&tr, sizeof(tr));
}

std::shared_ptr<const IndexFile> IndexFile::open(const std::string& path, const IndexKey& key) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return nullptr;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
      static_cast<uint64_t>(st.st_size) < sizeof(Header) + sizeof(Trailer)) {
    ::close(fd);
    return nullptr;
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);  // the mapping stays valid
  if (map == MAP_FAILED) return nullptr;
  std::shared_ptr<IndexFile> f(new IndexFile());
  f->base_ = static_cast<const char*>(map);
  f->size_ = size;
  Header h{};
  std::memcpy(&h, f->base_, sizeof(h));
  Trailer tr{};
  std::memcpy(&tr, f->base_ + size - sizeof(tr), sizeof(tr));
  if (std::memcmp(h.magic, kMagic, sizeof(kMagic)) != 0 || h.version != kVersion ||
      h.key != key || std::memcmp(tr.magic, kMagic, sizeof(kMagic)) != 0)
    return nullptr;
  const uint64_t table_end = size - sizeof(tr);
  if (tr.table_offset > table_end || (table_end - tr.table_offset) / sizeof(TableEntry) != tr.entries ||
      (table_end - tr.table_offset) % sizeof(TableEntry) != 0)
    return nullptr;
  for (uint64_t i = 0; i < tr.entries; ++i) {
    TableEntry t{};
    std::memcpy(&t, f->base_ + tr.table_offset + i * sizeof(TableEntry), sizeof(t));
    if (t.offset % 8 || t.offset > tr.table_offset || t.size > tr.table_offset - t.offset)
      return nullptr;
    Entry e;
    e.name.assign(t.name, strnlen(t.name, kNameBytes));
    e.offset = t.offset;
    e.size = t.size;
    f->entries_.push_back(std::move(e));
  }
  return f;
}

IndexFile::~IndexFile() {
  if (base_) ::munmap(const_cast<char*>(base_), size_);
}

bool IndexFile::has(std::string_view name) const {
  for (const Entry& e : entries_)
    if (e.name == name) return true;
  return false;
}

std::string_view IndexFile::section(std::string_view name) const {
  for (const Entry& e : entries_)
    if (e.name == name) return {base_ + e.offset, e.size};
  return {};
}

}  // namespace ptprof::view
