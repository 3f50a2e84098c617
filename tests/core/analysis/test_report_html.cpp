// Report::to_html(): well-formed (a real XML parser, tests/xml_check.h), every section present,
// self-contained, its numbers the Report's own (on the H200 trace and synthetic ones), names
// escaped, the same bytes under a decimal-comma locale; the utilization series it draws; and
// save_html / save_json through the atomic writer. The page in a real browser:
// tests/analysis/check_report_html.py.
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <locale.h>

#include <algorithm>
#include <clocale>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "ptprof/error.h"
#include "ptprof/report.h"
#include "trace_builder.h"
#include "trace/json_writer.h"
#include "trace/stacks_export.h"
#include "trace/trace_reader.h"
#include "xml_check.h"

namespace ptprof {
namespace {

using detail::format_fixed;
using test::TraceBuilder;
using test::training_trace;

const std::string kH200 = std::string(PTPROF_SOURCE_DIR) + "/tests/gpu/fixtures/h200/";

Trace h200_trace() {
  const std::string path = kH200 + "ptprof.pt.trace.json.gz";
  return detail::parse_trace(detail::read_trace_file(path), path);
}

std::string ms(double ns) {
  return format_fixed(ns / 1e6, 3) + " ms";
}
std::string pct(double share) {
  return format_fixed(share * 100, 1) + "%";
}
bool has(const std::string& page, const std::string& s) {
  return page.find(s) != std::string::npos;
}
// The text between `start` (inclusive) and the next `end` after it.
std::string between(const std::string& page, const std::string& start, const std::string& end) {
  const auto a = page.find(start);
  if (a == std::string::npos) return "";
  const auto b = page.find(end, a + start.size());
  return page.substr(a, b == std::string::npos ? std::string::npos : b - a);
}
int count(const std::string& page, const std::string& s) {
  int n = 0;
  for (auto p = page.find(s); p != std::string::npos; p = page.find(s, p + 1)) ++n;
  return n;
}

// A trace with no events at all.
Trace empty_trace() {
  return Trace();
}
Trace cpu_trace_without_steps() {
  Trace t = training_trace(3, 1000, false, "aten::slow", 100);
  t.events.erase(std::remove_if(t.events.begin(), t.events.end(),
                                [](const Event& e) { return is_step_name(e.name); }),
                 t.events.end());
  t.rebuild_tree();
  return t;
}

TEST(ReportHtml, WellFormedForEveryKindOfTrace) {
  std::vector<std::string> pages = {
      Report(h200_trace()).to_html(),
      Report(training_trace(4, 1000, true, "aten::slow", 200)).to_html(),
      Report(training_trace(4, 1000, false, "aten::slow", 200)).to_html(),
      Report(cpu_trace_without_steps()).to_html(),
      Report(empty_trace()).to_html(),
  };
  const auto problems = test::xml_problems(pages);
  for (std::size_t i = 0; i < pages.size(); ++i) EXPECT_EQ(problems[i], "") << "page " << i;
}

TEST(ReportHtml, EverySectionAndNothingFromOutside) {
  for (const Trace& t : {h200_trace(), empty_trace()}) {
    const std::string page = Report(t).to_html();
    for (const char* id : {"quality", "breakdown", "utilization", "idle", "findings", "tables"})
      EXPECT_TRUE(has(page, std::string("<section id=\"") + id + "\">")) << id;
    // The trace quality section comes first, right after the header.
    EXPECT_LT(page.find("</header>"), page.find("<section id=\"quality\">"));
    EXPECT_LT(page.find("<section id=\"quality\">"), page.find("<section id=\"breakdown\">"));
    // Self-contained: no scripts, no external resources of any kind.
    for (const char* bad : {"<script", "http:", "https:", "src=", "url(", "@import", "<link",
                            "<img", "<iframe", "&nbsp;"})
      EXPECT_FALSE(has(page, bad)) << bad;
    EXPECT_TRUE(has(page, "<meta charset=\"utf-8\"/>"));
  }
}

TEST(ReportHtml, NumbersAreTheReportsOnTheH200Trace) {
  const Report r(h200_trace());
  ASSERT_TRUE(r.breakdown_determined);
  ASSERT_TRUE(r.has_gpu_data);
  ASSERT_EQ(r.steps.size(), 5u);
  const std::string page = r.to_html();

  // Header: identity and the headline numbers.
  EXPECT_TRUE(has(page, std::to_string(r.source.events) + " events"));
  EXPECT_TRUE(has(page, "pid " + std::to_string(r.source.pid)));
  EXPECT_TRUE(has(page, "GPU 0: NVIDIA H200"));
  EXPECT_TRUE(has(page, "<div class=\"value\">" + ms(r.average_step_ns) + "</div>"));

  // Quality: every item and every "cannot be determined".
  for (const auto& q : r.quality) EXPECT_TRUE(has(page, "<li data-id=\"" + q.id + "\">")) << q.id;
  for (const auto& [what, why] : r.undetermined)
    EXPECT_TRUE(has(page, "<li data-what=\"" + what + "\">")) << what;

  // One bar per step, each segment the step's category time, exactly.
  for (const auto& s : r.steps) {
    const std::string group =
        between(page, "<g class=\"step\" data-step=\"" + s.name + "\"", "</g>");
    ASSERT_FALSE(group.empty()) << s.name;
    EXPECT_TRUE(has(group, "data-total-ns=\"" + std::to_string(s.total_ns()) + "\"")) << group;
    int segments = 0;
    for (int c = 0; c < kStepCategories; ++c) {
      if (s.category_ns[c] == 0) continue;
      ++segments;
      EXPECT_TRUE(has(group, std::string("data-category=\"") +
                                 step_category_name(static_cast<StepCategory>(c)) +
                                 "\" data-ns=\"" + std::to_string(s.category_ns[c]) + "\""))
          << s.name << " " << step_category_name(static_cast<StepCategory>(c));
    }
    EXPECT_EQ(count(group, "<rect "), segments);
    EXPECT_TRUE(has(group, ">#" + s.name + "</text>"));
    EXPECT_TRUE(has(group, ">" + ms(static_cast<double>(s.total_ns())) + "</text>"));
  }
  EXPECT_TRUE(has(page, "<g class=\"average\" data-step=\"average\""));
  // The breakdown table: average, share, p50 and p90 of every category.
  for (int c = 0; c < kStepCategories; ++c) {
    const std::string name = step_category_name(static_cast<StepCategory>(c));
    const std::string row = between(page, "<tr data-category=\"" + name + "\">", "</tr>");
    ASSERT_FALSE(row.empty()) << name;
    EXPECT_TRUE(has(row, ">" + ms(r.average_ns[c]) + "<")) << row;
    EXPECT_TRUE(has(row, ">" + pct(r.average_ns[c] / r.average_step_ns) + "<")) << row;
    EXPECT_TRUE(has(row, ">" + ms(r.category_spread[c].p50_ns) + "<")) << row;
    EXPECT_TRUE(has(row, ">" + ms(r.category_spread[c].p90_ns) + "<")) << row;
  }

  // Utilization: one chart per device with its series, the average line's label, the table.
  for (const auto& d : r.devices) {
    EXPECT_TRUE(has(page, "data-device=\"" + std::to_string(d.id) + "\" data-buckets=\"" +
                              std::to_string(d.utilization_series.size()) + "\""));
    EXPECT_TRUE(has(page, ">average " + pct(d.utilization) + "</text>"));
    const std::string row =
        between(page, "<tr data-device=\"" + std::to_string(d.id) + "\">", "</tr>");
    EXPECT_TRUE(has(row, ">" + pct(d.utilization) + "<")) << row;
    EXPECT_TRUE(has(row, ">" + pct(*d.sm_efficiency) + "<")) << row;
    EXPECT_TRUE(has(row, ">" + ms(static_cast<double>(d.idle_in_steps_ns) / 5) + "<")) << row;
  }
  // One hover rectangle per bucket.
  EXPECT_EQ(count(page, "<rect class=\"hover\""),
            static_cast<int>(r.devices.front().utilization_series.size()));

  // Idle causes: each cause with time, per step and its share of the idle time.
  ASSERT_TRUE(r.idle_causes_determined);
  for (const auto& c : r.idle_causes) {
    const std::string row =
        between(page, std::string("<tr data-cause=\"") + idle_cause_name(c.cause) + "\">", "</tr>");
    if (c.total_ns == 0) {
      EXPECT_TRUE(row.empty()) << idle_cause_name(c.cause);
      continue;
    }
    EXPECT_TRUE(has(row, ">" + ms(static_cast<double>(c.total_ns) / 5) + "<")) << row;
    EXPECT_TRUE(has(
        row,
        ">" + pct(static_cast<double>(c.total_ns) / static_cast<double>(r.gpu_idle_in_steps_ns)) +
            "<"))
        << row;
  }

  // Findings, in the Report's order, each with its saving and recommendation.
  ASSERT_FALSE(r.findings.empty());
  std::size_t last = 0;
  for (const auto& f : r.findings) {
    const std::string head = "<article class=\"finding";
    const auto at = page.find("data-id=\"" + f.id + "\"", last);
    ASSERT_NE(at, std::string::npos) << f.id;
    EXPECT_GT(at, last) << f.id;
    last = at;
    const std::string article = between(page.substr(at), "data-id", "</article>");
    if (f.saving_ns_per_step)
      EXPECT_TRUE(has(article, ms(static_cast<double>(*f.saving_ns_per_step)) + " per step</b> (" +
                                   pct(f.saving_share) + " of the step)"))
          << article;
    EXPECT_EQ(count(article, "<tr>"), static_cast<int>(f.evidence.size()) + 1) << article;
    EXPECT_TRUE(has(article, detail::xml_escape(f.recommendation))) << f.id;
  }
  EXPECT_TRUE(has(page, detail::xml_escape(r.findings.front().title)));

  // Tables: every row of the three, with its times.
  for (const auto& o : r.top_ops_by_self_cpu)
    EXPECT_TRUE(has(page, "title=\"" + o.name + "\">" + o.name + "</div></td><td class=\"num\">" +
                              std::to_string(o.calls) + "</td><td class=\"num sorted\">" +
                              ms(static_cast<double>(o.self_cpu_ns)) + "<"))
        << o.name;
  const std::string device_table = between(page, "id=\"ops-device\"", "</table>");
  for (const auto& o : r.top_ops_by_self_device)
    EXPECT_TRUE(has(device_table, ">" + ms(static_cast<double>(o.self_device_ns)) + "<")) << o.name;
  const std::string kernels = between(page, "id=\"kernels\"", "</table>");
  EXPECT_EQ(count(kernels, "<tr>"), static_cast<int>(r.top_kernels.size()) + 1);
  for (const auto& k : r.top_kernels)
    EXPECT_TRUE(has(kernels, "title=\"" + detail::xml_escape(k.name) + "\"")) << k.name;
}

TEST(ReportHtml, SaysWhatIsMissing) {
  {
    // CPU only, steps: the GPU sections say why they are empty.
    const Report r(training_trace(4, 1000, false, "aten::slow", 200));
    const std::string page = r.to_html();
    EXPECT_TRUE(has(page, "<b>No GPU data.</b> The trace has no GPU activity"));
    EXPECT_FALSE(has(page, "Self device"));
    EXPECT_TRUE(has(page, "The idle causes cannot be determined: no GPU activity in the trace"));
    EXPECT_FALSE(has(page, "id=\"kernels\""));
    EXPECT_FALSE(has(page, "id=\"ops-device\""));
    EXPECT_TRUE(has(page, "id=\"ops-cpu\""));
    EXPECT_EQ(count(page, "<g class=\"step\""), 4);
  }
  {
    // No steps: the whole trace is one bar, named so; no average bar, no spread.
    const Report r(cpu_trace_without_steps());
    ASSERT_FALSE(r.has_steps);
    const std::string page = r.to_html();
    EXPECT_TRUE(has(page, ">whole trace</text>"));
    EXPECT_FALSE(has(page, "class=\"average\""));
    EXPECT_TRUE(has(page, "no ProfilerStep# ranges"));
    EXPECT_TRUE(has(page, "<li data-id=\"no_steps\">"));
    EXPECT_TRUE(has(page, "Spread (p50, p90, outliers) cannot be determined"));
  }
  {
    // Nothing at all.
    const Report r(empty_trace());
    const std::string page = r.to_html();
    EXPECT_TRUE(has(page,
                    "The step-time breakdown cannot be determined: the trace has no "
                    "ProfilerStep# ranges and no CPU operators."));
    EXPECT_TRUE(has(page, "No findings: there is no step to analyse."));
    EXPECT_TRUE(has(page, "No operator time."));
    EXPECT_FALSE(has(page, "<svg"));
  }
  {
    // With nothing to report on the trace's quality, the page says it was looked at.
    Report r(training_trace(4, 1000, true));
    EXPECT_FALSE(has(r.to_html(), "Nothing missing or suspect"));  // no [memory] events
    r.quality.clear();
    r.undetermined.clear();
    const std::string page = r.to_html();
    EXPECT_TRUE(has(page, "Nothing missing or suspect"));
    EXPECT_FALSE(has(page, "Cannot be determined"));
  }
}

TEST(ReportHtml, NamesAreEscaped) {
  TraceBuilder b;
  b.t.process_name = "<proc> & \"co\"";
  const std::string evil = "my<op>&\"x\" 'y' \xff";
  for (int i = 0; i < 3; ++i) {
    b.step(i + 1, i * 1000.0, i * 1000.0 + 1000);
    b.op_with_kernel(evil, i * 1000.0 + 10, i * 1000.0 + 500, "kern<T>&", i * 1000.0 + 20,
                     i * 1000.0 + 900);
  }
  const std::string page = Report(b.finish()).to_html();
  EXPECT_EQ(test::xml_problem(page), "");
  EXPECT_FALSE(has(page, "my<op>"));
  EXPECT_FALSE(has(page, "kern<T>"));
  EXPECT_FALSE(has(page, "<proc>"));
  EXPECT_TRUE(has(page, "my&lt;op&gt;&amp;&quot;x&quot; &apos;y&apos; \xef\xbf\xbd"));
  EXPECT_TRUE(has(page, "kern&lt;T&gt;&amp;"));
  EXPECT_TRUE(has(page, "&lt;proc&gt; &amp; &quot;co&quot;"));
}

TEST(ReportHtml, UtilizationSeriesResolvesTheUtilization) {
  // One device, 4 steps of 1000 us; the kernels run in the first half of each step.
  TraceBuilder b;
  for (int i = 0; i < 4; ++i) {
    const double s = i * 1000.0;
    b.step(i + 1, s, s + 1000);
    b.op_with_kernel("aten::mm", s, s + 900, "k", s, s + 500);
  }
  ReportOptions o;
  o.utilization_buckets = 8;
  const Report r(b.finish(), o);
  ASSERT_EQ(r.devices.size(), 1u);
  const auto& d = r.devices[0];
  EXPECT_DOUBLE_EQ(d.utilization, 0.5);
  EXPECT_EQ(d.utilization_bucket_ns, 500000);
  EXPECT_EQ(d.utilization_series, (std::vector<double>{1, 0, 1, 0, 1, 0, 1, 0}));

  // A window that does not divide: buckets of ceil(window / n), the last one shorter, and the
  // mean weighted by bucket length is the utilization.
  for (int buckets : {1, 3, 7, 200, 5000}) {
    for (const Trace& t : {h200_trace(), training_trace(5, 1000, true, "aten::slow", 150)}) {
      ReportOptions ob;
      ob.utilization_buckets = buckets;
      const Report rb(t, ob);
      for (const auto& dev : rb.devices) {
        const int64_t window = dev.window_end_ns - dev.window_start_ns;
        ASSERT_GT(window, 0);
        ASSERT_FALSE(dev.utilization_series.empty());
        EXPECT_LE(dev.utilization_series.size(), static_cast<std::size_t>(buckets));
        EXPECT_EQ(dev.utilization_bucket_ns, (window + buckets - 1) / buckets);
        double busy = 0;
        for (std::size_t i = 0; i < dev.utilization_series.size(); ++i) {
          const int64_t lo =
              dev.window_start_ns + static_cast<int64_t>(i) * dev.utilization_bucket_ns;
          const int64_t hi = std::min(lo + dev.utilization_bucket_ns, dev.window_end_ns);
          ASSERT_GT(hi, lo);
          EXPECT_GE(dev.utilization_series[i], 0);
          EXPECT_LE(dev.utilization_series[i], 1);
          busy += dev.utilization_series[i] * static_cast<double>(hi - lo);
        }
        EXPECT_NEAR(busy, static_cast<double>(dev.kernel_busy_ns), 1e-3 * buckets) << buckets;
        EXPECT_EQ(dev.window_start_ns + static_cast<int64_t>(dev.utilization_series.size() - 1) *
                                            dev.utilization_bucket_ns <
                      dev.window_end_ns,
                  true);
      }
    }
  }
  ReportOptions none;
  none.utilization_buckets = 0;
  const Report rn(h200_trace(), none);
  EXPECT_TRUE(rn.devices.at(0).utilization_series.empty());
  const std::string page = rn.to_html();
  EXPECT_TRUE(has(page, "No utilization over time: ReportOptions::utilization_buckets is 0"));
  EXPECT_EQ(test::xml_problem(page), "");
}

// The page's bytes do not depend on the C locale's decimal point (as test_locale checks for
// every other writer): the Report is computed under "C", the page written under de_DE.
TEST(ReportHtml, SameBytesUnderADecimalCommaLocale) {
  const char* kLocale = "de_DE.UTF-8";
  std::string dir;
  if (locale_t l = ::newlocale(LC_ALL_MASK, kLocale, nullptr)) {
    ::freelocale(l);
  } else {
    dir = (std::filesystem::temp_directory_path() / "ptprof_locale_XXXXXX").string();
    ASSERT_NE(::mkdtemp(dir.data()), nullptr);
    const std::string cmd =
        "localedef -i de_DE -f UTF-8 " + dir + "/" + kLocale + " >/dev/null 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd << " (Debian's locales package has the sources)";
    ::setenv("LOCPATH", dir.c_str(), 1);
  }
  const Report r(h200_trace());
  const std::string c = r.to_html();
  ASSERT_NE(std::setlocale(LC_ALL, kLocale), nullptr);
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.1f", 1.5);
  const std::string premise = buf;
  const std::string de = r.to_html();
  std::setlocale(LC_ALL, "C");
  if (!dir.empty()) {
    ::unsetenv("LOCPATH");
    std::filesystem::remove_all(dir);
  }
  ASSERT_EQ(premise, "1,5");
  EXPECT_TRUE(c == de);
}

std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

TEST(ReportHtml, SaveWritesThroughTheAtomicWriter) {
  std::string dir = (std::filesystem::temp_directory_path() / "ptprof_report_XXXXXX").string();
  ASSERT_NE(::mkdtemp(dir.data()), nullptr);
  const Report r(training_trace(4, 1000, true, "aten::slow", 200));
  r.save_html(dir + "/r.html");
  r.save_json(dir + "/r.json");
  r.save_json(dir + "/r.json.gz");
  EXPECT_EQ(read_bytes(dir + "/r.html"), r.to_html());
  EXPECT_EQ(read_bytes(dir + "/r.json"), r.to_json());
  const std::string gz = read_bytes(dir + "/r.json.gz");
  ASSERT_GE(gz.size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>(gz[0]), 0x1f);  // gzip's magic
  EXPECT_EQ(static_cast<unsigned char>(gz[1]), 0x8b);
  // Only the three files: no temporary left behind.
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    ++files;
    EXPECT_EQ(e.path().filename().string().rfind(".r.", 0), std::string::npos) << e.path();
  }
  EXPECT_EQ(files, 3);
  // A directory that is not there: an error naming the path.
  try {
    r.save_html(dir + "/missing/r.html");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(dir + "/missing/r.html"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ptprof
