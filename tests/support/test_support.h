// Helpers shared by every test, torch-free: temp dirs, reading traces back, counting events.
// The recording tests add their models in tests/recording/test_util.h.
#pragma once

#include <nlohmann/json.hpp>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "ptprof/trace.h"

namespace ptprof::test {

// A fresh empty directory under the system temp dir, removed by the destructor.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::vector<std::string> files() const;  // full paths, sorted

 private:
  std::string path_;
};

nlohmann::json read_json_file(const std::string& path);  // .gz aware

// Names of X events with cat in `cats` (empty: any), in file order.
std::vector<std::string> event_names(const nlohmann::json& trace, const std::string& cat = "");
int count_events(const Trace& t, const std::string& name);
int count_events(const nlohmann::json& trace, const std::string& name);
// One gzip member holding `text` (several concatenated are one stream to the reader).
std::string gzip(std::string_view text, int level = 6);
// Writes `bytes` to `path`, failing the test if it cannot.
void write_file(const std::string& path, const std::string& bytes);

// Event name -> count of a ptprof trace (raw events, not key_averages' folded calls).
std::map<std::string, int> event_counts(const Trace& t);

}  // namespace ptprof::test
