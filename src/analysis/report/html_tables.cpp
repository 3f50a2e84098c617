// The page's tables section: the top operators and kernels, as key_averages() gives them.
#include "analysis/report/html_page.h"

#include <algorithm>
#include <string>
#include <vector>

#include "render/format.h"

namespace ptprof::detail {

void HtmlPage::tables() {
  m.open("section", {{"id", "tables"}}).line();
  m.element("h2", "Tables").line();
  std::string scope = "over the whole trace";
  if (r.has_steps)
    scope +=
        " (" + i64(static_cast<int64_t>(r.steps.size() + r.trimmed_steps.size())) + " steps)";
  para("small muted", "Totals " + scope +
                          ", as torch.profiler's key_averages() and kernel table give them; "
                          "user ranges and steps left out. Hover a name for all of it.");
  ops_table("Top operators by self CPU time", "ops-cpu", r.top_ops_by_self_cpu, false);
  if (r.has_gpu_data)
    ops_table("Top operators by self device time", "ops-device", r.top_ops_by_self_device, true);
  kernels_table();
  m.close("section").line();
}

void HtmlPage::name_cell(const std::string& name) {
  m.open("td", {{"class", "name"}});
  m.element("div", {{"class", "clamp"}, {"title", name}}, name).close("td");
}

// The column the rows are sorted by is bold.
void HtmlPage::ops_table(const char* title, const char* id,
                         const std::vector<Report::OpRow>& rows, bool by_device) {
  m.element("h3", title).line();
  if (rows.empty()) {
    m.element("p", {{"class", "muted"}}, "No operator time.").line();
    return;
  }
  // Device columns only where there is device time to show.
  const bool device = r.has_gpu_data;
  m.open("table", {{"class", "ops"}, {"id", id}}).line().open("thead").open("tr");
  head_cell("num", "#");
  head_cell("", "Operator");
  for (const char* h : {"Calls", "Self CPU", "CPU total"}) head_cell("num", h);
  if (device)
    for (const char* h : {"Self device", "Device total"}) head_cell("num", h);
  m.close("tr").close("thead").line().open("tbody").line();
  int rank = 0;
  for (const auto& o : rows) {
    m.open("tr");
    cell("num", std::to_string(++rank));
    name_cell(o.name);
    cell("num", i64(o.calls));
    cell(by_device ? "num" : "num sorted", ms(static_cast<double>(o.self_cpu_ns)));
    cell("num", ms(static_cast<double>(o.cpu_total_ns)));
    if (device) {
      cell(by_device ? "num sorted" : "num", ms(static_cast<double>(o.self_device_ns)));
      cell("num", ms(static_cast<double>(o.device_total_ns)));
    }
    m.close("tr").line();
  }
  close_table();
}

void HtmlPage::kernels_table() {
  if (!r.has_gpu_data) return;
  m.element("h3", "Top kernels by total time").line();
  if (r.top_kernels.empty()) {
    m.element("p", {{"class", "muted"}}, "No kernels.").line();
    return;
  }
  open_table({{"class", "kernels"}, {"id", "kernels"}},
             {"=#", "Kernel", "=Calls", "=Total", "=Average", "=Min", "=Max", "=Est. occupancy",
              "=Blocks per SM"});
  int rank = 0;
  for (const auto& k : r.top_kernels) {
    m.open("tr");
    cell("num", std::to_string(++rank));
    name_cell(k.name);
    cell("num", i64(k.calls));
    cell("num sorted", ms(static_cast<double>(k.total_ns)));
    cell("num", ms(k.calls ? static_cast<double>(k.total_ns) / static_cast<double>(k.calls) : 0));
    cell("num", ms(static_cast<double>(k.min_ns)));
    cell("num", ms(static_cast<double>(k.max_ns)));
    cell("num", k.achieved_occupancy ? format_fixed(*k.achieved_occupancy, 0) + "%"
                                     : std::string("n/a"));
    cell("num", k.blocks_per_sm ? format_fixed(*k.blocks_per_sm, 2) : std::string("n/a"));
    m.close("tr").line();
  }
  close_table();
}

}  // namespace ptprof::detail
