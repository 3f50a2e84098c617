// json_writer.h: the one JSON writer of ptprof.
//
// Appends to a string buffer and hands full blocks to a Sink, so a trace of millions of
// events is written in constant memory. Commas and nesting are tracked here, strings are
// escaped per RFC 8259 and invalid UTF-8 is replaced by U+FFFD, so any name round-trips
// through a strict parser.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ptprof::detail {

class Sink {
 public:
  virtual ~Sink() = default;
  virtual void write(const char* data, std::size_t size) = 0;
};

class JsonWriter {
 public:
  // Without a sink everything stays in buffer().
  explicit JsonWriter(Sink* sink = nullptr);

  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  JsonWriter& key(std::string_view k);
  // A key known to need no escaping (a literal of ptprof's own): skips the escaping scan.
  template <std::size_t N>
  JsonWriter& key(const char (&literal)[N]) {
    separate();
    buf_.push_back('"');
    buf_.append(literal, N - 1);
    buf_.append("\": ", 3);
    after_key_ = true;
    return *this;
  }

  JsonWriter& value(std::string_view s);
  JsonWriter& value(const char* s) { return value(std::string_view(s)); }
  JsonWriter& value(int64_t v);
  JsonWriter& value(uint64_t v);
  JsonWriter& value(int32_t v) { return value(static_cast<int64_t>(v)); }
  JsonWriter& value(uint32_t v) { return value(static_cast<uint64_t>(v)); }
  JsonWriter& value(double v);
  JsonWriter& value(bool v);
  JsonWriter& null();
  // Text that is already valid JSON.
  JsonWriter& raw(std::string_view json);
  // Nanoseconds as the trace format's microseconds with exactly three decimals.
  JsonWriter& value_us(int64_t ns);
  // The same for an offset that may exceed INT64_MAX (a time minus a far earlier base).
  JsonWriter& value_us(uint64_t ns);
  // The next element starts on a new line (keeps traces greppable; not significant in JSON).
  JsonWriter& newline();

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
  void separate();
  void push();

  Sink* sink_;
  std::string buf_;
  static constexpr int kMaxDepth = 64;
  bool first_[kMaxDepth];  // per open container: no element written yet
  int depth_ = 0;
  bool after_key_ = false;
  bool pending_newline_ = false;
};

}  // namespace ptprof::detail
