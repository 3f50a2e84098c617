// The report's rules and thresholds as one registry and one declaration
// (src/analysis/rules/rules.def, include/ptprof/report_thresholds.def): ids that cannot collide,
// thresholds that exist, and the JSON, the page and docs/report.md all listing the same.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "analysis/report/thresholds.h"
#include "analysis/rules/docs.h"
#include "analysis/rules/registry.h"
#include "ptprof/report.h"
#include "trace_builder.h"

namespace ptprof::detail {
namespace {

std::set<std::string> threshold_names() {
  std::set<std::string> names;
  for_each_threshold(ReportThresholds{},
                     [&](const ThresholdInfo& info, auto) { names.insert(info.name); });
  return names;
}

TEST(ReportRules, IdsAreUniqueSourcesKnownThresholdsDeclared) {
  const std::set<std::string> thresholds = threshold_names();
  std::set<std::string> ids;
  for (const Rule* r : all_rules()) {
    EXPECT_TRUE(ids.insert(r->id).second) << "two rules named " << r->id;
    EXPECT_TRUE(std::string(r->source) == "tensorboard" || std::string(r->source) == "torch" ||
                std::string(r->source) == "ptprof")
        << r->id << ": " << r->source;
    EXPECT_TRUE(r->fires && *r->fires && r->saving && *r->saving) << r->id;
    for (const char* t : r->thresholds) EXPECT_TRUE(thresholds.count(t)) << r->id << ": " << t;
    // One rule, one file named by its id.
    EXPECT_TRUE(std::filesystem::exists(std::string(PTPROF_SOURCE_DIR) + "/src/analysis/rules/" +
                                        r->id + ".cpp"))
        << r->id;
  }
  EXPECT_EQ(ids.size(), 20u);
}

TEST(ReportRules, EveryThresholdHasAUnitASourceAndAMeaning) {
  for_each_threshold(ReportThresholds{}, [&](const ThresholdInfo& info, auto) {
    const std::string source = info.source;
    EXPECT_TRUE(source == "tensorboard" || source == "hta" || source == "torch" ||
                source == "ptprof")
        << info.name;
    EXPECT_TRUE(info.description && *info.description) << info.name;
    // Times are nanoseconds in the struct and microseconds in the outputs.
    const std::string name = info.name;
    EXPECT_EQ(info.unit == ThresholdUnit::ns,
              name.size() > 3 && name.substr(name.size() - 3) == "_ns")
        << name;
  });
}

TEST(ReportRules, JsonAndPageListEveryThresholdAndRule) {
  ReportOptions o;
  o.thresholds.kernel_wait_ns = 12345;
  const Report r(test::training_trace(3, 1000, true), o);
  const auto j = nlohmann::json::parse(r.to_json());
  std::set<std::string> keys;
  for (const auto& [k, v] : j.at("thresholds").items()) keys.insert(k);
  std::set<std::string> expected = {"hta_include_last_step"};
  for_each_threshold(ReportThresholds{},
                     [&](const ThresholdInfo& info, auto) { expected.insert(output_name(info)); });
  EXPECT_EQ(keys, expected);
  EXPECT_EQ(j["thresholds"]["kernel_wait_us"], 12.345);
  EXPECT_EQ(j["thresholds"]["for_loop_min_repeats"], 10);
  EXPECT_EQ(j.at("schema"), "ptprof.report/1");
  EXPECT_EQ(j.at("schema_version"), "1.2");
  ASSERT_EQ(j.at("rules").size(), all_rules().size());
  for (std::size_t i = 0; i < all_rules().size(); ++i) {
    EXPECT_EQ(j["rules"][i]["id"], all_rules()[i]->id);
    EXPECT_EQ(j["rules"][i]["source"], all_rules()[i]->source);
  }
  const std::string page = r.to_html();
  for_each_threshold(o.thresholds, [&](const ThresholdInfo& info, auto v) {
    EXPECT_NE(page.find("<code>" + page_name(info) + "</code></td><td class=\"num\">" +
                        threshold_text(info, v) + "</td>"),
              std::string::npos)
        << info.name;
  });
  EXPECT_NE(page.find("<code>kernel_wait</code></td><td class=\"num\">12.345 us</td>"),
            std::string::npos);
}

// docs/report.md holds the tables the registry and report_thresholds.def make, between
// markers. PTPROF_UPDATE_DOCS=1 rewrites them there.
TEST(ReportRules, DocsTablesAreTheRegistrys) {
  const std::string path = std::string(PTPROF_SOURCE_DIR) + "/docs/report.md";
  std::stringstream text;
  text << std::ifstream(path).rdbuf();
  std::string doc = text.str();
  bool changed = false;
  for (const auto& [name, table] : {std::pair<std::string, std::string>{"rules", rules_markdown()},
                                    {"thresholds", thresholds_markdown()}}) {
    const std::string begin =
        "<!-- generated: " + name + " (tests/core/analysis/test_report_rules.cpp) -->\n";
    const std::string end = "<!-- end of generated: " + name + " -->";
    const auto a = doc.find(begin);
    const auto b = doc.find(end);
    ASSERT_NE(a, std::string::npos) << path << " lacks " << begin;
    ASSERT_NE(b, std::string::npos) << path << " lacks " << end;
    const std::string now = doc.substr(a + begin.size(), b - a - begin.size());
    if (now == table) continue;
    if (std::getenv("PTPROF_UPDATE_DOCS")) {
      doc.replace(a + begin.size(), b - a - begin.size(), table);
      changed = true;
    } else {
      ADD_FAILURE() << path << ": the " << name << " table is not the registry's; run this test "
                    << "with PTPROF_UPDATE_DOCS=1 to write it. Expected:\n"
                    << table;
    }
  }
  if (changed) std::ofstream(path) << doc;
}

}  // namespace
}  // namespace ptprof::detail
