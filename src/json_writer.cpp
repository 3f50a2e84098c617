#include "json_writer.h"

#include <charconv>
#include <cmath>

namespace ptprof::detail {

JsonWriter::JsonWriter(Sink* sink) : sink_(sink) {
  buf_.reserve(sink ? kBlock + 4096 : 4096);
}

void JsonWriter::separate() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (depth_ > 0) {
    if (!first_[depth_ - 1]) buf_.append(pending_newline_ ? ",\n" : ", ", 2);
    else if (pending_newline_) buf_.push_back('\n');
    first_[depth_ - 1] = false;
  }
  pending_newline_ = false;
}

void JsonWriter::push() {
  // Deeper nesting than ptprof ever writes would be a bug; keep writing valid JSON regardless
  // by treating the extra levels as sharing the last flag.
  if (depth_ < kMaxDepth) ++depth_;
  first_[depth_ - 1] = true;
}

JsonWriter& JsonWriter::begin_object() {
  separate();
  buf_.push_back('{');
  push();
  return *this;
}

JsonWriter& JsonWriter::end_object() {
  if (pending_newline_) buf_.push_back('\n');
  pending_newline_ = false;
  if (depth_ > 0) --depth_;
  buf_.push_back('}');
  return *this;
}

JsonWriter& JsonWriter::begin_array() {
  separate();
  buf_.push_back('[');
  push();
  return *this;
}

JsonWriter& JsonWriter::end_array() {
  if (pending_newline_) buf_.push_back('\n');
  pending_newline_ = false;
  if (depth_ > 0) --depth_;
  buf_.push_back(']');
  return *this;
}

JsonWriter& JsonWriter::key(std::string_view k) {
  separate();
  escape_into(buf_, k);
  buf_.append(": ");
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::value(std::string_view s) {
  separate();
  escape_into(buf_, s);
  return *this;
}

namespace {
template <typename T>
void append_int(std::string& out, T v) {
  char tmp[24];
  auto r = std::to_chars(tmp, tmp + sizeof(tmp), v);
  out.append(tmp, r.ptr);
}
}  // namespace

JsonWriter& JsonWriter::value(int64_t v) {
  separate();
  append_int(buf_, v);
  return *this;
}

JsonWriter& JsonWriter::value(uint64_t v) {
  separate();
  append_int(buf_, v);
  return *this;
}

JsonWriter& JsonWriter::value(double v) {
  separate();
  if (!std::isfinite(v)) {
    // JSON has no inf/nan; Kineto writes such values as strings.
    buf_.append(std::isnan(v) ? "\"nan\"" : (v > 0 ? "\"inf\"" : "\"-inf\""));
    return *this;
  }
  char tmp[32];
  auto r = std::to_chars(tmp, tmp + sizeof(tmp), v);
  buf_.append(tmp, r.ptr);
  return *this;
}

JsonWriter& JsonWriter::value(bool v) {
  separate();
  buf_.append(v ? "true" : "false");
  return *this;
}

JsonWriter& JsonWriter::null() {
  separate();
  buf_.append("null");
  return *this;
}

JsonWriter& JsonWriter::raw(std::string_view json) {
  separate();
  buf_.append(json);
  return *this;
}

namespace {
void append_us(std::string& out, bool negative, uint64_t ns) {
  if (negative) out.push_back('-');
  append_int(out, ns / 1000);
  const int frac = static_cast<int>(ns % 1000);
  char f[4] = {'.', static_cast<char>('0' + frac / 100), static_cast<char>('0' + frac / 10 % 10),
               static_cast<char>('0' + frac % 10)};
  out.append(f, 4);
}
}  // namespace

JsonWriter& JsonWriter::value_us(int64_t ns) {
  separate();
  // The magnitude as uint64_t: -INT64_MIN does not fit int64_t.
  const uint64_t mag = static_cast<uint64_t>(ns);
  append_us(buf_, ns < 0, ns < 0 ? uint64_t{0} - mag : mag);
  return *this;
}

JsonWriter& JsonWriter::value_us(uint64_t ns) {
  separate();
  append_us(buf_, false, ns);
  return *this;
}

JsonWriter& JsonWriter::newline() {
  pending_newline_ = true;
  return *this;
}

void JsonWriter::flush() {
  if (sink_ && !buf_.empty()) {
    sink_->write(buf_.data(), buf_.size());
    buf_.clear();
  }
}

namespace {
// Length of the valid UTF-8 sequence starting at s[i], or 0 if it is invalid.
std::size_t utf8_sequence(std::string_view s, std::size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  std::size_t n;
  uint32_t cp;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
    cp = c & 0x1F;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    cp = c & 0x0F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    const auto cc = static_cast<unsigned char>(s[i + k]);
    if ((cc & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (cc & 0x3F);
  }
  // Overlong encodings, surrogates and values past U+10FFFF are invalid.
  if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
      (cp >= 0xD800 && cp <= 0xDFFF)) {
    return 0;
  }
  return n;
}
}  // namespace

void JsonWriter::escape_into(std::string& out, std::string_view s) {
  static const char* kHex = "0123456789abcdef";
  out.push_back('"');
  std::size_t run = 0;  // start of the pending run of bytes that need no escaping
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
      ++i;
      continue;
    }
    if (c >= 0x80) {
      const std::size_t n = utf8_sequence(s, i);
      if (n != 0) {
        i += n;
        continue;
      }
    }
    out.append(s.data() + run, i - run);
    switch (c) {
      case '"': out.append("\\\""); break;
      case '\\': out.append("\\\\"); break;
      case '\b': out.append("\\b"); break;
      case '\f': out.append("\\f"); break;
      case '\n': out.append("\\n"); break;
      case '\r': out.append("\\r"); break;
      case '\t': out.append("\\t"); break;
      default:
        if (c < 0x20) {
          const char e[6] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 0xF]};
          out.append(e, 6);
        } else {
          out.append("\\ufffd");  // invalid UTF-8 byte
        }
    }
    ++i;
    run = i;
  }
  out.append(s.data() + run, s.size() - run);
  out.push_back('"');
}

}  // namespace ptprof::detail
