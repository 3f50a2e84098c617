// Report::to_html(): the report as one self-contained page that answers "why is my step slow".
// No scripts, fonts, stylesheets or images from anywhere: inline CSS (report.css, compiled in)
// and SVG only, so the page opens offline and from an archived CI artifact. Written through
// the markup writer (render/markup.h), which escapes every text and attribute and closes every
// element, as well-formed XML (XHTML syntax) that an XML parser can check. Numbers go through
// format_fixed / format_general: the process locale may use a decimal comma.
// Here: the page's skeleton, header, trace quality and footer; each section between has a file
// of its own (html_page.h lists them).
#include <time.h>

#include <cstdio>
#include <string>

#include "analysis/report/html_page.h"
#include "analysis/report/report_css.h"
#include "analysis/report/thresholds.h"
#include "ptprof/report.h"
#include "render/format.h"
#include "trace/chrome_trace.h"
#include "trace/json_writer.h"

namespace ptprof::detail {

namespace {

// "2026-12-04 17:02:01 UTC"; snprintf's %d prints digits the same in every locale.
std::string utc_time(int64_t unix_ns) {
  const time_t seconds = static_cast<time_t>(unix_ns / 1000000000);
  struct tm tm {};
  if (!gmtime_r(&seconds, &tm)) return "";
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02d %02d:%02d:%02d UTC", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
  return buf;
}

}  // namespace

std::string HtmlPage::build() {
  m.doctype_html();
  m.open("html", {{"lang", "en"}}).line();
  m.open("head").line();
  m.empty("meta", {{"charset", "utf-8"}}).line();
  m.empty("meta", {{"name", "viewport"}, {"content", "width=device-width, initial-scale=1"}})
      .line();
  std::string title = "ptprof report";
  if (!r.source.worker_name.empty()) {
    title += ": " + r.source.worker_name;
  } else if (!r.source.process_name.empty()) {
    title += ": " + r.source.process_name;
  }
  m.element("title", title).line();
  m.style(std::string("\n") + detail::kReportCss).line();
  m.close("head").line();
  m.open("body").line();
  m.open("main").line();
  header();
  quality();
  breakdown();
  utilization();
  idle();
  findings();
  tables();
  footer();
  m.close("main").line();
  m.close("body").line();
  m.close("html").line();
  return m.take();
}

// ------------------------------------------------------------------ header
void HtmlPage::header() {
  m.open("header").line();
  m.open("h1").text("Why is the step slow?").element("small", "ptprof report").close("h1").line();
  m.open("p", {{"class", "identity"}});
  const Report::Source& s = r.source;
  if (!s.worker_name.empty())
    m.open("span").text("worker ").element("b", s.worker_name).close("span");
  if (!s.process_name.empty() || s.pid != 0) {
    m.open("span").text("process ").element("b", s.process_name.empty() ? "?" : s.process_name);
    if (s.pid != 0) m.text(" (pid " + i64(s.pid) + ")");
    m.close("span");
  }
  if (s.window_end_ns > s.window_start_ns && s.window_start_ns > 0) {
    m.element("span", "window #" + i64(s.window_index) + ": " + utc_time(s.window_start_ns) +
                          ", " + ms(static_cast<double>(s.window_end_ns - s.window_start_ns)));
  }
  m.element("span", i64(s.events) + " events");
  for (const auto& d : r.devices)
    m.element("span", "GPU " + std::to_string(d.id) + (d.name.empty() ? "" : ": " + d.name));
  m.close("p").line();
  static constexpr const char* kSections[][2] = {
      {"#quality", "Trace quality"},       {"#breakdown", "Step time"},
      {"#utilization", "GPU utilization"}, {"#idle", "GPU idle causes"},
      {"#findings", "Findings"},           {"#tables", "Tables"}};
  m.open("nav");
  for (const auto& section : kSections) m.element("a", {{"href", section[0]}}, section[1]);
  m.close("nav").line();
  tiles();
  m.close("header").line();
}

void HtmlPage::tile(const std::string& cls, const std::string& label,
                    const std::string& value, const std::string& sub) {
  m.open("div", {{"class", "tile" + cls}});
  m.element("div", {{"class", "label"}}, label);
  m.element("div", {{"class", "value"}}, value);
  m.element("div", {{"class", "sub"}}, sub);
  m.close("div").line();
}

void HtmlPage::tiles() {
  m.open("div", {{"class", "tiles"}}).line();
  if (!r.breakdown_determined) {
    tile("", "Average step", kDash, "no step could be analysed");
  } else if (r.has_steps) {
    tile("", "Average step", ms(r.average_step_ns),
         i64(static_cast<int64_t>(r.steps.size())) + " steps, #" + r.steps.front().name +
             " to #" + r.steps.back().name);
  } else {
    tile("", "Whole trace", ms(r.average_step_ns), "no ProfilerStep# ranges: one step");
  }
  if (!r.has_gpu_data || r.devices.empty()) {
    tile("", "GPU utilization", kDash, "no GPU data");
  } else {
    double sum = 0;
    for (const auto& d : r.devices) sum += d.utilization;
    tile("", "GPU utilization", pct(sum / static_cast<double>(r.devices.size())),
         r.devices.size() == 1
             ? std::string(r.has_steps ? "kernels over the steps (TB)"
                                       : "kernels over the trace (TB)")
             : "mean of " + i64(static_cast<int64_t>(r.devices.size())) + " devices (TB)");
  }
  if (r.idle_causes_determined && r.average_step_ns > 0) {
    const double per_step = static_cast<double>(r.gpu_idle_in_steps_ns) / steps_count();
    tile("", "GPU idle in steps", ms(per_step),
         (r.has_steps ? "per step, " : "in the trace, ") + pct(per_step / r.average_step_ns) +
             (r.has_steps ? " of the step" : " of it") +
             (r.devices.size() > 1 ? " (devices summed)" : ""));
  } else {
    tile("", "GPU idle in steps", kDash, r.has_gpu_data ? "no step to analyse" : "no GPU data");
  }
  if (r.profiler_cost) {
    const Report::ProfilerOwnCost& c = *r.profiler_cost;
    tile(" own-cost", "ptprof's own cost", "\xe2\x89\xa5 " + ms(static_cast<double>(c.ns_per_step)),
         "per step, " + pct(c.share_of_step) + ": " + num(c.ops_per_step, 0) + " ops \xc3\x97 " +
             num(c.op_ns, 0) + " ns, calibrated in the process (a lower bound)");
  }
  tile("", "Trace quality", i64(static_cast<int64_t>(r.quality.size() + r.undetermined.size())),
       r.quality.empty() && r.undetermined.empty() ? "nothing missing or suspect"
                                                   : "notes: see below first");
  if (!r.findings.empty()) {
    const Report::Finding& f = r.findings.front();
    std::string sub = f.saving_ns_per_step
                          ? "could save up to " + ms(static_cast<double>(*f.saving_ns_per_step)) +
                                " per step (" + pct(f.saving_share) +
                                "), an upper bound; see the findings"
                          : "not a time saving; see the findings";
    tile(" answer", "Top finding", f.title, sub);
  } else {
    tile(" answer none", "Top finding", "none",
         r.breakdown_determined ? "none of the rules fired" : "no step to analyse");
  }
  m.close("div").line();
}

// ------------------------------------------------------------------ trace quality
void HtmlPage::quality() {
  m.open("section", {{"id", "quality"}}).line();
  m.element("h2", "Trace quality").line();
  if (r.quality.empty() && r.undetermined.empty())
    box("ok", "Nothing missing or suspect: every number below rests on complete data.");
  if (!r.quality.empty()) {
    m.open("div", {{"class", "box warn"}}).element("b", "What the numbers below rest on").line();
    m.open("ul", {{"class", "quality"}}).line();
    for (const auto& q : r.quality) {
      m.open("li", {{"data-id", q.id}}).text(q.message);
      if (!q.affects.empty()) {
        std::string a;
        for (const auto& s : q.affects) a += (a.empty() ? "" : ", ") + s;
        m.text(" ").element("span", {{"class", "affects"}}, "(limits: " + a + ")");
      }
      m.close("li").line();
    }
    m.close("ul").close("div").line();
  }
  if (!r.undetermined.empty()) {
    m.open("div", {{"class", "box missing"}}).element("b", "Cannot be determined").line();
    m.open("ul", {{"class", "quality"}}).line();
    for (const auto& [what, why] : r.undetermined)
      m.open("li", {{"data-what", what}})
          .element("code", what)
          .text(": " + why)
          .close("li")
          .line();
    m.close("ul").close("div").line();
  }
  m.close("section").line();
}
// ------------------------------------------------------------------ footer
void HtmlPage::footer() {
  m.open("footer").line();
  m.open("p").element("b", "TB").text(
      ": TensorBoard's PyTorch Profiler plugin's definition (its "
      "last source); ");
  m.element("b", "HTA").text(": Holistic Trace Analysis'; ");
  m.element("b", "torch")
      .text(
          ": torch.profiler's pattern matcher's; the rest is ptprof's own. "
          "Definitions: docs/report.md.");
  m.close("p").line();
  m.open("details").element("summary", "Thresholds of the rules").line();
  m.open("table", {{"class", "thresholds"}}).open("tbody").line();
  auto row = [&](const std::string& name, const std::string& v) {
    m.open("tr").open("td").element("code", name).close("td");
    cell("num", v);
    m.close("tr").line();
  };
  detail::for_each_threshold(r.options.thresholds,
                             [&](const detail::ThresholdInfo& info, auto v) {
                               row(detail::page_name(info), detail::threshold_text(info, v));
                             });
  row("hta_include_last_step", r.options.hta_include_last_step ? "true" : "false");
  m.close("tbody").close("table").line();
  m.close("details").line();
  m.close("footer").line();
}

}  // namespace ptprof::detail

namespace ptprof {

std::string Report::to_html() const {
  return detail::HtmlPage(*this).build();
}

void Report::save_json(const std::string& path) const {
  const std::string text = to_json();
  detail::write_file_atomically(path,
                                [&](detail::Sink& sink) { sink.write(text.data(), text.size()); });
}

void Report::save_html(const std::string& path) const {
  const std::string text = to_html();
  detail::write_file_atomically(path,
                                [&](detail::Sink& sink) { sink.write(text.data(), text.size()); });
}

}  // namespace ptprof
