#include "test_support.h"

#include <ftw.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <zlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "trace/trace_reader.h"

namespace ptprof::test {

TempDir::TempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "ptprof_test_XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

namespace {
int remove_entry(const char* path, const struct stat*, int, struct FTW*) {
  return ::remove(path);
}
}  // namespace

// Not std::filesystem::remove_all: libtorch.so exports a broken copy of it that wins symbol
// resolution (it crashes through a null pointer) in the tests that link it.
TempDir::~TempDir() {
  ::chmod(path_.c_str(), 0755);
  ::nftw(path_.c_str(), remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

std::vector<std::string> TempDir::files() const {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(path_)) out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

nlohmann::json read_json_file(const std::string& path) {
  return nlohmann::json::parse(detail::read_trace_file(path));
}

std::vector<std::string> event_names(const nlohmann::json& trace, const std::string& cat) {
  std::vector<std::string> out;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.value("ph", "") != "X") continue;
    if (!cat.empty() && e.value("cat", "") != cat) continue;
    out.push_back(e.at("name").get<std::string>());
  }
  return out;
}

int count_events(const Trace& t, const std::string& name) {
  return static_cast<int>(std::count_if(t.events.begin(), t.events.end(),
                                        [&](const Event& e) { return e.name == name; }));
}

int count_events(const nlohmann::json& trace, const std::string& name) {
  auto names = event_names(trace);
  return static_cast<int>(std::count(names.begin(), names.end(), name));
}

std::string gzip(std::string_view text, int level) {
  z_stream zs{};
  EXPECT_EQ(deflateInit2(&zs, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&zs, text.size()), '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  zs.avail_in = static_cast<uInt>(text.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(f.good()) << path;
}

std::map<std::string, int> event_counts(const Trace& t) {
  std::map<std::string, int> counts;
  for (const Event& e : t.events) ++counts[std::string(e.name)];
  return counts;
}

}  // namespace ptprof::test
