// The rules' and thresholds' tables of docs/report.md, made from the registry and
// ptprof/report_thresholds.def (tests/core/analysis/test_report_docs.cpp keeps the file equal).
#include "analysis/rules/docs.h"

#include "analysis/report/thresholds.h"
#include "analysis/rules/registry.h"

namespace ptprof::detail {

std::string rules_markdown() {
  std::string s =
      "| rule | source | fires when | saving per step (an upper bound) | thresholds |\n"
      "|---|---|---|---|---|\n";
  for (const Rule* r : all_rules()) {
    std::string thresholds;
    for (const char* t : r->thresholds)
      thresholds += (thresholds.empty() ? "`" : ", `") + std::string(t) + "`";
    s += "| `" + std::string(r->id) + "` | " + r->source + " | " + r->fires + " | " + r->saving +
         " | " + (thresholds.empty() ? "" : thresholds) + " |\n";
  }
  return s;
}

std::string thresholds_markdown() {
  std::string s =
      "| `ReportThresholds::` | JSON key | default | unit | source | meaning |\n"
      "|---|---|---|---|---|---|\n";
  for_each_threshold(ReportThresholds{}, [&](const ThresholdInfo& info, auto v) {
    s += "| `" + std::string(info.name) + "` | `" + output_name(info) + "` | " +
         threshold_text(info, v) + " | " + unit_name(info.unit) + " | " + info.source + " | " +
         info.description + " |\n";
  });
  return s;
}

}  // namespace ptprof::detail
