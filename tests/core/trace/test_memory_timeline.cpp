// export_memory_timeline: the curves per device as JSON and as a self-contained HTML plot,
// the peak, and the errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <sstream>
#include <string>

#include "trace/memory_timeline.h"
#include "ptprof/error.h"
#include "ptprof/trace.h"
#include "test_support.h"
#include "xml_check.h"

using ptprof::MemoryEvent;
using ptprof::detail::memory_curves;
using ptprof::detail::memory_device_name;
using ptprof::detail::peak_allocated;

namespace {

constexpr int64_t kMiB = 1 << 20;

MemoryEvent mem(int64_t t, int64_t bytes, int64_t allocated, int64_t reserved, int type,
                int index) {
  MemoryEvent m;
  m.time_ns = t;
  m.bytes = bytes;
  m.total_allocated = allocated;
  m.total_reserved = reserved;
  m.device_type = static_cast<int8_t>(type);
  m.device_index = static_cast<int8_t>(index);
  m.address = 0x1000 + static_cast<uint64_t>(t);
  return m;
}

// CPU: 100, 150, 50, 250 (peak at 4 us), 0. CUDA:0: 1 MiB, 3 MiB (peak at 2.5 us), 0, with
// 2-4 MiB reserved. The window starts at 0.5 us.
ptprof::Trace sample_trace() {
  ptprof::Trace t;
  t.window_start_ns = 1'000'000'000'000'000'500;
  t.window_end_ns = t.window_start_ns + 6000;
  const int64_t b = 1'000'000'000'000'000'000;
  t.memory_events = {
      mem(b + 1000, 100, 100, 0, 0, -1), mem(b + 1500, kMiB, kMiB, 2 * kMiB, 1, 0),
      mem(b + 2000, 50, 150, 0, 0, -1),  mem(b + 2500, 2 * kMiB, 3 * kMiB, 4 * kMiB, 1, 0),
      mem(b + 3000, -100, 50, 0, 0, -1), mem(b + 3500, -3 * kMiB, 0, 4 * kMiB, 1, 0),
      mem(b + 4000, 200, 250, 0, 0, -1), mem(b + 5000, -250, 0, 0, 0, -1),
  };
  return t;
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

int count(const std::string& s, const std::string& what) {
  int n = 0;
  for (auto p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

TEST(MemoryTimeline, DeviceNames) {
  EXPECT_EQ(memory_device_name(0, -1), "CPU");
  EXPECT_EQ(memory_device_name(1, 0), "CUDA:0");
  EXPECT_EQ(memory_device_name(1, 3), "CUDA:3");
  EXPECT_EQ(memory_device_name(120, -1), "device120");
}

TEST(MemoryTimeline, PeakPerDevice) {
  const ptprof::Trace t = sample_trace();
  EXPECT_EQ(peak_allocated(t, 0, -1), 250);
  EXPECT_EQ(peak_allocated(t, 1, 0), 3 * kMiB);
  EXPECT_EQ(peak_allocated(t, 1, 1), 0);
  const auto curves = memory_curves(t);
  ASSERT_EQ(curves.size(), 2u);
  EXPECT_EQ(curves[0].device, "CPU");
  EXPECT_EQ(curves[0].allocated, (std::vector<int64_t>{100, 150, 50, 250, 0}));
  EXPECT_EQ(curves[0].peak_time_ns - t.window_start_ns, 3500);
  EXPECT_EQ(curves[1].device, "CUDA:0");
  EXPECT_EQ(curves[1].reserved, (std::vector<int64_t>{2 * kMiB, 4 * kMiB, 4 * kMiB}));
}

TEST(MemoryTimeline, EventsOutOfOrderAreSortedByTime) {
  ptprof::Trace t = sample_trace();
  const auto expected = memory_curves(t);
  std::mt19937 rng(7);
  std::shuffle(t.memory_events.begin(), t.memory_events.end(), rng);
  const auto curves = memory_curves(t);
  ASSERT_EQ(curves.size(), expected.size());
  for (std::size_t i = 0; i < curves.size(); ++i) {
    EXPECT_EQ(curves[i].time_ns, expected[i].time_ns);
    EXPECT_EQ(curves[i].allocated, expected[i].allocated);
  }
}

TEST(MemoryTimeline, Json) {
  ptprof::test::TempDir dir;
  const ptprof::Trace t = sample_trace();
  for (const std::string name : {"/memory.json", "/memory.json.gz"}) {
    const std::string path = dir.path() + name;
    t.export_memory_timeline(path);
    const nlohmann::json j = ptprof::test::read_json_file(path);
    EXPECT_EQ(j["time_origin_unix_ns"].get<int64_t>(), t.window_start_ns);
    const auto& devices = j["devices"];
    ASSERT_EQ(devices.size(), 2u);
    const auto& cpu = devices["CPU"];
    EXPECT_EQ(cpu["times_us"], nlohmann::json::parse("[0.5, 1.5, 2.5, 3.5, 4.5]"));
    EXPECT_EQ(cpu["allocated_bytes"], nlohmann::json::parse("[100, 150, 50, 250, 0]"));
    EXPECT_EQ(cpu["reserved_bytes"], nlohmann::json::parse("[0, 0, 0, 0, 0]"));
    EXPECT_EQ(cpu["peak_allocated_bytes"].get<int64_t>(), 250);
    EXPECT_DOUBLE_EQ(cpu["peak_time_us"].get<double>(), 3.5);
    const auto& cuda = devices["CUDA:0"];
    EXPECT_EQ(cuda["device_type"].get<int>(), 1);
    EXPECT_EQ(cuda["device_index"].get<int>(), 0);
    EXPECT_EQ(cuda["times_us"], nlohmann::json::parse("[1.0, 2.0, 3.0]"));
    EXPECT_EQ(cuda["allocated_bytes"], nlohmann::json::array({kMiB, 3 * kMiB, 0}));
    EXPECT_EQ(cuda["peak_allocated_bytes"].get<int64_t>(), peak_allocated(t, 1, 0));
  }
  EXPECT_EQ(dir.files().size(), 2u);
}

TEST(MemoryTimeline, HtmlIsSelfContainedWithOnePlotPerDevice) {
  ptprof::test::TempDir dir;
  ptprof::Trace t = sample_trace();
  t.worker_name = "host<1>&";
  const std::string path = dir.path() + "/memory.html";
  t.export_memory_timeline(path);
  const std::string html = read_file(path);
  EXPECT_EQ(ptprof::test::xml_problem(html), "");
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(count(html, "<svg"), 2);
  EXPECT_EQ(count(html, "<path class=\"allocated\""), 2);
  EXPECT_EQ(count(html, "<path class=\"reserved\""), 1);  // CPU reserves nothing
  EXPECT_NE(html.find("<h2>CPU</h2>"), std::string::npos);
  EXPECT_NE(html.find("<h2>CUDA:0</h2>"), std::string::npos);
  EXPECT_NE(html.find(">time (ms)<"), std::string::npos);
  EXPECT_NE(html.find(">memory (MB)<"), std::string::npos);
  EXPECT_EQ(count(html, "<circle class=\"peak\""), 2);
  EXPECT_NE(html.find("peak 3.000 MB at 0.002 ms"), std::string::npos);
  EXPECT_NE(html.find("host&lt;1&gt;&amp;"), std::string::npos);
  // Nothing to fetch: no scripts, links, images or URLs.
  for (const char* bad : {"<script", "<link", "<img", "src=", "href=", "http:", "https:", "url("})
    EXPECT_EQ(html.find(bad), std::string::npos) << bad;
}

// The worker name is the page's only text from outside; any bytes keep it well-formed.
TEST(MemoryTimeline, HtmlIsWellFormedForAnyWorkerName) {
  ptprof::test::TempDir dir;
  ptprof::Trace t = sample_trace();
  std::vector<std::string> pages;
  for (const std::string name :
       {std::string("]]><&>\"'"), std::string("nul\0\x01\x1f", 5),
        std::string("\xef\xbf\xbe\xef\xbf\xbf"), std::string("\xff\xc3\xed\xa0\x80"),
        std::string("</h1><script>x</script>")}) {
    t.worker_name = name;
    const std::string path = dir.path() + "/memory.html";
    t.export_memory_timeline(path);
    pages.push_back(read_file(path));
  }
  const auto problems = ptprof::test::xml_problems(pages);
  for (std::size_t i = 0; i < pages.size(); ++i) EXPECT_EQ(problems[i], "") << pages[i];
}

TEST(MemoryTimeline, PeakMarkerSitsOnTheCurve) {
  ptprof::test::TempDir dir;
  const ptprof::Trace t = sample_trace();
  const std::string path = dir.path() + "/memory.html";
  t.export_memory_timeline(path);
  const std::string html = read_file(path);
  // The CUDA plot's peak circle is at the highest point (smallest y) of its curve.
  const auto at = html.find("<h2>CUDA:0</h2>");
  ASSERT_NE(at, std::string::npos);
  const std::string plot = html.substr(at);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(plot, m, std::regex("<path class=\"allocated\" d=\"([^\"]+)\"")));
  const std::string d = m[1];
  ASSERT_TRUE(std::regex_search(plot, m,
                                std::regex("<circle class=\"peak\" cx=\"([0-9.]+)\" "
                                           "cy=\"([0-9.]+)\"")));
  const double cy = std::stod(m[2]);
  double min_y = 1e9;
  std::regex num("[MV](?:[0-9.]+,)?([0-9.]+)");
  for (std::sregex_iterator it(d.begin(), d.end(), num), end; it != end; ++it)
    min_y = std::min(min_y, std::stod((*it)[1]));
  EXPECT_NEAR(cy, min_y, 0.01);
}

TEST(MemoryTimeline, ManyEventsAreDownsampledButKeepThePeak) {
  ptprof::Trace t;
  t.window_start_ns = 1'000'000;
  int64_t allocated = 0;
  for (int i = 0; i < 200000; ++i) {
    const int64_t bytes = (i % 2 == 0) ? 4096 : -4096;
    allocated += bytes;
    const int64_t extra = i == 123456 ? 64 * kMiB : 0;  // one spike
    t.memory_events.push_back(mem(t.window_start_ns + i * 100, bytes, allocated + extra, 0, 1, 0));
  }
  t.window_end_ns = t.window_start_ns + 200000 * 100;
  ptprof::test::TempDir dir;
  const std::string path = dir.path() + "/memory.html";
  t.export_memory_timeline(path);
  const std::string html = read_file(path);
  EXPECT_LT(html.size(), 200'000u);  // not one path segment per event
  EXPECT_NE(html.find("Peak allocated: 64.004 MB (67112960 bytes)"), std::string::npos);
  EXPECT_EQ(peak_allocated(t, 1, 0), 64 * kMiB + 4096);
  // JSON keeps every event.
  const std::string json = dir.path() + "/memory.json";
  t.export_memory_timeline(json);
  const nlohmann::json j = ptprof::test::read_json_file(json);
  EXPECT_EQ(j["devices"]["CUDA:0"]["times_us"].size(), 200000u);
}

TEST(MemoryTimeline, Errors) {
  ptprof::test::TempDir dir;
  ptprof::Trace empty;
  try {
    empty.export_memory_timeline(dir.path() + "/m.json");
    FAIL() << "no error";
  } catch (const ptprof::Error& e) {
    EXPECT_NE(std::string(e.what()).find("profile_memory"), std::string::npos) << e.what();
  }
  const ptprof::Trace t = sample_trace();
  try {
    t.export_memory_timeline(dir.path() + "/m.png");
    FAIL() << "no error";
  } catch (const ptprof::Error& e) {
    EXPECT_NE(std::string(e.what()).find(".html"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("m.png"), std::string::npos) << e.what();
  }
  EXPECT_THROW(t.export_memory_timeline(dir.path() + "/no/such/dir/m.json"), ptprof::Error);
  EXPECT_TRUE(dir.files().empty());
}

}  // namespace
