// assets.h: the page's files (src/view/assets/), embedded in the binary at build time
// (ptprof_embed_text, cmake/ptprofEmbed.cmake, and a table src/view/CMakeLists.txt writes),
// so the page needs nothing from anywhere else.
#pragma once

#include <string_view>

namespace ptprof::view {

struct Asset {
  std::string_view path;          // "index.html", "js/app.js", ...
  std::string_view content_type;
  std::string_view body;
};

// The asset at `path` (relative to assets/), or null.
const Asset* find_asset(std::string_view path);

}  // namespace ptprof::view
