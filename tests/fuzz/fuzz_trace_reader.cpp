// libFuzzer target: the `ptprof` command's trace reader on untrusted JSON text, and what the
// command then does with the trace (key_averages, its table, writing it back out). Anything
// but ptprof::Error for bad input is a bug: a crash, a sanitizer report, another exception.
#include <cstddef>
#include <cstdint>
#include <string>

#include "trace/trace_reader.h"
#include "fuzz_util.h"
#include "ptprof/error.h"
#include "ptprof/key_averages.h"
#include "ptprof/trace.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  ptprof::Trace trace;
  try {
    trace = ptprof::detail::parse_trace(text, "fuzz input");
  } catch (const ptprof::Error&) {
    return 0;  // rejected with a reason: fine
  }
  ptprof::fuzz::exercise_trace(trace);
  return 0;
}
