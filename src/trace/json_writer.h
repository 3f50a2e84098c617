// json_writer.h: the one JSON writer of ptprof, and the number text of all its writers.
//
// Appends to a string buffer and hands full blocks to a Sink, so a trace of millions of
// events is written in constant memory. Commas and nesting are tracked here, strings are
// escaped per RFC 8259 and invalid UTF-8 is replaced by U+FFFD, so any name round-trips
// through a strict parser. Whatever would make invalid JSON (a key outside an object, a value
// without its key, an end that does not match, nesting deeper than kMaxDepth, raw() text that
// is not one JSON value) throws ptprof::Error instead of being written.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace ptprof::detail {

// Numbers as text for SVG, HTML, JSON and tables, whatever the process locale: printf's %f and
// %g, iostreams and std::to_string(double) follow LC_NUMERIC, which a host program may set to
// one with a decimal comma ("1,50" is no SVG coordinate). The digits are printf's in "C".
void append_fixed(std::string& out, double v, int decimals);  // "%.*f"
std::string format_fixed(double v, int decimals);
// printf into a string as in the "C" locale whatever the process's is (uselocale, this thread
// only), for text that mixes numbers with words; numbers alone go through format_fixed.
std::string format_c(const char* format, ...) __attribute__((format(printf, 1, 2)));
std::string format_general(double v, int precision = 6);  // "%.*g"

// Length of the well-formed UTF-8 sequence starting at s[i] (no overlong forms, surrogates or
// values past U+10FFFF), or 0 where there is none.
std::size_t utf8_sequence(std::string_view s, std::size_t i);

// "" when `text` is exactly one JSON value (RFC 8259; UTF-8; whitespace around it allowed)
// with arrays and objects nested at most `max_depth` deep; else what is wrong, and where.
std::string json_problem(std::string_view text, int max_depth);

class Sink {
 public:
  virtual ~Sink() = default;
  virtual void write(const char* data, std::size_t size) = 0;
};

class JsonWriter {
 public:
  // Arrays and objects nested in one document, raw() text included. Deeper than ptprof ever
  // writes; every consumer reads it (Python's json stops near 1000).
  static constexpr int kMaxDepth = 64;

  // Without a sink everything stays in buffer().
  explicit JsonWriter(Sink* sink = nullptr);

  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  JsonWriter& key(std::string_view k);
  // A key from a string literal of ptprof's own: written without escaping when it needs none.
  // A const array whose text does not end at its last byte is not such a literal (a padded
  // buffer would be written NULs and all): an error. A mutable array does not compile.
  template <std::size_t N>
  JsonWriter& key(const char (&literal)[N]) {
    // strlen and strcspn of a literal are folded by the compiler: no scan at run time.
    if (literal[N - 1] != '\0' || std::strlen(literal) != N - 1) bad_key_array(N);
    if (std::strcspn(literal, kNeedsEscaping) != N - 1)
      return key(std::string_view(literal, N - 1));
    before_key();
    buf_.push_back('"');
    buf_.append(literal, N - 1);
    buf_.append("\": ", 3);
    after_key_ = true;
    return *this;
  }
  template <std::size_t N>
  JsonWriter& key(char (&buffer)[N]) = delete;  // pass std::string_view(buffer) instead

  JsonWriter& value(std::string_view s);
  JsonWriter& value(const char* s) { return value(std::string_view(s)); }
  JsonWriter& value(int64_t v);
  JsonWriter& value(uint64_t v);
  JsonWriter& value(int32_t v) { return value(static_cast<int64_t>(v)); }
  JsonWriter& value(uint32_t v) { return value(static_cast<uint64_t>(v)); }
  JsonWriter& value(double v);
  JsonWriter& value(bool v);
  JsonWriter& null();
  // Text that must be one JSON value (checked: an error otherwise).
  JsonWriter& raw(std::string_view json);
  // Nanoseconds as the trace format's microseconds with exactly three decimals.
  JsonWriter& value_us(int64_t ns);
  // The same for an offset that may exceed INT64_MAX (a time minus a far earlier base).
  JsonWriter& value_us(uint64_t ns);
  // The next element starts on a new line (keeps traces greppable; not significant in JSON).
  JsonWriter& newline();
  // Ends the document: an error unless it is one complete value; adds a final newline and
  // flushes.
  void finish();

  // Sends buffered bytes to the sink if more than a block is pending.
  void maybe_flush() {
    if (sink_ && buf_.size() >= kBlock) flush();
  }
  void flush();
  const std::string& buffer() const { return buf_; }
  std::string take() { return std::move(buf_); }

  static void escape_into(std::string& out, std::string_view s);

 private:
  static constexpr std::size_t kBlock = 1 << 20;
  // Bytes a key cannot be written as: '"', '\\', controls and non-ASCII (checked as UTF-8).
  static constexpr char kNeedsEscaping[] =
      "\"\\\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10\x11\x12\x13\x14\x15"
      "\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f\x80\x81\x82\x83\x84\x85\x86\x87\x88\x89\x8a\x8b"
      "\x8c\x8d\x8e\x8f\x90\x91\x92\x93\x94\x95\x96\x97\x98\x99\x9a\x9b\x9c\x9d\x9e\x9f\xa0\xa1"
      "\xa2\xa3\xa4\xa5\xa6\xa7\xa8\xa9\xaa\xab\xac\xad\xae\xaf\xb0\xb1\xb2\xb3\xb4\xb5\xb6\xb7"
      "\xb8\xb9\xba\xbb\xbc\xbd\xbe\xbf\xc0\xc1\xc2\xc3\xc4\xc5\xc6\xc7\xc8\xc9\xca\xcb\xcc\xcd"
      "\xce\xcf\xd0\xd1\xd2\xd3\xd4\xd5\xd6\xd7\xd8\xd9\xda\xdb\xdc\xdd\xde\xdf\xe0\xe1\xe2\xe3"
      "\xe4\xe5\xe6\xe7\xe8\xe9\xea\xeb\xec\xed\xee\xef\xf0\xf1\xf2\xf3\xf4\xf5\xf6\xf7\xf8\xf9"
      "\xfa\xfb\xfc\xfd\xfe\xff";
  [[noreturn]] static void bad_key_array(std::size_t size);
  [[noreturn]] static void fail(const std::string& what);
  void before_value();
  void before_key();
  void separate(uint64_t bit);
  void push(bool object);
  void pop(bool object);

  Sink* sink_;
  std::string buf_;
  uint64_t objects_ = 0;   // bit d: the container at depth d + 1 is an object
  uint64_t nonempty_ = 0;  // bit d: it has an element already
  int depth_ = 0;
  bool after_key_ = false;
  bool pending_newline_ = false;
  bool started_ = false;  // the top-level value has begun
};

}  // namespace ptprof::detail
