// libFuzzer target: read_trace_file on untrusted bytes (the gzip path: truncated, corrupt or
// concatenated streams, zip bombs up to libFuzzer's memory limit), then the parser on what it
// decompressed. The input goes through a real file, as the `ptprof` command reads it.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "cli/trace_reader.h"
#include "fuzz_util.h"
#include "ptprof/error.h"
#include "ptprof/trace.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  // One in-memory file for the whole run, rewritten per input.
  static const int fd = memfd_create("ptprof_fuzz_trace", 0);
  static const std::string path = "/proc/self/fd/" + std::to_string(fd);
  if (fd < 0 || ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != static_cast<ssize_t>(size))
    __builtin_trap();  // the harness itself failed
  std::string text;
  try {
    text = ptprof::detail::read_trace_file(path);
  } catch (const ptprof::Error&) {
    return 0;
  }
  // A gzip'ed input must come out different from its bytes (or be rejected above).
  if (size >= 2 && data[0] == 0x1f && data[1] == 0x8b &&
      text == std::string(reinterpret_cast<const char*>(data), size))
    __builtin_trap();
  try {
    ptprof::fuzz::exercise_trace(ptprof::detail::parse_trace(text, path));
  } catch (const ptprof::Error&) {
  }
  return 0;
}
