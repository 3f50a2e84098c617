// The Chrome-trace file itself: layout, fields and formats that PyTorch's profiler writes and
// its consumers require (see the shared trace-format reference).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <regex>

#include "test_util.h"

namespace ptprof {
namespace {

using test::TempDir;

std::string raw_file(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::string profile_to_file(const std::string& path, Options o = {}) {
  o.on_trace_ready = {chrome_trace_handler(path)};
  ProfileSession s(o);
  test::Mlp model;
  {
    Range r("step");
    test::train_step(model);
  }
  s.stop();
  return path;
}

TEST(TraceFile, TopLevelLayoutAsKinetoWritesIt) {
  TempDir dir;
  const std::string path = profile_to_file(dir.path() + "/t.json");
  const std::string text = raw_file(path);
  // Key order matters to HTA (stops reading metadata at traceEvents): check positions.
  const auto pos = [&](const char* k) { return text.find(std::string("\"") + k + "\":"); };
  ASSERT_NE(pos("schemaVersion"), std::string::npos);
  EXPECT_LT(pos("schemaVersion"), pos("deviceProperties"));
  EXPECT_LT(pos("deviceProperties"), pos("baseTimeNanoseconds"));
  EXPECT_LT(pos("baseTimeNanoseconds"), pos("traceEvents"));
  EXPECT_GT(pos("traceName"), text.rfind("Record Window End"));
  const auto j = nlohmann::json::parse(text);
  EXPECT_EQ(j["schemaVersion"], 1);
  EXPECT_EQ(j["displayTimeUnit"], "ms");
  EXPECT_EQ(j["traceName"], path);
  EXPECT_TRUE(j["deviceProperties"].is_array());
  EXPECT_EQ(j["baseTimeNanoseconds"].get<int64_t>() % (int64_t{7889238} * 1000000000), 0);
  const auto& ev = j["traceEvents"];
  EXPECT_EQ(ev.back()["name"], "Record Window End");
}

TEST(TraceFile, EventsCarryKinetoFieldsAndFormats) {
  TempDir dir;
  const std::string path = profile_to_file(dir.path() + "/t.json");
  const std::string text = raw_file(path);
  const auto j = nlohmann::json::parse(text);
  const int64_t pid = ::getpid();
  int cpu_ops = 0, annotations = 0;
  for (const auto& e : j["traceEvents"]) {
    ASSERT_TRUE(e.contains("name"));
    if (e["ph"] != "X" || e["cat"] == "Trace") continue;
    for (const char* k : {"cat", "name", "pid", "tid", "ts", "dur", "args"})
      ASSERT_TRUE(e.contains(k)) << k << " missing in " << e.dump();
    EXPECT_EQ(e["pid"], pid);
    EXPECT_TRUE(e["tid"].is_number_integer());
    EXPECT_GE(e["dur"].get<double>(), 0.0);
    EXPECT_TRUE(e["args"].contains("External id"));
    EXPECT_TRUE(e["args"].contains("Record function id"));
    EXPECT_TRUE(e["args"].contains("Ev Idx"));
    EXPECT_FALSE(e["args"].contains("stream"));  // HTA: CPU events have no stream
    if (e["cat"] == "cpu_op") ++cpu_ops;
    if (e["cat"] == "user_annotation") ++annotations;
    if (e["args"].contains("Sequence number")) EXPECT_TRUE(e["args"].contains("Fwd thread id"));
  }
  EXPECT_GT(cpu_ops, 10);
  EXPECT_EQ(annotations, 1);
  // ts/dur are microseconds with exactly three decimals.
  const std::regex ts(R"re("ts": (\d+)\.(\d+))re");
  int checked = 0;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), ts); it != std::sregex_iterator();
       ++it, ++checked) {
    EXPECT_EQ((*it)[2].length(), 3) << (*it)[0];
  }
  EXPECT_GT(checked, cpu_ops);
}

TEST(TraceFile, ProcessAndThreadMetadataAndMarkers) {
  TempDir dir;
  const auto j = test::read_json_file(profile_to_file(dir.path() + "/t.json"));
  const int64_t pid = ::getpid();
  bool process_name = false, labels = false, thread_name = false, span = false, start = false;
  for (const auto& e : j["traceEvents"]) {
    const std::string name = e["name"];
    if (e["ph"] == "M" && name == "process_name" && e["pid"] == pid) process_name = true;
    if (e["ph"] == "M" && name == "process_labels") labels = e["args"]["labels"] == "CPU";
    if (e["ph"] == "M" && name == "thread_name") {
      thread_name = true;
      const std::string label = e["args"]["name"];
      EXPECT_EQ(label.rfind("thread " + std::to_string(e["tid"].get<int64_t>()) + " (", 0), 0u)
          << label;
    }
    if (e.value("cat", "") == "Trace") {
      span = true;
      EXPECT_EQ(e["pid"], "Spans");
      EXPECT_EQ(name, "PyTorch Profiler (0)");
    }
    if (name == "Iteration Start: PyTorch Profiler") start = e["ph"] == "i";
  }
  EXPECT_TRUE(process_name && labels && thread_name && span && start);
}

TEST(TraceFile, HostileRangeNamesRoundTrip) {
  TempDir dir;
  const std::vector<std::string> names = {
      "quote\"d", "back\\slash", "new\nline", "tab\tand\x01" "ctl", "h\xc3\xa9llo \xe2\x82\xac",
      "{\"not\": \"json\"}", "C:\\Windows\\path", ""};
  Options o;
  o.on_trace_ready = {chrome_trace_handler(dir.path() + "/h.json")};
  {
    ProfileSession s(o);
    for (const auto& n : names) Range r(n);
  }
  const auto got = test::event_names(test::read_json_file(dir.path() + "/h.json"),
                                     "user_annotation");
  ASSERT_EQ(got.size(), names.size());
  for (std::size_t i = 0; i < names.size(); ++i) EXPECT_EQ(got[i], names[i]);
}

