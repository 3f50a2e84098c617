#include "trace/event_boundary.h"

#include <string>

namespace ptprof::detail {

uint64_t guess_event_start(ByteSource& source, uint64_t from) {
  // Events are a few hundred bytes: a MiB holds thousands of boundaries.
  std::string buf(std::size_t{1} << 20, '\0');
  source.seek(from);
  std::size_t n = 0;
  while (n < buf.size()) {
    const std::size_t got = source.read(buf.data() + n, buf.size() - n);
    if (got == 0) break;
    n += got;
  }
  auto skip_space = [&](std::size_t i) {
    while (i < n && (buf[i] == ' ' || buf[i] == '\n' || buf[i] == '\r' || buf[i] == '\t')) ++i;
    return i;
  };
  for (std::size_t i = 0; i < n; ++i) {
    if (buf[i] != '}') continue;
    std::size_t j = skip_space(i + 1);
    if (j >= n || buf[j] != ',') continue;
    j = skip_space(j + 1);
    if (j >= n || buf[j] != '{') continue;
    const std::size_t k = skip_space(j + 1);
    if (k < n && buf[k] == '"') return from + j;
  }
  return 0;
}

}  // namespace ptprof::detail
