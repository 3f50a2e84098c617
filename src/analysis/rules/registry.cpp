// The rule runner: every rule of rules.def over the analysed steps, findings ranked by what
// they could save.
#include "analysis/rules/registry.h"

#include <algorithm>
#include <string>

namespace ptprof::detail {

const std::vector<const Rule*>& all_rules() {
  static const std::vector<const Rule*> rules = {
#define PTPROF_RULE(id) &id##_rule,
#include "analysis/rules/rules.def"
#undef PTPROF_RULE
  };
  return rules;
}

void run_rules(Analysis& a) {
  Report& r = a.r;
  if (!r.breakdown_determined || r.average_step_ns <= 0) {
    a.undetermined("findings", "no step to analyse");
    return;
  }
  const RuleContext context(a);
  std::string without_inputs;
  for (const Rule* rule : all_rules()) {
    RuleOutput out(*rule, context);
    rule->evaluate(context, out);
    for (auto& u : out.undetermined_statements) r.undetermined.push_back(std::move(u));
    for (auto& f : out.findings) r.findings.push_back(std::move(f));
    if (out.lacks_input_types)
      without_inputs += (without_inputs.empty() ? "" : ", ") + std::string(rule->id);
  }
  if (!without_inputs.empty())
    a.undetermined("findings.input_types",
                   "the operators these rules look at carry no input "
                   "types (record with record_shapes): " +
                       without_inputs);
  std::stable_sort(r.findings.begin(), r.findings.end(),
                   [](const Report::Finding& x, const Report::Finding& y) {
                     return x.saving_ns_per_step.value_or(-1) > y.saving_ns_per_step.value_or(-1);
                   });
}

}  // namespace ptprof::detail
