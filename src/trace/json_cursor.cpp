#include "trace/json_cursor.h"

#include <cstring>

#include "trace/reader_error.h"
#include "ptprof/error.h"

namespace ptprof::detail {

namespace {

// Zeroed bytes after the data, so that a look one byte ahead never reads garbage.
constexpr std::size_t kPadding = 64;

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void put_utf8(std::string* out, uint32_t cp) {
  if (out == nullptr) return;
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string describe(int c) {
  if (c < 0) return "the end of the input";
  if (c >= 0x20 && c < 0x7F) return std::string("'") + static_cast<char>(c) + "'";
  return "byte " + std::to_string(c);
}

}  // namespace

JsonCursor::JsonCursor(ByteSource& source, std::string what)
    : source_(source),
      what_(std::move(what)),
      buf_(new char[kBufferBytes + kPadding]),
      stack_(new char[kMaxDepth]) {
  p_ = end_ = buf_.get();
  std::memset(buf_.get(), 0, kPadding);
}

void JsonCursor::seek(uint64_t offset) {
  source_.seek(offset);
  p_ = end_ = buf_.get();
  base_ = offset;
  eof_ = false;
}

void JsonCursor::fail_at(uint64_t offset, const std::string& what) const {
  throw Error(reader_error_prefix(what_, offset) + what);
}

void JsonCursor::fail(const std::string& what) const {
  fail_at(offset(), "not valid JSON: " + what);
}

bool JsonCursor::refill(std::size_t n) {
  if (static_cast<std::size_t>(end_ - p_) >= n) return true;
  if (eof_) return false;
  char* buf = buf_.get();
  if (capture_ != nullptr) {
    capture_->append(capture_from_, p_);
    capture_from_ = buf;
  }
  const std::size_t rest = static_cast<std::size_t>(end_ - p_);
  if (p_ != buf) std::memmove(buf, p_, rest);
  base_ += static_cast<uint64_t>(p_ - buf);
  p_ = buf;
  char* end = buf + rest;
  // Fill the whole buffer: fewer, larger reads.
  while (end < buf + kBufferBytes) {
    const std::size_t got = source_.read(end, static_cast<std::size_t>(buf + kBufferBytes - end));
    if (got == 0) {
      eof_ = true;
      break;
    }
    end += got;
  }
  end_ = end;
  std::memset(end, 0, kPadding);
  return static_cast<std::size_t>(end_ - p_) >= n;
}

bool JsonCursor::next_member(bool& first, std::string_view& key, std::size_t max_key) {
  int c = peek();
  if (c == '}') {
    ++p_;
    return false;
  }
  if (!first) {
    if (c != ',') fail("expected ',' or '}' in an object, found " + describe(c));
    ++p_;
    c = peek();
  }
  first = false;
  if (c != '"') fail("expected a key (a string) in an object, found " + describe(c));
  ++p_;
  bool too_long = false;
  key = string_body(max_key, true, &too_long);
  if (too_long) key = std::string_view();
  if (peek() != ':') fail("expected ':' after a key");
  ++p_;
  return true;
}

bool JsonCursor::next_element(bool& first) {
  int c = peek();
  if (c == ']') {
    ++p_;
    return false;
  }
  if (!first) {
    if (c != ',') fail("expected ',' or ']' in an array, found " + describe(c));
    ++p_;
  }
  first = false;
  return true;
}

std::string_view JsonCursor::string() {
  const int c = peek();
  if (c != '"') fail("expected a string, found " + describe(c));
  ++p_;
  bool too_long = false;
  return string_body(std::string::npos, true, &too_long);
}

bool JsonCursor::short_string(std::size_t max, std::string_view& out) {
  const int c = peek();
  if (c != '"') fail("expected a string, found " + describe(c));
  ++p_;
  bool too_long = false;
  out = string_body(max, true, &too_long);
  return !too_long;
}

std::string_view JsonCursor::string_body(std::size_t max, bool keep, bool* too_long) {
  const uint64_t start = offset() - 1;
  const char* q = scan_string(p_, end_);
  if (q < end_ && *q == '"') {  // the common case: whole in the buffer, no escapes
    const std::string_view s(p_, static_cast<std::size_t>(q - p_));
    p_ = q + 1;
    if (s.size() > max) *too_long = true;
    return s;
  }
  std::string* out = keep ? &scratch_ : nullptr;
  if (out) out->clear();
  for (;;) {
    if (out) {
      out->append(p_, q);
      if (out->size() > max) {  // stop keeping; go on only to find the end
        *too_long = true;
        out = nullptr;
      }
    }
    p_ = q;
    if (p_ == end_) {
      if (!refill(1)) fail_at(start, "not valid JSON: a string is not terminated");
    } else if (*p_ == '"') {
      ++p_;
      break;
    } else {
      escape(out, start);
    }
    q = scan_string(p_, end_);
  }
  return *too_long || !keep ? std::string_view() : std::string_view(scratch_);
}

void JsonCursor::escape(std::string* out, uint64_t string_start) {
  // At the backslash; \uXXXX\uXXXX is the longest escape.
  refill(12);
  if (end_ - p_ < 2) fail_at(string_start, "not valid JSON: a string is not terminated");
  const char e = p_[1];
  p_ += 2;
  char c;
  switch (e) {
    case '"':
      c = '"';
      break;
    case '\\':
      c = '\\';
      break;
    case '/':
      c = '/';
      break;
    case 'b':
      c = '\b';
      break;
    case 'f':
      c = '\f';
      break;
    case 'n':
      c = '\n';
      break;
    case 'r':
      c = '\r';
      break;
    case 't':
      c = '\t';
      break;
    case 'u': {
      auto hex4 = [&](const char* h) {
        int v = 0;
        for (int i = 0; i < 4; ++i) {
          const int d = h + i < end_ ? hex_value(h[i]) : -1;
          if (d < 0) return -1;
          v = v * 16 + d;
        }
        return v;
      };
      const int hi = hex4(p_);
      if (hi < 0) fail("a \\u escape needs four hex digits");
      p_ += 4;
      uint32_t cp = static_cast<uint32_t>(hi);
      if (cp >= 0xD800 && cp <= 0xDBFF) {
        // A high surrogate: a low one must follow to make one code point.
        const int lo = end_ - p_ >= 6 && p_[0] == '\\' && p_[1] == 'u' ? hex4(p_ + 2) : -1;
        if (lo >= 0xDC00 && lo <= 0xDFFF) {
          cp = 0x10000 + ((cp - 0xD800) << 10) + (static_cast<uint32_t>(lo) - 0xDC00);
          p_ += 6;
        } else {
          cp = 0xFFFD;
        }
      } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
        cp = 0xFFFD;
      }
      put_utf8(out, cp);
      return;
    }
    default:
      fail("invalid escape '\\" + std::string(1, e) + "' in a string");
  }
  if (out) out->push_back(c);
}

std::string_view JsonCursor::number() {
  const int first = peek();
  if (first != '-' && !is_digit(static_cast<char>(first)))
    fail("expected a number, found " + describe(first));
  refill(kMaxNumber + 1);
  const char* s = p_;
  const char* q = p_;
  const char* e = end_;
  if (*q == '-') ++q;
  if (q < e && *q == '0') {
    ++q;
  } else if (q < e && is_digit(*q)) {
    while (q < e && is_digit(*q)) ++q;
  } else {
    fail("a number has no digits");
  }
  if (q < e && *q == '.') {
    ++q;
    if (!(q < e && is_digit(*q))) fail("a number has no digits after its '.'");
    while (q < e && is_digit(*q)) ++q;
  }
  if (q < e && (*q == 'e' || *q == 'E')) {
    ++q;
    if (q < e && (*q == '+' || *q == '-')) ++q;
    if (!(q < e && is_digit(*q))) fail("a number has no digits in its exponent");
    while (q < e && is_digit(*q)) ++q;
  }
  if (static_cast<std::size_t>(q - s) > kMaxNumber)
    fail("a number is longer than " + std::to_string(kMaxNumber) + " characters");
  p_ = q;
  return std::string_view(s, static_cast<std::size_t>(q - s));
}

void JsonCursor::literal(const char* word, std::size_t n) {
  refill(n);
  if (static_cast<std::size_t>(end_ - p_) < n || std::memcmp(p_, word, n) != 0)
    fail(std::string("expected a value (did you mean ") + word + "?)");
  p_ += n;
}

bool JsonCursor::boolean() {
  const int c = peek();
  if (c == 't') {
    literal("true", 4);
    return true;
  }
  if (c == 'f') {
    literal("false", 5);
    return false;
  }
  fail("expected true or false, found " + describe(c));
}

void JsonCursor::skip() {
  std::size_t depth = 0;
  char* stack = stack_.get();
  for (;;) {
    // A value.
    const int c = peek();
    switch (c) {
      case '"': {
        ++p_;
        bool too_long = false;
        string_body(0, false, &too_long);
        break;
      }
      case '{':
      case '[': {
        if (depth == kMaxDepth)
          fail("arrays and objects are nested deeper than " + std::to_string(kMaxDepth));
        ++p_;
        const char close = c == '{' ? '}' : ']';
        if (peek() == close) {
          ++p_;
          break;
        }
        stack[depth++] = close;
        if (close == '}') {
          if (peek() != '"') fail("expected a key (a string) in an object");
          ++p_;
          bool too_long = false;
          string_body(0, false, &too_long);
          expect(':', "':' after a key");
        }
        continue;  // to the first element's value
      }
      case 't':
        literal("true", 4);
        break;
      case 'f':
        literal("false", 5);
        break;
      case 'n':
        literal("null", 4);
        break;
      case 'N':
        literal("N/A", 3);
        break;
      default:
        if (c == '-' || (c >= '0' && c <= '9')) {
          number();
          break;
        }
        fail("expected a value, found " + describe(c));
    }
    // After a value: close what ends here, then the separator before the next value.
    for (;;) {
      if (depth == 0) return;
      const int d = peek();
      if (d == stack[depth - 1]) {
        ++p_;
        --depth;
        continue;
      }
      if (d != ',')
        fail(std::string("expected ',' or '") + stack[depth - 1] + "', found " + describe(d));
      ++p_;
      if (stack[depth - 1] == '}') {
        if (peek() != '"') fail("expected a key (a string) in an object");
        ++p_;
        bool too_long = false;
        string_body(0, false, &too_long);
        expect(':', "':' after a key");
      }
      break;
    }
  }
}

void JsonCursor::capture(std::string& out) {
  peek();
  capture_ = &out;
  capture_from_ = p_;
  try {
    skip();
  } catch (...) {
    capture_ = nullptr;
    throw;
  }
  out.append(capture_from_, p_);
  capture_ = nullptr;
}

void JsonCursor::expect_end() {
  const int c = peek();
  if (c >= 0) fail("unexpected " + describe(c) + " after the top-level value");
}

}  // namespace ptprof::detail
