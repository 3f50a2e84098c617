#include "trace/json_writer.h"

#include <locale.h>

#include <cstdarg>
#include <cstdio>

#include <charconv>
#include <cmath>
#include <string>

#include "ptprof/error.h"

namespace ptprof::detail {

void append_fixed(std::string& out, double v, int decimals) {
  // std::to_chars never consults the locale. 309 integer digits at most (DBL_MAX).
  decimals = decimals < 0 ? 0 : decimals > 64 ? 64 : decimals;
  char buf[400];
  const auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, decimals);
  out.append(buf, r.ptr);
}

std::string format_c(const char* format, ...) {
  static const locale_t c_locale = ::newlocale(LC_ALL_MASK, "C", static_cast<locale_t>(nullptr));
  const locale_t previous = c_locale ? ::uselocale(c_locale) : static_cast<locale_t>(nullptr);
  char buf[512];
  va_list ap;
  va_start(ap, format);
  const int n = std::vsnprintf(buf, sizeof(buf), format, ap);
  va_end(ap);
  std::string out;
  if (n >= static_cast<int>(sizeof(buf))) {
    out.resize(static_cast<std::size_t>(n) + 1);
    va_start(ap, format);
    std::vsnprintf(out.data(), out.size(), format, ap);
    va_end(ap);
    out.resize(static_cast<std::size_t>(n));
  } else if (n > 0) {
    out.assign(buf, static_cast<std::size_t>(n));
  }
  if (previous) ::uselocale(previous);
  return out;
}

std::string format_fixed(double v, int decimals) {
  std::string out;
  append_fixed(out, v, decimals);
  return out;
}

std::string format_general(double v, int precision) {
  char buf[64];
  precision = precision < 1 ? 1 : precision > 17 ? 17 : precision;
  const auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general, precision);
  return std::string(buf, r.ptr);
}

JsonWriter::JsonWriter(Sink* sink) : sink_(sink) {
  buf_.reserve(sink ? kBlock + 4096 : 4096);
}

void JsonWriter::fail(const std::string& what) {
  throw Error("ptprof: JSON writer: " + what);
}

void JsonWriter::bad_key_array(std::size_t size) {
  fail("a key from a char array of " + std::to_string(size) +
       " bytes whose text does not end at its last byte (not a string literal); pass a "
       "std::string_view of the text");
}

void JsonWriter::separate(uint64_t bit) {
  if (nonempty_ & bit) {
    buf_.append(pending_newline_ ? ",\n" : ", ", 2);
  } else if (pending_newline_) {
    buf_.push_back('\n');
  }
  nonempty_ |= bit;
  pending_newline_ = false;
}

void JsonWriter::before_value() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (depth_ == 0) {
    if (started_) fail("a second top-level value");
    started_ = true;
    pending_newline_ = false;
    return;
  }
  const uint64_t bit = uint64_t{1} << (depth_ - 1);
  if (objects_ & bit) fail("a value in an object without its key");
  separate(bit);
}

void JsonWriter::before_key() {
  const uint64_t bit = depth_ > 0 ? uint64_t{1} << (depth_ - 1) : 0;
  if (!(objects_ & bit)) fail("a key outside an object");
  if (after_key_) fail("a key after a key that has no value");
  separate(bit);
}

void JsonWriter::push(bool object) {
  // Checked before anything is written for the new level.
  if (depth_ == kMaxDepth)
    fail("arrays and objects nested deeper than " + std::to_string(kMaxDepth));
  before_value();
  const uint64_t bit = uint64_t{1} << depth_;
  objects_ = object ? objects_ | bit : objects_ & ~bit;
  nonempty_ &= ~bit;
  ++depth_;
  buf_.push_back(object ? '{' : '[');
}

void JsonWriter::pop(bool object) {
  const char* what = object ? "end_object" : "end_array";
  if (depth_ == 0) fail(std::string(what) + " with nothing open");
  const bool in_object = (objects_ >> (depth_ - 1)) & 1;
  if (in_object != object)
    fail(std::string(what) + (in_object ? " inside an object" : " inside an array"));
  if (after_key_) fail(std::string(what) + " after a key that has no value");
  if (pending_newline_) buf_.push_back('\n');
  pending_newline_ = false;
  --depth_;
  buf_.push_back(object ? '}' : ']');
}

JsonWriter& JsonWriter::begin_object() {
  push(true);
  return *this;
}

JsonWriter& JsonWriter::end_object() {
  pop(true);
  return *this;
}

JsonWriter& JsonWriter::begin_array() {
  push(false);
  return *this;
}

JsonWriter& JsonWriter::end_array() {
  pop(false);
  return *this;
}