// Trace::metadata values are written as they are, so each must be one JSON value; anything
// else is rejected naming the key, and neither the path nor its directory is touched.
TEST(TraceFile, MetadataThatIsNotJsonIsRejectedNamingTheKey) {
  TempDir dir;
  const std::string path = dir.path() + "/t.json";
  { std::ofstream(path) << "previous"; }
  const std::string bad[] = {"",
                             "  ",
                             "{",
                             "[1,]",
                             "{\"a\" 1}",
                             "{\"a\": 1,}",
                             "01",
                             "1.",
                             "-",
                             ".5",
                             "NaN",
                             "'single'",
                             "\"unterminated",
                             "\"raw\nnewline\"",
                             "\"bad \xff utf-8\"",
                             "\"\\x escape\"",
                             "\"\\u12\"",
                             "1 2",
                             "{} x",
                             "tru",
                             "nul",
                             std::string("\"nul\0\"", 6),
                             std::string(64, '[') + std::string(64, ']')};  // deeper than 64
  for (const std::string& value : bad) {
    Trace t;
    t.metadata["fine"] = "1";
    t.metadata["my key"] = value;
    try {
      t.save(path);
      ADD_FAILURE() << "metadata accepted: " << value;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("\"my key\""), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("not valid JSON"), std::string::npos) << e.what();
    }
    EXPECT_THROW(t.to_json(), Error) << value;
    EXPECT_EQ(raw_file(path), "previous") << value;
    EXPECT_EQ(dir.files().size(), 1u) << value;
  }
  // The trace's own top-level keys cannot be given twice.
  for (const char* key : {"traceEvents", "displayTimeUnit", "baseTimeNanoseconds", "traceName",
                          "schemaVersion", "deviceProperties"}) {
    Trace t;
    t.metadata[key] = "1";
    try {
      t.save(path);
      ADD_FAILURE() << "metadata key accepted: " << key;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("\"") + key + "\""), std::string::npos)
          << e.what();
    }
  }
  EXPECT_EQ(raw_file(path), "previous");

  // Every kind of JSON value is written as given.
  Trace t;
  t.metadata["number"] = "-1.5e-3";
  t.metadata["string"] = "\"h\\u00e9llo \\\"x\\\" \xe2\x82\xac\"";
  t.metadata["object"] = " {\"a\": [1, {\"b\": null}, true, false], \"\": {}} ";
  t.metadata["deep"] = std::string(60, '[') + std::string(60, ']');
  t.save(path);
  const auto j = test::read_json_file(path);
  EXPECT_EQ(j["number"], -1.5e-3);
  EXPECT_EQ(j["string"], "h\xc3\xa9llo \"x\" \xe2\x82\xac");
  EXPECT_EQ(j["object"]["a"][1]["b"], nullptr);
  EXPECT_EQ(j["deep"].dump(), std::string(60, '[') + std::string(60, ']'));
}

TEST(TraceFile, GzipRoundTrip) {
  TempDir dir;
  const std::string path = profile_to_file(dir.path() + "/t.pt.trace.json.gz");
  const std::string raw = raw_file(path);
  ASSERT_GE(raw.size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>(raw[0]), 0x1f);
  EXPECT_EQ(static_cast<unsigned char>(raw[1]), 0x8b);
  const auto j = test::read_json_file(path);
  EXPECT_GT(test::count_events(j, "aten::addmm"), 0);
}

TEST(TraceFile, UnwritableDirectoryFailsCleanlyWithNoPartialFile) {
  // A path under a regular file: fails for root too, which ignores permission bits.
  TempDir dir;
  const std::string file = dir.path() + "/plain_file";
  { std::ofstream(file) << "x"; }
  Trace t;
  try {
    t.save(file + "/t.json");
    FAIL() << "save into a non-directory succeeded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(file + "/t.json"), std::string::npos) << e.what();
  }
  EXPECT_EQ(dir.files().size(), 1u);  // nothing but the blocking file
}

TEST(TraceFile, NoTemporaryFileIsLeftBehind) {
  TempDir dir;
  profile_to_file(dir.path() + "/w.pt.trace.json");
  const auto files = dir.files();
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0], dir.path() + "/w.pt.trace.json");
}

TEST(TraceFile, FullDiskIsReportedAndLeavesNoPartialTrace) {
  // A 64 KiB tmpfs made by the test (needs root, as in CI); the trace is far bigger.
  TempDir dir;
  const std::string mnt = dir.path() + "/small";
  ::mkdir(mnt.c_str(), 0755);
  if (std::system(("mount -t tmpfs -o size=64k tmpfs " + mnt + " 2>/dev/null").c_str()) != 0)
    GTEST_SKIP() << "cannot mount a small tmpfs here";
  Trace t;
  t.process_name = "p";
  for (int i = 0; i < 20000; ++i) {
    Event e;
    e.name = t.intern("op" + std::to_string(i));
    e.duration_ns = 1000;
    t.events.push_back(e);
  }
  std::string err;
  try {
    t.save(mnt + "/big.pt.trace.json");
  } catch (const Error& e) {
    err = e.what();
  }
  std::vector<std::string> left;
  for (auto& f : std::filesystem::directory_iterator(mnt)) left.push_back(f.path().string());
  std::system(("umount " + mnt).c_str());
  EXPECT_NE(err.find("No space left on device"), std::string::npos) << err;
  EXPECT_NE(err.find("big.pt.trace.json"), std::string::npos) << err;
  EXPECT_TRUE(left.empty()) << left.size() << " files left, first " << left[0];
}

}  // namespace
}  // namespace ptprof
