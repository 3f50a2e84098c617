// reader_error.h: how every error of the trace reader begins.
#pragma once

#include <cstdint>
#include <string>

namespace ptprof::detail {

// "ptprof: PATH: byte N of the uncompressed JSON: ". N counts bytes of the JSON text itself:
// the file's bytes for a plain trace, the decompressed bytes for a gzip'ed one.
inline std::string reader_error_prefix(const std::string& what, uint64_t offset) {
  return "ptprof: " + what + ": byte " + std::to_string(offset) + " of the uncompressed JSON: ";
}

}  // namespace ptprof::detail
