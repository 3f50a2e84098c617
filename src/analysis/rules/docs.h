// docs.h: docs/report.md's generated tables (Markdown): every rule of the registry, and every
// threshold of ptprof/report_thresholds.def with its default.
#pragma once

#include <string>

namespace ptprof::detail {

std::string rules_markdown();
std::string thresholds_markdown();

}  // namespace ptprof::detail
