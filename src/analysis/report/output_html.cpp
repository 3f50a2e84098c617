// Report::to_html(): the report as one self-contained page that answers "why is my step slow".
// No scripts, fonts, stylesheets or images from anywhere: inline CSS (report.css, compiled in)
// and SVG only, so the page opens offline and from an archived CI artifact. Written through
// the markup writer (render/markup.h), which escapes every text and attribute and closes every
// element, as well-formed XML (XHTML syntax) that an XML parser can check. Numbers go through
// format_fixed / format_general: the process locale may use a decimal comma.
#include <time.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/report/report_css.h"
#include "analysis/report/thresholds.h"
#include "ptprof/report.h"
#include "render/format.h"
#include "render/markup.h"
#include "render/svg.h"
#include "trace/chrome_trace.h"
#include "trace/json_writer.h"

namespace ptprof {

namespace {

using detail::Attr;
using detail::format_fixed;
using detail::format_general;
using detail::Markup;
using detail::ms;
using detail::pct;
using detail::Svg;
using detail::SvgPath;

constexpr const char* kDash = "\xe2\x80\x93";  // en dash: no value
constexpr const char* kMicro = "\xc2\xb5";     // micro sign

std::string num(double v, int decimals = 1) {
  return format_fixed(v, decimals);
}
std::string i64(int64_t v) {
  return std::to_string(v);
}

// Google Charts' default series colours, in TB's category order (Kernel first).
constexpr const char* kCategoryColour[kStepCategories] = {
    "#3366cc", "#dc3912", "#ff9900", "#109618", "#990099", "#0099c6", "#dd4477", "#66aa00"};
// Labels inside a segment: white where it reads on the colour, dark where it does not.
constexpr bool kCategoryDarkText[kStepCategories] = {false, false, true,  false,
                                                     false, true,  false, true};

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

// A finding's badge: whose rule it is.
const char* source_words(const std::string& source) {
  if (source == "tensorboard") return "TensorBoard's rule";
  if (source == "torch") return "torch.profiler's pattern";
  return "ptprof";
}

// Width of `s` in px at the charts' 12px font, generously estimated (DejaVu Sans is wide), so
// labels that would collide are left out rather than drawn over each other.
double text_width(std::string_view s) {
  return 7.2 * static_cast<double>(s.size());
}

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

class Page {
 public:
  explicit Page(const Report& report) : r(report) {}

