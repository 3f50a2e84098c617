// Times, shares and names as outputs print them (format.h).
#include "render/format.h"

#include "trace/json_writer.h"

namespace ptprof::detail {

std::string ms(double ns) {
  return format_fixed(ns / 1e6, 3) + " ms";
}

std::string pct(double share) {
  return format_fixed(share * 100, 1) + "%";
}

std::string shorten(std::string_view s, std::size_t n) {
  if (s.size() <= n) return std::string(s);
  std::size_t cut = n - 3;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  return std::string(s.substr(0, cut)) + "...";
}

}  // namespace ptprof::detail
