// Every writer under a host program's locale with a decimal comma: a program that calls
// setlocale(LC_ALL, "") (and sets the C++ global locale) with LC_ALL=de_DE.UTF-8 must get the
// same bytes as under "C" from the flame graph, the memory timeline, the trace and the tables,
// so the SVG and JSON stay valid and the tables read the same.
#include <gtest/gtest.h>
#include <locale.h>
#include <stdlib.h>

#include <clocale>
#include <cstdio>
#include <fstream>
#include <locale>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>

#include "ptprof/report.h"
#include "ptprof/trace.h"
#include "comma_locale.h"
#include "test_support.h"
#include "trace/stacks_export.h"
#include "xml_check.h"

namespace ptprof {
namespace {

using test::CommaLocale;
using test::HostLocale;
using test::kLocale;
using test::read_file;


// A trace whose numbers have fractions everywhere a writer prints one: times, shares, bytes,
// FLOPs and FLOP/s, kernel occupancy, copy bandwidth, plot coordinates.
Trace sample_trace() {
  Trace t;
  t.pid = 7;
  t.process_name = "host";
  t.worker_name = "worker";
  const int64_t b = 1'700'000'000'123'456'789;
  t.window_start_ns = b;
  t.window_end_ns = b + 5'432'109;
  t.metadata["config"] = "{\"lr\": 0.5, \"beta\": [0.9, 0.999]}";
  OpInput x;
  x.kind = OpInput::Kind::Tensor;
  x.dtype = "float";
  x.sizes = {1024, 33};
  x.strides = {33, 1};
  OpInput alpha;
  alpha.kind = OpInput::Kind::Scalar;
  alpha.dtype = "Scalar";
  alpha.concrete = "0.5";
  alpha.scalar = 0.5;
  t.op_inputs.push_back({x, alpha});
  t.stacks.push_back({"main", "train_step", "Model::forward"});
  t.stacks.push_back({"main", "train_step", "loss"});
  auto cpu = [&](const char* name, int64_t start, int64_t dur, uint64_t ext, int32_t stack) {
    Event e;
    e.name = t.intern(name);
    e.start_ns = b + start;
    e.duration_ns = dur;
    e.pid = t.pid;
    e.tid = 11;
    e.external_id = ext;
    e.record_function_id = ext;
    e.stack = stack;
    t.events.push_back(e);
    return t.events.size() - 1;
  };
  cpu("ProfilerStep#3", 0, 5'000'000, 1, -1);
  t.events.back().kind = EventKind::UserAnnotation;
  const auto mm = cpu("aten::mm", 1'000, 1'234'567, 2, 0);
  t.events[mm].flops = 123'456'789;
  t.events[mm].inputs = 0;
  cpu("aten::relu", 2'000'000, 333'333, 3, 1);
  cpu("aten::relu", 2'500'000, 1'666'667, 4, 1);
  Event k;
  k.kind = EventKind::Kernel;
  k.name = t.intern("gemm_kernel");
  k.start_ns = b + 10'000;
  k.duration_ns = 777'777;
  k.pid = 0;
  k.tid = 7;
  k.device = 0;
  k.stream = 7;
  k.external_id = 2;
  k.correlation = 99;
  k.kernel.blocks_per_sm = 1.5f;
  k.kernel.warps_per_sm = 12.25f;
  k.kernel.occupancy_pct = 37;
  t.events.push_back(k);
  k.name = t.intern("relu_kernel");
  k.start_ns = b + 2'100'000;
  k.duration_ns = 3'333;
  k.external_id = 3;
  t.events.push_back(k);
  Event c = k;
  c.kind = EventKind::Memcpy;
  c.name = t.intern("Memcpy HtoD");
  c.external_id = 4;
  c.duration_ns = 3'333;
  c.transfer.bytes = 1'000'001;
  t.events.push_back(c);
  auto mem = [&](int64_t at, int64_t bytes, int64_t allocated, int type, int index) {
    MemoryEvent m;
    m.time_ns = b + at;
    m.pid = t.pid;
    m.tid = 11;
    m.bytes = bytes;
    m.total_allocated = allocated;
    m.total_reserved = type == 0 ? 0 : 8 * 1'048'576 + 12'345;
    m.device_type = static_cast<int8_t>(type);
    m.device_index = static_cast<int8_t>(index);
    m.address = 0x1000 + static_cast<uint64_t>(at);
    t.memory_events.push_back(m);
  };
  mem(1'500, 1'536, 1'536, 0, -1);
  mem(1'600, 3'670'016, 3'670'016, 1, 0);
  mem(2'100'000, 2'621'440 + 17, 4'158'033, 0, -1);
  mem(2'600'000, -1'536, 4'156'497, 0, -1);
  t.rebuild_tree();
  t.attribute_memory();
  return t;
}

// What each writer gives for `t`, by name; files go under `prefix`.
std::map<std::string, std::string> write_everything(const Trace& t, const std::string& prefix) {
  std::map<std::string, std::string> out;
  out["flamegraph_svg"] =
      detail::flamegraph_svg("main;foo;bar 30\nmain;foo;baz 10\nmain;qux 7\n", "flame");
  t.export_stacks(prefix + "stacks.svg");
  out["export_stacks .svg"] = read_file(prefix + "stacks.svg");
  t.export_stacks(prefix + "stacks.txt");
  out["export_stacks .txt"] = read_file(prefix + "stacks.txt");
  t.export_memory_timeline(prefix + "memory.html");
  out["export_memory_timeline .html"] = read_file(prefix + "memory.html");
  t.export_memory_timeline(prefix + "memory.json");
  out["export_memory_timeline .json"] = read_file(prefix + "memory.json");
  out["to_json"] = t.to_json();
  t.save(prefix + "trace.json");
  // The trace names its own path (traceName): compare without it.
  out["save"] = std::regex_replace(read_file(prefix + "trace.json"),
                                   std::regex("\"traceName\": \"[^\"]*\""), "\"traceName\": \"\"");
  out["table"] = t.key_averages().table("self_cpu_time_total");
  out["table by shapes"] = t.key_averages(true).table("flops");
  out["kernel_table"] = t.kernel_table().table();
  return out;
}

// The first line where two texts differ, for a readable failure.
std::string first_difference(const std::string& a, const std::string& b) {
  std::istringstream sa(a), sb(b);
  std::string la, lb;
  for (int line = 1;; ++line) {
    const bool ha = static_cast<bool>(std::getline(sa, la));
    const bool hb = static_cast<bool>(std::getline(sb, lb));
    if (!ha && !hb) return "";
    if (!ha || !hb || la != lb)
      return "line " + std::to_string(line) + ":\n  C:     " + (ha ? la : "<end>") +
             "\n  de_DE: " + (hb ? lb : "<end>");
  }
}


TEST_F(CommaLocale, EveryWriterGivesTheSameBytesAsUnderC) {
  const Trace t = sample_trace();
  test::TempDir dir;
  const auto c = write_everything(t, dir.path() + "/c_");
  std::map<std::string, std::string> de;
  {
    HostLocale host;
    ASSERT_TRUE(host.ok()) << "setlocale(LC_ALL, \"\") with LC_ALL=" << kLocale << " failed";
    // The premise: C and C++ formatting of this process now use a decimal comma.
    char buf[16];
    std::snprintf(buf, sizeof buf, "%.1f", 1.5);
    ASSERT_STREQ(buf, "1,5");
    std::ostringstream os;
    os << 1234.5;
    ASSERT_EQ(os.str(), "1.234,5");
    de = write_everything(t, dir.path() + "/de_");
  }
  ASSERT_EQ(de.size(), c.size());
  for (const auto& [name, text] : c) {
    EXPECT_FALSE(text.empty()) << name;
    EXPECT_EQ(first_difference(text, de[name]), "") << name;
  }
}

// The same, read as a consumer would: the SVG and HTML parse as XML with numeric coordinates,
// the JSON parses.
TEST_F(CommaLocale, SvgAndJsonWrittenUnderItAreValid) {
  const Trace t = sample_trace();
  test::TempDir dir;
  std::map<std::string, std::string> de;
  {
    HostLocale host;
    ASSERT_TRUE(host.ok());
    de = write_everything(t, dir.path() + "/");
  }
  const std::vector<std::string> markup = {de["flamegraph_svg"], de["export_stacks .svg"],
                                           de["export_memory_timeline .html"]};
  const auto problems = test::xml_problems(markup);
  for (std::size_t i = 0; i < markup.size(); ++i) EXPECT_EQ(problems[i], "") << markup[i];
  const std::regex attr(R"re( (x|y|x1|x2|y1|y2|cx|cy|r|rx|ry|width|height)="([^"]*)")re");
  const std::regex number(R"(-?[0-9]+(\.[0-9]+)?)");
  const std::regex path_data(R"re( d="([^"]*)")re");
  const std::regex path_ok(R"(M-?[0-9.]+,-?[0-9.]+( [HV]-?[0-9]+(\.[0-9]+)?)*)");
  int attrs = 0, paths = 0;
  for (const std::string& doc : markup) {
    for (std::sregex_iterator it(doc.begin(), doc.end(), attr), end; it != end; ++it, ++attrs)
      EXPECT_TRUE(std::regex_match((*it)[2].str(), number)) << (*it)[0];
    for (std::sregex_iterator it(doc.begin(), doc.end(), path_data), end; it != end; ++it, ++paths)
      EXPECT_TRUE(std::regex_match((*it)[1].str(), path_ok)) << (*it)[1].str().substr(0, 200);
  }
  EXPECT_GT(attrs, 50);
  EXPECT_EQ(paths, 3);  // CPU allocated; CUDA allocated and reserved
  for (const char* name : {"export_memory_timeline .json", "to_json", "save"}) {
    const auto j = nlohmann::json::parse(de[name]);  // throws on invalid JSON
    EXPECT_FALSE(j.empty()) << name;
  }
  const auto trace = nlohmann::json::parse(de["to_json"]);
  EXPECT_EQ(trace["config"]["beta"][1], 0.999);
  bool kernel = false;
  for (const auto& e : trace["traceEvents"]) {
    if (e.value("name", "") != "gemm_kernel") continue;
    kernel = true;
    EXPECT_EQ(e["args"]["blocks per SM"], 1.5);
    EXPECT_EQ(e["args"]["warps per SM"], 12.25);
  }
  EXPECT_TRUE(kernel);
}

}  // namespace
}  // namespace ptprof

namespace ptprof {
namespace {

// The report (text, JSON and HTML) of the real H200 trace, the same bytes under the host's
// decimal-comma locale as under "C".
TEST_F(CommaLocale, ReportIsTheSameUnderIt) {
  const Trace t = Trace::load(std::string(PTPROF_SOURCE_DIR) +
                              "/tests/gpu/fixtures/h200/ptprof.pt.trace.json.gz");
  const Report c(t);
  const std::string summary = c.summary(), json = c.to_json(), html = c.to_html();
  HostLocale host;
  ASSERT_TRUE(host.ok());
  const Report de(t);
  EXPECT_EQ(first_difference(summary, de.summary()), "");
  EXPECT_EQ(first_difference(json, de.to_json()), "");
  EXPECT_EQ(first_difference(html, de.to_html()), "");
}

}  // namespace
}  // namespace ptprof