  std::string build() {
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

 private:
  const Report& r;
  Markup m;

  double steps_count() const {
    return static_cast<double>(std::max<std::size_t>(r.steps.size(), 1));
  }
  const Report::QualityItem* quality_item(std::string_view id) const {
    for (const auto& q : r.quality)
      if (q.id == id) return &q;
    return nullptr;
  }
  const std::string* undetermined_why(std::string_view what) const {
    for (const auto& [w, why] : r.undetermined)
      if (w == what) return &why;
    return nullptr;
  }
  // A box of the given kind holding plain text.
  void box(const char* kind, std::string_view text) {
    m.element("div", {{"class", std::string("box ") + kind}}, text).line();
  }
  void para(const char* cls, std::string_view text) {
    m.element("p", {{"class", cls}}, text).line();
  }
  void cell(const char* cls, std::string_view text) { m.element("td", {{"class", cls}}, text); }
  void head_cell(const char* cls, std::string_view text) {
    if (*cls) {
      m.element("th", {{"class", cls}}, text);
    } else {
      m.element("th", text);
    }
  }
  // <table class=cls [id]><thead><tr>the heads</tr></thead><tbody>: heads "=Name" are numeric.
  void open_table(std::vector<Attr> attrs, std::initializer_list<std::string_view> heads) {
    m.open("table", attrs).line().open("thead").open("tr");
    for (std::string_view h : heads) {
      if (!h.empty() && h[0] == '=') {
        head_cell("num", h.substr(1));
      } else {
        head_cell("", h);
      }
    }
    m.close("tr").close("thead").line().open("tbody").line();
  }
  void close_table() { m.close("tbody").close("table").line(); }

  // ------------------------------------------------------------------ header
  void header() {
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

  void tile(const std::string& cls, const std::string& label, const std::string& value,
            const std::string& sub) {
    m.open("div", {{"class", "tile" + cls}});
    m.element("div", {{"class", "label"}}, label);
    m.element("div", {{"class", "value"}}, value);
    m.element("div", {{"class", "sub"}}, sub);
    m.close("div").line();
  }

  void tiles() {
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
  void quality() {
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

  // ------------------------------------------------------------------ step breakdown
  void swatch(const char* colour) {
    m.element("span", {{"class", "swatch"}, {"style", std::string("background:") + colour}}, "");
  }

  void legend_categories() {
    m.open("div", {{"class", "legend"}});
    for (int c = 0; c < kStepCategories; ++c) {
      m.open("span");
      swatch(kCategoryColour[c]);
      m.text(step_category_name(static_cast<StepCategory>(c))).close("span");
    }
    m.close("div").line();
  }

  void breakdown() {
    m.open("section", {{"id", "breakdown"}}).line();
    m.element("h2", "Step time").line();
    if (!r.breakdown_determined) {
      const std::string* why = undetermined_why("breakdown");
      box("missing", "The step-time breakdown cannot be determined: " +
                         (why ? *why : std::string("no step")) + ".");
      m.close("section").line();
      return;
    }
    para("small muted",
         "TensorBoard's breakdown: each moment of a step goes to the first category active then, "
         "in this order (Kernel first); the categories sum exactly to the step. Steps are "
         "extended to the end of the GPU work they launched.");
    legend_categories();
    breakdown_chart();
    breakdown_table();
    std::string outliers;
    for (const auto& s : r.steps)
      if (s.outlier) outliers += (outliers.empty() ? "#" : ", #") + s.name;
    if (r.spread_determined) {
      para("small", (outliers.empty() ? std::string("No outlier step")
                                      : "Outlier steps (marked red): " + outliers) +
                        " (a step over " + format_general(r.options.thresholds.step_outlier_ratio) +
                        " times the median step, or under its inverse).");
    }
    if (!r.trimmed_steps.empty()) {
      std::string names;
      for (const auto& t : r.trimmed_steps) names += (names.empty() ? "#" : ", #") + t;
      para("small", "Left out, as TensorBoard does (tail trimming): " + names + ".");
    }
    m.close("section").line();
  }

  void breakdown_chart() {
    const bool average_row = r.has_steps && r.steps.size() > 1;
    const std::size_t n = r.steps.size();
    constexpr double W = 1120, L = 96, R = 92, T = 8, B = 46;
    const double pw = W - L - R;
    const double row = n <= 30 ? 26 : std::clamp(780.0 / static_cast<double>(n), 1.5, 26.0);
    const double bar = std::max(1.0, row * (row >= 12 ? 0.68 : 0.85));
    const std::size_t label_every =
        std::max<std::size_t>(1, static_cast<std::size_t>(std::ceil(16.0 / row)));
    const double avg_gap = average_row ? 12 : 0, avg_row = average_row ? 26 : 0;
    const double rows_h = row * static_cast<double>(n) + avg_gap + avg_row;
    const double H = T + rows_h + B;

    double max_ns = r.average_step_ns;
    for (const auto& s : r.steps) max_ns = std::max(max_ns, static_cast<double>(s.total_ns()));
    const double max_ms = std::max(max_ns / 1e6, 1e-6);
    const double tick = detail::nice_step(max_ms, 8);
    const double axis_ms = std::ceil(max_ms / tick * (1 - 1e-9)) * tick;
    auto x_of = [&](double ns) { return L + ns / 1e6 / axis_ms * pw; };

    Svg svg(m, 1);
    m.open("svg", {{"class", "chart"},
                   {"viewBox", "0 0 " + num(W, 0) + " " + num(H, 0)},
                   {"role", "img"},
                   {"aria-label", "step-time breakdown per step"}})
        .line();
    m.element("title", "Step-time breakdown per step (TensorBoard's categories)").line();
    for (int k = 0; k * tick <= axis_ms * (1 + 1e-9); ++k) {
      const double x = L + k * tick / axis_ms * pw;
      svg.line("grid", x, T, x, T + rows_h);
      svg.text("axis", x, T + rows_h + 16, "middle", format_general(k * tick));
      m.line();
    }
    svg.text("axis", L + pw / 2, H - 6, "middle", "time (ms)");
    m.line();

    auto draw = [&](const std::string& name, const std::string& label, bool label_shown,
                    bool outlier, double y, double h, const std::array<double, kStepCategories>& ns,
                    double total_ns, bool total_shown, bool is_average) {
      m.open("g", {{"class", is_average ? "average" : "step"},
                   {"data-step", name},
                   {"data-total-ns", num(total_ns, 0)}});
      if (label_shown)
        svg.text(outlier      ? "outlier"
                 : is_average ? "title"
                              : "axis",
                 L - 8, y + h / 2 + 4, "end", label);
      double x = L;
      for (int c = 0; c < kStepCategories; ++c) {
        if (ns[c] <= 0) continue;
        const double w = ns[c] / 1e6 / axis_ms * pw;
        const std::string cat = step_category_name(static_cast<StepCategory>(c));
        const double share = total_ns > 0 ? ns[c] / total_ns : 0;
        m.open("rect", {{"x", num(x, 2)},
                        {"y", num(y, 2)},
                        {"width", num(w, 2)},
                        {"height", num(h, 2)},
                        {"fill", kCategoryColour[c]},
                        {"data-category", cat},
                        {"data-ns", num(ns[c], 0)}});
        m.element("title",
                  label + ", " + cat + ": " + ms(ns[c]) + " (" + pct(share) + " of the step)");
        m.close("rect");
        const std::string text = pct(share);
        if (h >= 12 && w >= text_width(text) + 8)
          svg.text(kCategoryDarkText[c] ? "seg dark" : "seg", x + w / 2, y + h / 2 + 4, "middle",
                   text);
        x += w;
      }
      if (total_shown)
        svg.text(is_average ? "halo title" : "halo", x_of(total_ns) + 6, y + h / 2 + 4, "",
                 ms(total_ns));
      m.close("g").line();
    };
    // Every label_every-th step is named, and every outlier; the names next to an outlier give
    // way so that none overlaps.
    std::vector<char> labelled(n);
    for (std::size_t i = 0; i < n; ++i) labelled[i] = i % label_every == 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (!r.steps[i].outlier) continue;
      for (std::size_t j = i >= label_every ? i - label_every + 1 : 0; j < n && j < i + label_every;
           ++j)
        if (!r.steps[j].outlier) labelled[j] = 0;
      labelled[i] = 1;
    }
    for (std::size_t i = 0; i < n; ++i) {
      const auto& s = r.steps[i];
      std::array<double, kStepCategories> ns{};
      for (int c = 0; c < kStepCategories; ++c) ns[c] = static_cast<double>(s.category_ns[c]);
      const double y = T + row * static_cast<double>(i) + (row - bar) / 2;
      const std::string label = r.has_steps ? "#" + s.name : "whole trace";
      draw(s.name, label, labelled[i] != 0, s.outlier, y, bar, ns,
           static_cast<double>(s.total_ns()), row >= 14, false);
    }
    if (average_row) {
      const double y0 = T + row * static_cast<double>(n) + avg_gap / 2;
      svg.line("grid", 8, y0, W - 8, y0);
      m.line();
      std::array<double, kStepCategories> ns{};
      for (int c = 0; c < kStepCategories; ++c) ns[c] = r.average_ns[c];
      draw("average", "Average", true, false, y0 + avg_gap / 2 + (avg_row - 18) / 2, 18, ns,
           r.average_step_ns, true, true);
    }
    // Axes, not a frame: the totals' labels run past the last tick.
    m.empty("path",
            {{"class", "frame"}, {"d", SvgPath(1).move(L, T).v(T + rows_h).h(L + pw).str()}})
        .line();
    m.close("svg").line();
  }

  void breakdown_table() {
    m.open("table", {{"class", "breakdown"}}).line().open("thead").open("tr");
    head_cell("", "Category");
    head_cell("num", "Average per step");
    head_cell("num", "Share");
    if (r.spread_determined)
      for (const char* h : {"p50", "p90", "Min", "Max"}) head_cell("num", h);
    m.close("tr").close("thead").line().open("tbody").line();
    auto cells = [&](const Report::Spread& s) {
      if (!r.spread_determined) return;
      for (double v : {s.p50_ns, s.p90_ns, s.min_ns, s.max_ns}) cell("num", ms(v));
    };
    for (int c = 0; c < kStepCategories; ++c) {
      const double avg = r.average_ns[c];
      const char* name = step_category_name(static_cast<StepCategory>(c));
      m.open("tr", {{"data-category", name}}).open("td");
      swatch(kCategoryColour[c]);
      m.text(name).close("td");
      cell("num", ms(avg));
      cell("num", pct(r.average_step_ns > 0 ? avg / r.average_step_ns : 0));
      cells(r.category_spread[c]);
      m.close("tr").line();
    }
    m.open("tr", {{"data-category", "Total"}}).open("td").element("b", "Step").close("td");
    m.open("td", {{"class", "num"}}).element("b", ms(r.average_step_ns)).close("td");
    cell("num", "100.0%");
    cells(r.step_spread);
    m.close("tr").line();
    close_table();
    if (!r.spread_determined) {
      const std::string* why = undetermined_why("step_spread");
      para("small muted", "Spread (p50, p90, outliers) cannot be determined: " +
                              (why ? *why : std::string("fewer than three steps")) + ".");
    }
  }

  // ------------------------------------------------------------------ GPU utilization
  void utilization() {
    m.open("section", {{"id", "utilization"}}).line();
    m.element("h2", "GPU utilization over time").line();
    if (!r.has_gpu_data) {
      const Report::QualityItem* q = quality_item("no_gpu_data");
      std::string why = q ? q->message : "the trace has no kernels, copies or memsets";
      if (!why.empty() && why[0] >= 'a' && why[0] <= 'z') why[0] = static_cast<char>(why[0] - 32);
      m.open("div", {{"class", "box missing"}})
          .element("b", "No GPU data.")
          .text(" " + why +
                ". GPU utilization, the idle causes and the GPU findings cannot be determined.")
          .close("div")
          .line();
      m.close("section").line();
      return;
    }
    para("small muted",
         "Per device, the share of time some kernel ran (copies and memsets not counted), in "
         "equal time buckets from the first step's start to the last step's end: TensorBoard's "
         "GPU utilization, resolved in time.");
    for (const auto& d : r.devices) device_chart(d);
    device_table();
    hta();
    m.close("section").line();
  }

  // A legend entry drawn as a line of the given style.
  void legend_line(const std::string& style, const std::string& text) {
    m.open("span")
        .element("span", {{"class", "line"}, {"style", style}}, "")
        .text(text)
        .close("span");
  }

  void device_chart(const Report::Device& d) {
    m.element("h3", "GPU " + std::to_string(d.id) + (d.name.empty() ? "" : ": " + d.name)).line();
    const int64_t window = d.window_end_ns - d.window_start_ns;
    if (window <= 0 || d.utilization_series.empty()) {
      box("missing", std::string("No utilization over time: ") +
                         (window <= 0 ? "the steps' window is empty"
                                      : "ReportOptions::utilization_buckets is 0") +
                         ".");
      return;
    }
    const double thr = r.options.thresholds.low_gpu_utilization;
    m.open("div", {{"class", "legend"}}).open("span");
    m.element("span", {{"class", "swatch"}, {"style", "background:#3366cc;opacity:0.5"}}, "");
    m.text("kernel busy share per " +
           format_general(static_cast<double>(d.utilization_bucket_ns) / 1e3, 4) + " " + kMicro +
           "s bucket");
    m.close("span");
    legend_line("border-top-style:dashed",
                "average: " + pct(d.utilization) + " (TB's utilization)");
    legend_line("border-top:2px dotted #c62828",
                "TB's low-utilization threshold (" + pct(thr) + ")");
    legend_line("border-top:1px dashed #8a93a3", "step boundaries");
    m.close("div").line();
    constexpr double W = 1120, L = 66, R = 124, T = 26, B = 46, PH = 190;
    const double pw = W - L - R;
    const double H = T + PH + B;
    const double span = static_cast<double>(window);
    auto x_of = [&](int64_t ns) {
      return L + static_cast<double>(ns - d.window_start_ns) / span * pw;
    };
    auto y_of = [&](double u) { return T + PH - std::clamp(u, 0.0, 1.0) * PH; };

    Svg svg(m, 1);
    m.open("svg", {{"class", "chart"},
                   {"viewBox", "0 0 " + num(W, 0) + " " + num(H, 0)},
                   {"role", "img"},
                   {"data-device", std::to_string(d.id)},
                   {"data-buckets", std::to_string(d.utilization_series.size())}})
        .line();
    m.element("title", "GPU " + std::to_string(d.id) + " kernel busy share over time").line();
    for (int k = 0; k <= 4; ++k) {
      const double y = y_of(k * 0.25);
      svg.line("grid", L, y, L + pw, y);
      svg.text("axis", L - 8, y + 4, "end", std::to_string(k * 25));
      m.line();
    }
    const double span_ms = span / 1e6;
    const double tick = detail::nice_step(span_ms, 10);
    for (int k = 0; k * tick <= span_ms * (1 + 1e-9); ++k) {
      const double x = L + k * tick / span_ms * pw;
      svg.line("grid", x, T, x, T + PH);
      svg.text("axis", x, T + PH + 16, "middle", format_general(k * tick));
      m.line();
    }
    svg.text("axis", L + pw / 2, H - 6, "middle",
             r.has_steps ? "time since the first step's start (ms)"
                         : "time since the trace's first operator (ms)");
    m.line();
    svg.vertical_text("axis", 16, T + PH / 2, "kernel busy (%)");
    m.line();

    // The series as a step curve: each bucket's share holds across its bucket.
    SvgPath area(2), curve(2);
    area.move(L, y_of(0));
    const int64_t width = d.utilization_bucket_ns;
    for (std::size_t i = 0; i < d.utilization_series.size(); ++i) {
      const int64_t lo = d.window_start_ns + static_cast<int64_t>(i) * width;
      const int64_t hi = std::min(lo + width, d.window_end_ns);
      const double y = y_of(d.utilization_series[i]);
      area.v(y).h(x_of(hi));
      if (i == 0) {
        curve.move(x_of(lo), y);
      } else {
        curve.v(y);
      }
      curve.h(x_of(hi));
    }
    area.v(y_of(0)).close();
    m.empty("path", {{"class", "busy"}, {"d", area.str()}}).line();
    m.empty("path", {{"class", "busy-line"}, {"d", curve.str()}}).line();

    // Step boundaries, and step names where they fit.
    const std::size_t n = r.steps.size();
    double widest = 0;
    for (const auto& s : r.steps) widest = std::max(widest, text_width("#" + s.name));
    double narrowest = pw;
    for (const auto& s : r.steps)
      narrowest = std::min(narrowest, x_of(s.end_ns) - x_of(s.start_ns));
    const std::size_t label_every =
        n == 0
            ? 1
            : std::max<std::size_t>(
                  1, static_cast<std::size_t>(std::ceil((widest + 6) / std::max(narrowest, 1.0))));
    for (std::size_t i = 0; i < n; ++i) {
      const auto& s = r.steps[i];
      // With steps a few px wide, a boundary per step would grey the chart: labelled ones only.
      if (i > 0 && (narrowest >= 6 || i % label_every == 0)) {
        const double x = x_of(s.start_ns);
        svg.line("boundary", x, T, x, T + PH);
      }
      if (r.has_steps && i % label_every == 0)
        svg.text("axis", (x_of(s.start_ns) + x_of(s.end_ns)) / 2, T - 8, "middle", "#" + s.name);
    }
    m.line();

    // Average and threshold lines, labelled in the right margin (off the curve), pushed apart
    // when the two values are close.
    const double ya = y_of(d.utilization), yt = y_of(thr);
    double la = ya + 4, lt = yt + 4;
    if (std::fabs(la - lt) < 14) {
      const double mid = (la + lt) / 2;
      const bool avg_above = ya < yt || (ya == yt && d.utilization >= thr);
      la = mid + (avg_above ? -7 : 7);
      lt = mid + (avg_above ? 7 : -7);
    }
    svg.line("threshold", L, yt, L + pw, yt);
    svg.line("avg", L, ya, L + pw, ya);
    m.open("text", {svg.at("x", L + pw + 8), svg.at("y", lt), {"style", "fill:#c62828"}})
        .text("threshold " + pct(thr))
        .close("text")
        .line();
    svg.text("title", L + pw + 8, la, "", "average " + pct(d.utilization));
    m.line();

    // One hover target per bucket: its time and share as a tooltip.
    for (std::size_t i = 0; i < d.utilization_series.size(); ++i) {
      const int64_t lo = d.window_start_ns + static_cast<int64_t>(i) * width;
      const int64_t hi = std::min(lo + width, d.window_end_ns);
      m.open("rect", {{"class", "hover"},
                      {"x", num(x_of(lo), 2)},
                      {"y", num(T)},
                      {"width", num(x_of(hi) - x_of(lo), 2)},
                      {"height", num(PH)}});
      m.element("title", format_fixed(static_cast<double>(lo - d.window_start_ns) / 1e6, 3) +
                             " to " +
                             format_fixed(static_cast<double>(hi - d.window_start_ns) / 1e6, 3) +
                             " ms: " + pct(d.utilization_series[i]) + " kernel busy");
      m.close("rect");
    }
    m.line();
    svg.rect("frame", L, T, pw, PH);
    m.line();
    m.close("svg").line();
  }

  void device_table() {
    auto opt_pct = [](const std::optional<double>& v) { return v ? pct(*v) : std::string("n/a"); };
    open_table({{"class", "devices"}},
               {"Device", "=Utilization (TB)", "=SM efficiency (TB, est.)",
                "=Achieved occupancy (TB, est.)", "=Idle in steps, per step",
                "=Tensor Core kernels", "=Memory peak", "=Launch queue (HTA)"});
    for (const auto& d : r.devices) {
      std::string memory = "n/a";
      if (d.peak_allocated_bytes) {
        memory = format_fixed(static_cast<double>(*d.peak_allocated_bytes) / (1 << 30), 2) + " GiB";
        if (d.total_memory_bytes)
          memory +=
              " of " + format_fixed(static_cast<double>(*d.total_memory_bytes) / (1 << 30), 2);
      }
      std::string tc = opt_pct(d.tensor_core_share);
      if (d.tensor_core_share_sm90 && d.tensor_core_share_sm90 != d.tensor_core_share)
        tc += " (" + pct(*d.tensor_core_share_sm90) + " with sm90+ names)";
      m.open("tr", {{"data-device", std::to_string(d.id)}});
      cell("nowrap", "GPU " + std::to_string(d.id) + (d.name.empty() ? "" : " " + d.name));
      cell("num", pct(d.utilization));
      cell("num", opt_pct(d.sm_efficiency));
      cell("num", d.achieved_occupancy ? format_fixed(*d.achieved_occupancy, 1) + "%"
                                       : std::string("n/a"));
      cell("num", r.idle_causes_determined
                      ? ms(static_cast<double>(d.idle_in_steps_ns) / steps_count())
                      : std::string("n/a"));
      cell("num", tc);
      cell("num", memory);
      cell("num",
           "up to " + i64(d.max_queue_length) +
               (d.full_queue_ns > 0 ? ", full " + ms(static_cast<double>(d.full_queue_ns)) : ""));
      m.close("tr").line();
    }
    close_table();
  }

  void hta() {
    if (!r.temporal.determined) return;
    m.element("h3", "Holistic Trace Analysis' view").line();
    para("small muted", r.hta_window + ".");
    const double span = static_cast<double>(std::max<int64_t>(r.temporal.span_ns, 1));
    open_table({{"class", "hta compact"}}, {"Temporal breakdown", "=Time", "=Share of the span"});
    auto row = [&](const char* what, int64_t ns) {
      m.open("tr").element("td", what);
      cell("num", ms(static_cast<double>(ns)));
      cell("num", pct(static_cast<double>(ns) / span));
      m.close("tr").line();
    };
    row("Idle", r.temporal.idle_ns);
    row("Compute", r.temporal.compute_ns);
    row("Non-compute (copies, memsets, syncs, communication)", r.temporal.non_compute_ns);
    row("Span: first GPU event to last", r.temporal.span_ns);
    close_table();
    if (r.stream_idle.empty()) return;
    open_table({{"class", "streams compact"}},
               {"Stream", "=Host wait", "=Kernel wait", "=Other", "=Activities"});
    for (const auto& s : r.stream_idle) {
      m.open("tr").element("td", "GPU " + std::to_string(s.device) + " stream " + i64(s.stream));
      cell("num", ms(static_cast<double>(s.host_wait_ns)));
      cell("num", ms(static_cast<double>(s.kernel_wait_ns)));
      cell("num", ms(static_cast<double>(s.other_ns)));
      cell("num", i64(s.activities));
      m.close("tr").line();
    }
    close_table();
    para("small muted",
         "Host wait: the launch came after the stream had drained; kernel wait: a gap shorter "
         "than " +
             format_general(static_cast<double>(r.options.thresholds.kernel_wait_ns) / 1e3) + " " +
             kMicro + "s between kernels; other: any longer gap (e.g. waiting on another stream).");
  }

  // ------------------------------------------------------------------ idle causes
  void idle() {
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

  // ------------------------------------------------------------------ findings
  void findings() {
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

  // ------------------------------------------------------------------ tables
  void tables() {
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

  void name_cell(const std::string& name) {
    m.open("td", {{"class", "name"}});
    m.element("div", {{"class", "clamp"}, {"title", name}}, name).close("td");
  }

  // The column the rows are sorted by is bold.
  void ops_table(const char* title, const char* id, const std::vector<Report::OpRow>& rows,
                 bool by_device) {
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

  void kernels_table() {
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

  // ------------------------------------------------------------------ footer
  void footer() {
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
};

}  // namespace

std::string Report::to_html() const {
  return Page(*this).build();
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
