// The page's idle causes section: what the launching thread did while the GPU sat idle.
#include "analysis/report/html_page.h"

#include <algorithm>
#include <string>
#include <vector>

#include "render/format.h"

namespace ptprof::detail {

namespace {

const char* cause_words(IdleCause c) {
  switch (c) {
    case IdleCause::DataLoader:
      return "loading data";
    case IdleCause::Collective:
      return "in a collective (communication)";
    case IdleCause::DeviceToHost:
      return "blocked in item() / a device-to-host copy";
    case IdleCause::Sync:
      return "blocked in a synchronization";
    case IdleCause::Allocator:
      return "in the allocator (cudaMalloc, cudaFree)";
    case IdleCause::OpOverhead:
      return "running operator code and launches";
    case IdleCause::OutsideOps:
      return "outside any operator (the program's own code)";
    case IdleCause::Unknown:
      return "unknown: no launching thread found";
  }
  return "?";
}

}  // namespace

void HtmlPage::idle() {
  m.open("section", {{"id", "idle"}}).line();
  m.element("h2", "Why the GPU sat idle inside steps").line();
  if (!r.idle_causes_determined) {
    const std::string* why = undetermined_why("idle_causes");
    box("missing",
        "The idle causes cannot be determined: " +
            (why ? *why
                 : std::string(r.has_gpu_data ? "no step to analyse" : "no GPU activity")) +
            ".");
    m.close("section").line();
    return;
  }
  const double n = steps_count();
  const double idle = static_cast<double>(r.gpu_idle_in_steps_ns);
  m.open("p")
      .text(
          "For each moment inside a step that no kernel, copy or memset ran, what the thread "
          "that launches the GPU's next work was doing. In all: ")
      .element("b", ms(idle / n) + " per step")
      .text((r.average_step_ns > 0 ? " (" + pct(idle / n / r.average_step_ns) + " of the step" +
                                         (r.devices.size() > 1 ? ", devices summed" : "") + ")"
                                   : std::string()) +
            ".")
      .close("p")
      .line();
  if (r.gpu_idle_in_steps_ns <= 0) {
    box("ok", "The GPU never sat idle inside the steps.");
    m.close("section").line();
    return;
  }
  std::vector<const Report::CauseTotal*> order;
  for (const auto& c : r.idle_causes)
    if (c.total_ns > 0) order.push_back(&c);
  std::stable_sort(order.begin(), order.end(),
                   [](const Report::CauseTotal* a, const Report::CauseTotal* b) {
                     return a->total_ns > b->total_ns;
                   });
  open_table({{"class", "idle"}},
             {"The host was", "=Per step", "=Share of idle", "", "=Gaps", "Where (per step)"});
  for (const Report::CauseTotal* c : order) {
    const double share = static_cast<double>(c->total_ns) / idle;
    m.open("tr", {{"data-cause", idle_cause_name(c->cause)}});
    m.open("td").text(std::string(cause_words(c->cause)) + " ");
    m.element("span", {{"class", "affects"}}, idle_cause_name(c->cause)).close("td");
    cell("num", ms(static_cast<double>(c->total_ns) / n));
    cell("num", pct(share));
    m.open("td", {{"class", "bar"}}).open("div", {{"class", "meter"}});
    m.element("div", {{"style", "width:" + num(std::min(share, 1.0) * 100, 2) + "%"}}, "");
    m.close("div").close("td");
    cell("num", i64(c->gaps));
    m.open("td", {{"class", "small"}});
    for (std::size_t k = 0; k < c->top.size() && k < 3; ++k) {
      if (k) m.empty("br");
      m.element("span", {{"class", "mono"}}, c->top[k].first).text(" ");
      m.element("span", {{"class", "nowrap"}}, ms(static_cast<double>(c->top[k].second) / n));
    }
    m.close("td").close("tr").line();
  }
  close_table();
  m.close("section").line();
}

}  // namespace ptprof::detail
