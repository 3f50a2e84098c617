// The page's findings section: the rules that fired, ranked by what each could save.
#include "analysis/report/html_page.h"

#include <algorithm>
#include <string>
#include <vector>

#include "render/format.h"

namespace ptprof::detail {

namespace {

// A finding's badge: whose rule it is.
const char* source_words(const std::string& source) {
  if (source == "tensorboard") return "TensorBoard's rule";
  if (source == "torch") return "torch.profiler's pattern";
  return "ptprof";
}

}  // namespace

void HtmlPage::findings() {
  m.open("section", {{"id", "findings"}}).line();
  m.element("h2", "Findings").line();
  if (r.findings.empty()) {
    box(r.breakdown_determined ? "ok" : "missing",
        r.breakdown_determined ? "None of the rules fired."
                               : "No findings: there is no step to analyse.");
    m.close("section").line();
    return;
  }
  para("small muted",
       "Ranked by the most each could save per step: what removing the cause entirely would "
       "save. An upper bound, not a forecast; findings overlap, so their savings do not add up.");
  int rank = 0;
  for (const auto& f : r.findings) {
    m.open("article",
           {{"class", f.saving_ns_per_step ? "finding" : "finding nosaving"}, {"data-id", f.id}})
        .line();
    m.open("h3").element("span", {{"class", "rank"}}, std::to_string(++rank) + ".");
    m.element("span", f.title);
    m.element("span", {{"class", "badge " + f.source}}, source_words(f.source));
    m.close("h3").line();
    if (f.saving_ns_per_step) {
      m.open("div", {{"class", "saving"}}).open("div", {{"class", "meter"}});
      m.element("div",
                {{"style", "width:" + num(std::clamp(f.saving_share, 0.0, 1.0) * 100, 2) + "%"}},
                "");
      m.close("div").open("div").text("Could save up to ");
      m.element("b", ms(static_cast<double>(*f.saving_ns_per_step)) + " per step");
      m.text(" (" + pct(f.saving_share) + " of the step)").close("div").close("div").line();
    } else {
      para("small muted", "Not a time saving.");
    }
    if (!f.evidence.empty()) {
      open_table({{"class", "evidence"}},
                 {"Evidence", "=Per step", "=Time per step", "=Share of step", "Note"});
      for (const auto& e : f.evidence) {
        m.open("tr").open("td", {{"class", "what"}});
        m.element("div", {{"class", "clamp"}, {"title", e.what}}, e.what).close("td");
        cell("num", e.per_step > 0 ? format_fixed(e.per_step, 1) : std::string(kDash));
        cell("num",
             e.ns_per_step > 0 ? ms(static_cast<double>(e.ns_per_step)) : std::string(kDash));
        cell("num", e.ns_per_step > 0 ? pct(e.share_of_step) : std::string(kDash));
        cell("small", e.note);
        m.close("tr").line();
      }
      close_table();
    }
    m.open("div", {{"class", "recommendation"}}).element("b", "What to do:");
    m.text(" " + f.recommendation).close("div").line();
    m.close("article").line();
  }
  m.close("section").line();
}

}  // namespace ptprof::detail