JsonWriter& JsonWriter::key(std::string_view k) {
  before_key();
  escape_into(buf_, k);
  buf_.append(": ");
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::value(std::string_view s) {
  before_value();
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
  before_value();
  append_int(buf_, v);
  return *this;
}

JsonWriter& JsonWriter::value(uint64_t v) {
  before_value();
  append_int(buf_, v);
  return *this;
}

JsonWriter& JsonWriter::value(double v) {
  before_value();
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
  before_value();
  buf_.append(v ? "true" : "false");
  return *this;
}

JsonWriter& JsonWriter::null() {
  before_value();
  buf_.append("null");
  return *this;
}

JsonWriter& JsonWriter::raw(std::string_view json) {
  const std::string problem = json_problem(json, kMaxDepth - depth_);
  if (!problem.empty()) fail("raw text that is not one JSON value (" + problem + ")");
  before_value();
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
  before_value();
  // The magnitude as uint64_t: -INT64_MIN does not fit int64_t.
  const uint64_t mag = static_cast<uint64_t>(ns);
  append_us(buf_, ns < 0, ns < 0 ? uint64_t{0} - mag : mag);
  return *this;
}

JsonWriter& JsonWriter::value_us(uint64_t ns) {
  before_value();
  append_us(buf_, false, ns);
  return *this;
}

JsonWriter& JsonWriter::newline() {
  pending_newline_ = true;
  return *this;
}

void JsonWriter::finish() {
  if (!started_ || depth_ != 0 || after_key_)
    fail("the document ends before its value is complete (" + std::to_string(depth_) +
         " arrays or objects open)");
  buf_.push_back('\n');
  flush();
}

void JsonWriter::flush() {
  if (sink_ && !buf_.empty()) {
    sink_->write(buf_.data(), buf_.size());
    buf_.clear();
  }
}

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
      case '"':
        out.append("\\\"");
        break;
      case '\\':
        out.append("\\\\");
        break;
      case '\b':
        out.append("\\b");
        break;
      case '\f':
        out.append("\\f");
        break;
      case '\n':
        out.append("\\n");
        break;
      case '\r':
        out.append("\\r");
        break;
      case '\t':
        out.append("\\t");
        break;
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

namespace {

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_hex(char c) {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// One pass over the text with an explicit stack of the open containers' closing brackets, so
// the depth bound, not the C++ stack, limits nesting.
class JsonChecker {
 public:
  JsonChecker(std::string_view s, int max_depth) : s_(s), max_depth_(max_depth) {}

  std::string check() {
    for (;;) {
      if (!value()) return problem_;
      // After a value: close containers, or a comma and the next member or element.
      for (;;) {
        space();
        if (open_.empty()) return i_ == s_.size() ? "" : at("text after the value");
        if (i_ == s_.size())
          return at(std::string("end of text; expected ',' or '") + open_.back() + "'");
        if (s_[i_] == open_.back()) {
          ++i_;
          open_.pop_back();
          continue;
        }
        if (s_[i_] != ',') return at(std::string("expected ',' or '") + open_.back() + "'");
        ++i_;
        if (open_.back() == '}' && !member_key()) return problem_;
        break;
      }
    }
  }

 private:
  std::string at(const std::string& what) const { return what + " at byte " + std::to_string(i_); }
  bool fail(const std::string& what) {
    problem_ = at(what);
    return false;
  }
  void space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\r' || s_[i_] == '\t'))
      ++i_;
  }
  bool word(std::string_view w) {
    if (s_.substr(i_, w.size()) != w) return fail("invalid value");
    i_ += w.size();
    return true;
  }
  // A value, or the opening of a container and then its first value; an empty container is
  // closed here.
  bool value() {
    for (;;) {
      space();
      if (i_ == s_.size()) return fail("end of text; expected a value");
      const char c = s_[i_];
      if (c != '{' && c != '[') break;
      if (static_cast<int>(open_.size()) >= max_depth_)
        return fail("arrays and objects nested deeper than " + std::to_string(max_depth_));
      ++i_;
      open_.push_back(c == '{' ? '}' : ']');
      space();
      if (i_ < s_.size() && s_[i_] == open_.back()) {
        ++i_;
        open_.pop_back();
        return true;
      }
      if (c == '{' && !member_key()) return false;
    }
    const char c = s_[i_];
    if (c == '"') return string();
    if (c == '-' || is_digit(c)) return number();
    if (c == 't') return word("true");
    if (c == 'f') return word("false");
    if (c == 'n') return word("null");
    return fail("invalid value");
  }
  // A member's key and its colon.
  bool member_key() {
    space();
    if (i_ == s_.size() || s_[i_] != '"') return fail("expected a key string");
    if (!string()) return false;
    space();
    if (i_ == s_.size() || s_[i_] != ':') return fail("expected ':' after a key");
    ++i_;
    return true;
  }
  bool string() {
    ++i_;  // the opening quote
    while (i_ < s_.size()) {
      const auto c = static_cast<unsigned char>(s_[i_]);
      if (c == '"') {
        ++i_;
        return true;
      }
      if (c == '\\') {
        const char e = i_ + 1 < s_.size() ? s_[i_ + 1] : '\0';
        if (e == 'u') {
          for (std::size_t k = 2; k < 6; ++k)
            if (i_ + k >= s_.size() || !is_hex(s_[i_ + k])) return fail("invalid \\u escape");
          i_ += 6;
        } else if (e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' ||
                   e == 'r' || e == 't') {
          i_ += 2;
        } else {
          return fail("invalid escape in a string");
        }
      } else if (c < 0x20) {
        return fail("unescaped control character in a string");
      } else if (c >= 0x80) {
        const std::size_t n = utf8_sequence(s_, i_);
        if (n == 0) return fail("invalid UTF-8 in a string");
        i_ += n;
      } else {
        ++i_;
      }
    }
    return fail("unterminated string");
  }
  bool digits() {
    if (i_ == s_.size() || !is_digit(s_[i_])) return fail("invalid number");
    while (i_ < s_.size() && is_digit(s_[i_])) ++i_;
    return true;
  }
  bool number() {
    if (s_[i_] == '-') ++i_;
    if (i_ < s_.size() && s_[i_] == '0') {
      ++i_;  // no leading zeros: "01" ends the number at "0"
    } else if (!digits()) {
      return false;
    }
    if (i_ < s_.size() && s_[i_] == '.') {
      ++i_;
      if (!digits()) return false;
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      ++i_;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      if (!digits()) return false;
    }
    return true;
  }

  std::string_view s_;
  int max_depth_;
  std::size_t i_ = 0;
  std::string open_;  // closing bracket of each open container
  std::string problem_;
};

}  // namespace

std::string json_problem(std::string_view text, int max_depth) {
  return JsonChecker(text, max_depth).check();
}

}  // namespace ptprof::detail
