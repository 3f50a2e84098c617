// libFuzzer target: the `ptprof` command's reader on an untrusted file (the gzip path:
// truncated, corrupt or concatenated streams, zip bombs up to libFuzzer's memory limit), read
// as the command reads it: streamed from the file, decompressed in chunks. read_trace_file
// (the whole text at once) must agree with it. The input goes through a real file.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "trace/trace_reader.h"
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
  bool text_ok = true;
  try {
    text = ptprof::detail::read_trace_file(path);
  } catch (const ptprof::Error&) {
    text_ok = false;
  }
  // A gzip'ed input must come out different from its bytes (or be rejected above).
  if (text_ok && size >= 2 && data[0] == 0x1f && data[1] == 0x8b &&
      text == std::string(reinterpret_cast<const char*>(data), size))
    __builtin_trap();
  ptprof::Trace trace;
  try {
    trace = ptprof::detail::read_trace(path);
  } catch (const ptprof::Error&) {
    // The streaming reader rejects what the text does not parse into: the same verdict.
    if (text_ok) {
      try {
        ptprof::detail::parse_trace(text, path);
      } catch (const ptprof::Error&) {
        return 0;
      }
      __builtin_trap();
    }
    return 0;
  }
  if (!text_ok) __builtin_trap();  // a file the stream read but the whole-text read rejected
  ptprof::fuzz::exercise_trace(trace);
  return 0;
}
