// decimal.h: a trace's numbers from their JSON text, exactly: µs times to ns without a detour
// through a double, integers to 64 bits with their sign. Inline because the reader calls them
// per event and per number; only the rare general µs case is out of line (decimal.cpp).
#pragma once

#include <cstdint>
#include <limits>
#include <string_view>

namespace ptprof::detail {

// Room for a time the text gives plus a base, checked against int64 once added.
using Wide = __int128;
inline constexpr Wide kInt64Min = std::numeric_limits<int64_t>::min();
inline constexpr Wide kInt64Max = std::numeric_limits<int64_t>::max();

inline bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// A JSON number's text in µs -> exact ns: the decimal digits shifted by three places and the
// exponent, rounded half away from zero where more than three decimals remain. False where
// the magnitude reaches 1e36 ns, far outside any int64 ns time.
bool decimal_us_to_ns(std::string_view text, Wide* out);

// The same, fast for what Kineto and ptprof write ("123", "123.4", "123.456"); anything else
// (more decimals, exponents, huge) goes the general way above.
inline bool us_to_ns(std::string_view s, Wide* out) {
  const char* p = s.data();
  const char* e = p + s.size();
  const bool negative = p < e && *p == '-';
  if (negative) ++p;
  const char* digits = p;
  uint64_t v = 0;
  while (p < e && is_digit(*p) && p - digits < 18) v = v * 10 + static_cast<uint64_t>(*p++ - '0');
  Wide ns;
  if (p == e) {
    ns = Wide{v} * 1000;
  } else if (*p == '.' && e - p <= 4) {
    ++p;
    uint64_t frac = 0;
    int k = 0;
    for (; p < e && is_digit(*p); ++p, ++k) frac = frac * 10 + static_cast<uint64_t>(*p - '0');
    if (p != e) return decimal_us_to_ns(s, out);
    for (; k < 3; ++k) frac *= 10;
    ns = Wide{v} * 1000 + frac;
  } else {
    return decimal_us_to_ns(s, out);
  }
  *out = negative ? -ns : ns;
  return true;
}

// An integer's value and sign, or nothing for a number with a fraction or exponent (old
// readers ignored those too) or beyond 64 bits.
struct IntValue {
  bool has = false;
  bool negative = false;
  uint64_t magnitude = 0;

  int64_t i64(int64_t fallback) const {
    if (!has) return fallback;
    if (negative) return static_cast<int64_t>(uint64_t{0} - magnitude);
    return magnitude > static_cast<uint64_t>(kInt64Max) ? fallback
                                                        : static_cast<int64_t>(magnitude);
  }
  // Negative values keep their two's-complement bits, as the old reader's casts did.
  uint64_t u64(uint64_t fallback) const {
    if (!has) return fallback;
    return negative ? uint64_t{0} - magnitude : magnitude;
  }
};

inline IntValue parse_int(std::string_view s) {
  IntValue v;
  std::size_t i = 0;
  if (i < s.size() && s[i] == '-') {
    v.negative = true;
    ++i;
  }
  if (i == s.size()) return IntValue{};
  uint64_t m = 0;
  for (; i < s.size(); ++i) {
    if (!is_digit(s[i])) return IntValue{};
    const uint64_t d = static_cast<uint64_t>(s[i] - '0');
    if (m > (std::numeric_limits<uint64_t>::max() - d) / 10) return IntValue{};
    m = m * 10 + d;
  }
  // -2^63 is the most negative int64; below it there is no value to keep.
  if (v.negative && m > uint64_t{1} << 63) return IntValue{};
  v.has = true;
  v.magnitude = m;
  return v;
}

// A pid or tid: an integer, or one written as a string by older Kineto ("1234",
// "stream 7", "stream 7 annotations"): its first integer. Other strings ("Spans") are 0.
int64_t id_from_text(std::string_view s);

}  // namespace ptprof::detail
