#include "trace/strict_json.h"

#include <algorithm>
#include <cstdio>
#include <string_view>

#include "trace/json_writer.h"

namespace ptprof::detail {

int strict_json(std::string* text) {
  const std::string_view s = *text;
  std::string out;
  bool changed = false;
  bool in_string = false;
  int depth = 0, max_depth = 0;
  std::size_t i = 0, copied = 0;
  auto replace = [&](std::size_t n, std::string_view with) {
    if (!changed) out.reserve(s.size() + 16);
    changed = true;
    out.append(s.data() + copied, i - copied);
    out.append(with);
    i += n;
    copied = i;
  };
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (!in_string) {
      if (c == '"') {
        in_string = true;
      } else if (c == '[' || c == '{') {
        max_depth = std::max(max_depth, ++depth);
      } else if (c == ']' || c == '}') {
        --depth;
      } else if (c == 'N') {  // N/A
        replace(3, "\"N/A\"");
        continue;
      }
      ++i;
    } else if (c == '"') {
      in_string = false;
      ++i;
    } else if (c == '\\') {
      i += s[i + 1] == 'u' ? 6 : 2;  // the cursor checked the escape
    } else if (c < 0x20) {
      char esc[7];
      std::snprintf(esc, sizeof(esc), "\\u%04x", c);
      replace(1, esc);
    } else if (c < 0x80) {
      ++i;
    } else if (const std::size_t n = utf8_sequence(s, i)) {
      i += n;
    } else {
      replace(1, "\\ufffd");  // as the writer writes an invalid byte
    }
  }
  if (changed) {
    out.append(s.data() + copied, s.size() - copied);
    *text = std::move(out);
  }
  return max_depth;
}

}  // namespace ptprof::detail
