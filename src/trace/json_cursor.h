// json_cursor.h: a pull tokenizer for JSON text that arrives in chunks (the trace reader's).
//
// The caller walks the document as it knows it (object members, array elements, typed
// values) and skips what it does not need, so nothing is built that the trace does not keep.
// Why hand-written rather than a library's SAX interface: the reader needs the exact text of
// numbers (nanoseconds from decimal microseconds), strings as views without a copy when they
// lie within the buffer, and skipping values without materializing them; measured against
// nlohmann's SAX, RapidJSON's Reader and simdjson (bench/bench_parsers.cpp, figures in the note
// of src/trace/trace_reader.cpp).
//
// Memory: one buffer of kBufferBytes, plus scratch for a string that crosses the buffer's end
// or has escapes (as long as the longest such string the caller reads; a caller that does not
// keep a string caps it), plus kMaxDepth bytes for skipping. Views returned point into the
// buffer or the scratch and are valid until the next call.
//
// Lenient where traces that consumers read need it: raw control characters in strings (as
// Python's json with strict=False, which TensorBoard's plugin falls back to), a bare N/A value
// (Kineto before pytorch/kineto#129), lone UTF-16 surrogates in \u escapes (read as U+FFFD),
// bytes that are not UTF-8 (passed on as they are; ptprof's writer repairs them). Strict
// otherwise: RFC 8259 grammar, one top-level value, nesting below kMaxDepth.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "trace/byte_source.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace ptprof::detail {

class JsonCursor {
 public:
  static constexpr std::size_t kBufferBytes = std::size_t{256} << 10;
  static constexpr std::size_t kMaxNumber = 1024;  // characters of one number
  static constexpr std::size_t kMaxDepth = 1024;   // nesting of arrays and objects
  static constexpr std::size_t kMaxKey = 256;      // longer keys read as "" (they match nothing)

  // `what` names the input in errors (a path).
  JsonCursor(ByteSource& source, std::string what);

  // The next character that is not whitespace, not consumed; -1 at the end of the input.
  int peek() {
    for (;;) {
      while (p_ < end_) {
        const char c = *p_;
        if (c != ' ' && c != '\n' && c != '\r' && c != '\t') return static_cast<unsigned char>(c);
        ++p_;
      }
      if (!refill(1)) return -1;
    }
  }
  // Consumes `c` (after whitespace), else fails saying `expected`.
  void expect(char c, const char* expected) {
    if (peek() != static_cast<unsigned char>(c)) fail(std::string("expected ") + expected);
    ++p_;
  }

  // Object members and array elements, after begin_object()/begin_array(): each call
  // consumes the separator before the next one; false (and the closing bracket consumed)
  // at the end. `first` starts true. next_member leaves the cursor at the member's value;
  // keys longer than `max_key` come back as "".
  void begin_object() { expect('{', "an object"); }
  void begin_array() { expect('[', "an array"); }
  bool next_member(bool& first, std::string_view& key, std::size_t max_key = kMaxKey);
  bool next_element(bool& first);

  // Typed values; each fails if the next value is not of its type.
  std::string_view string();  // decoded
  // A string, unless it is longer than `max` bytes: then skipped and false.
  bool short_string(std::size_t max, std::string_view& out);
  std::string_view number();  // the number's text, checked against JSON's grammar
  bool boolean();

  void skip();                     // any value
  void capture(std::string& out);  // any value, its text appended to `out` as it is in the input

  // Offset in the (uncompressed) input of the next unread byte.
  uint64_t offset() const { return base_ + static_cast<uint64_t>(p_ - buf_.get()); }
  // Reads on from `offset` of the input, dropping what is buffered; the source must be
  // seekable (ByteSource::seekable_size() > 0), and nothing captured.
  void seek(uint64_t offset);
  ByteSource& source() const { return source_; }
  // After the top-level value: fails if anything but whitespace follows.
  void expect_end();

  // A syntax error at offset(): "not valid JSON: <what>".
  [[noreturn]] void fail(const std::string& what) const;
  // Any error at `offset`, its message as given (after the file and offset).
  [[noreturn]] void fail_at(uint64_t offset, const std::string& what) const;
  const std::string& what() const { return what_; }

 private:
  // Makes at least `n` bytes available from p_ on, keeping [p_, end_) (and any capture);
  // false if the input ends first (what is left stays available).
  bool refill(std::size_t n);
  // The first '"' or '\\' in [p, end), or end.
  static const char* scan_string(const char* p, const char* end) {
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"');
    const __m128i backslash = _mm_set1_epi8('\\');
    while (end - p >= 16) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
      const int m =
          _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)));
      if (m != 0) return p + __builtin_ctz(static_cast<unsigned>(m));
      p += 16;
    }
#endif
    while (p < end && *p != '"' && *p != '\\') ++p;
    return p;
  }
  // After the opening quote: the string's decoded bytes (into scratch_ unless it lies whole in
  // the buffer without escapes). `keep` false: only skipped. Longer than `max`: *too_long.
  std::string_view string_body(std::size_t max, bool keep, bool* too_long);
  void escape(std::string* out, uint64_t string_start);
  void literal(const char* word, std::size_t n);

  ByteSource& source_;
  std::string what_;
  std::unique_ptr<char[]> buf_;  // kBufferBytes + padding
  const char* p_;
  const char* end_;
  uint64_t base_ = 0;  // offset of buf_[0] in the input
  bool eof_ = false;
  std::string scratch_;
  std::string* capture_ = nullptr;  // capture(): where consumed text goes before a refill
  const char* capture_from_ = nullptr;
  std::unique_ptr<char[]> stack_;  // skip(): the closing bracket of each open container
};

}  // namespace ptprof::detail
