// The one listing of a directory's traces (src/trace/trace_files.h) that report, diff, merge,
// the cross-rank report and view share: TensorBoard's names and HTA's.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>

#include "ptprof/error.h"
#include "ptprof/trace.h"
#include "trace/trace_files.h"

namespace fs = std::filesystem;
using namespace ptprof::detail;

namespace {

class TraceFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("ptprof_trace_files_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    const fs::path p = dir_ / name;
    std::ofstream(p) << text;
    return p.string();
  }
  std::string write_gz(const std::string& name, const std::string& text) {
    const fs::path p = dir_ / name;
    gzFile f = gzopen(p.c_str(), "wb");
    gzwrite(f, text.data(), static_cast<unsigned>(text.size()));
    gzclose(f);
    return p.string();
  }
  std::string trace_text() {
    ptprof::Trace t;
    t.pid = 1;
    ptprof::Event e;
    e.name = t.intern("aten::mm");
    e.start_ns = 1000;
    e.duration_ns = 10;
    t.events.push_back(e);
    const std::string path = (dir_ / "tmp_trace_src").string() + ".json";
    t.save(path);
    std::ifstream in(path);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    fs::remove(path);
    return text;
  }
  fs::path dir_;
};

}  // namespace

TEST(TraceFileName, SplitsWorkerAndSpanAsTensorBoard) {
  auto n = parse_trace_file_name("host_123.1712195495501688512.pt.trace.json");
  EXPECT_EQ(n.worker, "host_123");
  EXPECT_EQ(n.span, "1712195495501688512");
  n = parse_trace_file_name("host_123.pt.trace.json.gz");
  EXPECT_EQ(n.worker, "host_123");
  EXPECT_EQ(n.span, "");
  n = parse_trace_file_name("node.example.com_7.1712.pt.trace.json");
  EXPECT_EQ(n.worker, "node.example.com_7");  // dots in the worker stay in it
  EXPECT_EQ(n.span, "1712");
  n = parse_trace_file_name("rank-0.json.gz");  // HTA's names
  EXPECT_EQ(n.worker, "rank-0");
  EXPECT_EQ(n.span, "");
  n = parse_trace_file_name("sampled_rank-1.json");
  EXPECT_EQ(n.worker, "sampled_rank-1");
}

TEST(TraceFileName, CandidatesAreJsonAndNeverHidden) {
  EXPECT_TRUE(trace_file_candidate("rank-0.json.gz"));
  EXPECT_TRUE(trace_file_candidate("a.pt.trace.json"));
  EXPECT_FALSE(trace_file_candidate(".a.pt.trace.json.1234.1.tmp"));
  EXPECT_FALSE(trace_file_candidate(".a.pt.trace.json"));
  EXPECT_FALSE(trace_file_candidate("a.json.tmp"));
  EXPECT_FALSE(trace_file_candidate("stacks.txt"));
  EXPECT_TRUE(tensorboard_trace_name("w.1.pt.trace.json.gz"));
  EXPECT_FALSE(tensorboard_trace_name("rank-0.json.gz"));
}

TEST_F(TraceFilesTest, HtaNamedTracesAreListedAndOtherJsonIsNot) {
  const std::string trace = trace_text();
  const std::string a = write("rank-0.json", trace);
  const std::string b = write_gz("rank-1.json.gz", trace);
  const std::string tb = write("w.1.pt.trace.json", trace);
  write("memory.json", R"({"devices": [{"name": "CPU"}]})");      // the example's memory timeline
  write("run.json", R"([{"traceEvents": 1}])");                   // an array: no trace
  write("report.report.json", R"({"schema": "ptprof.report/1"})");
  write_gz("other.json.gz", R"({"hello": "world"})");
  write("notes.txt", trace);                                      // a trace, but not named *.json
  write(".hidden.json", trace);
  write("empty.json", "");
  EXPECT_TRUE(holds_trace(a));
  EXPECT_TRUE(holds_trace(b));
  EXPECT_FALSE(holds_trace((dir_ / "memory.json").string()));
  EXPECT_EQ(trace_files_in(dir_.string()), (std::vector<std::string>{a, b, tb}));
}

TEST_F(TraceFilesTest, KinetoAndOldLayoutsAreTraces) {
  // Kineto writes schemaVersion first; PyTorch 1.8 began with traceEvents.
  const std::string k = write("k.json", "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": []");
  const std::string o = write("o.json", "\xEF\xBB\xBF  {\"traceEvents\": [");
  EXPECT_TRUE(holds_trace(k));  // a trace being written: its first key is enough
  EXPECT_TRUE(holds_trace(o));
}

TEST_F(TraceFilesTest, EmptyDirectoryIsAnErrorNamingIt) {
  write("memory.json", "{}");
  try {
    trace_files_in(dir_.string());
    FAIL() << "no error";
  } catch (const ptprof::Error& e) {
    EXPECT_NE(std::string(e.what()).find(dir_.string()), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("holds no"), std::string::npos) << e.what();
  }
}
