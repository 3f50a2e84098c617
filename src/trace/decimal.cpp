#include "trace/decimal.h"

#include <algorithm>
#include <string>

namespace ptprof::detail {

bool decimal_us_to_ns(std::string_view text, Wide* out) {
  std::size_t i = 0;
  const bool negative = i < text.size() && text[i] == '-';
  if (negative) ++i;
  std::string digits;  // integer and fraction digits, leading zeros dropped
  int64_t scale = 3;   // value = digits * 10^scale ns
  bool in_fraction = false;
  for (; i < text.size() && text[i] != 'e' && text[i] != 'E'; ++i) {
    const char c = text[i];
    if (c == '.') {
      in_fraction = true;
      continue;
    }
    if (!is_digit(c)) return false;
    if (in_fraction) --scale;
    if (!digits.empty() || c != '0') digits.push_back(c);
  }
  if (i < text.size()) {  // exponent; saturated, any |e| beyond 1e6 is out of range anyway
    ++i;
    const bool exp_negative = i < text.size() && text[i] == '-';
    if (i < text.size() && (text[i] == '-' || text[i] == '+')) ++i;
    int64_t e = 0;
    for (; i < text.size(); ++i) {
      if (!is_digit(text[i])) return false;
      e = std::min<int64_t>(e * 10 + (text[i] - '0'), 1000000);
    }
    scale += exp_negative ? -e : e;
  }
  if (digits.empty()) {
    *out = 0;
    return true;
  }
  const int64_t n = static_cast<int64_t>(digits.size());
  const int64_t kept = n + std::min<int64_t>(scale, 0);  // digits left of the ns point
  if (kept + std::max<int64_t>(scale, 0) > 36) return false;
  Wide v = 0;
  for (int64_t k = 0; k < kept; ++k) v = v * 10 + (digits[k] - '0');
  for (int64_t k = 0; k < scale; ++k) v *= 10;
  if (kept >= 0 && kept < n && digits[kept] >= '5') ++v;  // the first dropped digit rounds
  *out = negative ? -v : v;
  return true;
}

int64_t id_from_text(std::string_view s) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (!is_digit(s[i])) continue;
    std::size_t j = i;
    while (j < s.size() && is_digit(s[j])) ++j;
    const bool negative = i > 0 && s[i - 1] == '-';
    const IntValue v = parse_int(s.substr(negative ? i - 1 : i, j - i + (negative ? 1 : 0)));
    return v.i64(0);
  }
  return 0;
}

}  // namespace ptprof::detail
