// registry.h: the report's rules (rules.def), for the runner, the outputs and the docs.
#pragma once

#include <vector>

#include "analysis/rules/rule.h"

namespace ptprof::detail {

#define PTPROF_RULE(id) extern const Rule id##_rule;
#include "analysis/rules/rules.def"
#undef PTPROF_RULE

// Every rule, in rules.def's order.
const std::vector<const Rule*>& all_rules();

}  // namespace ptprof::detail
