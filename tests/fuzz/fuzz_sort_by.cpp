// libFuzzer target: torch.profiler's sort_by names (`ptprof table --sort KEY`), through
// parse_sort_by and KeyAverages::table(std::string). Unknown names must be ptprof::Error.
#include <cstddef>
#include <cstdint>
#include <string>

#include "ptprof/error.h"
#include "ptprof/key_averages.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string name(reinterpret_cast<const char*>(data), size);
  ptprof::KeyAverages avg;
  avg.rows.push_back({"aten::add", "", 3, 10, 20, 0, 0, false, false, 0, 0, 0, 0, 0});
  avg.rows.push_back({name, "", 1, 5, 5, 0, 0, true, false, 0, 0, 0, 0, 0});
  try {
    const ptprof::SortBy by = ptprof::parse_sort_by(name);
    avg.sort(by);
    (void)avg.table(name, 10);
  } catch (const ptprof::Error& e) {
    // Lists the valid names (what() is a C string: a NUL in the name cuts it short).
    if (name.find('\0') == std::string::npos &&
        std::string(e.what()).find("valid:") == std::string::npos)
      __builtin_trap();
  }
  return 0;
}
