// format.h: the few ways ptprof's outputs (terminal text, pages) print times, shares and
// names; numbers whatever the process locale (format_fixed).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace ptprof::detail {

std::string ms(double ns);      // "1.234 ms"
std::string pct(double share);  // 0.1234 -> "12.3%"
// At most n bytes (n >= 4): longer text is cut at a UTF-8 character boundary and ends in "...".
std::string shorten(std::string_view s, std::size_t n);

}  // namespace ptprof::detail
