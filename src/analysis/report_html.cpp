// Report::to_html(): the report as one self-contained page that answers "why is my step slow".
// No scripts, fonts, stylesheets or images from anywhere: inline CSS and SVG only, so the page
// opens offline and from an archived CI artifact. Written as well-formed XML (XHTML syntax,
// numeric character references only) so an XML parser can check it. Every number goes through
// format_fixed / format_general (the process locale may use a decimal comma) and every text
// through xml_escape.
#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "ptprof/report.h"
#include "trace/chrome_trace.h"
#include "trace/json_writer.h"
#include "trace/stacks_export.h"

namespace ptprof {

namespace {

using detail::format_fixed;
using detail::format_general;

std::string esc(std::string_view s) {
  return detail::xml_escape(s);
}
std::string num(double v, int decimals = 1) {
  return format_fixed(v, decimals);
}
std::string ms(double ns) {
  return format_fixed(ns / 1e6, 3) + " ms";
}
std::string pct(double share) {
  return format_fixed(share * 100, 1) + "%";
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
// Category names as CSS class suffixes ("CPU Exec" has a space).
constexpr const char* kCategoryClass[kStepCategories] = {
    "kernel", "memcpy", "memset", "communication", "runtime", "dataloader", "cpuexec", "other"};

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

// 1, 2 or 5 times a power of ten, giving about `ticks` intervals over `range` (> 0).
double nice_step(double range, int ticks) {
  const double raw = range / ticks;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double n = raw / mag;
  return (n < 1.5 ? 1 : n < 3.5 ? 2 : n < 7.5 ? 5 : 10) * mag;
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

constexpr const char* kStyle = R"(
*{box-sizing:border-box}
body{margin:0;background:#eceef2;color:#1d2330;font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,"Liberation Sans",sans-serif}
main{max-width:1180px;margin:0 auto;padding:26px 30px 40px;background:#fff;min-height:100vh}
h1{font-size:26px;line-height:1.25;margin:0 0 6px}
h1 small{font-size:15px;font-weight:normal;color:#5d6675;margin-left:8px}
h2{font-size:20px;margin:34px 0 10px;padding-bottom:6px;border-bottom:2px solid #dde1e7}
h3{font-size:16px;margin:22px 0 6px}
p{margin:6px 0}
code,.mono{font-family:ui-monospace,"DejaVu Sans Mono","Liberation Mono",Menlo,Consolas,monospace;font-size:0.87em}
.muted{color:#5d6675}
.small{font-size:13px}
.identity{margin:4px 0 0;color:#3d4553;font-size:14px}
.identity span{margin-right:18px;white-space:nowrap}
nav{margin:14px 0 0;font-size:14px}
nav a{color:#3366cc;text-decoration:none;margin-right:16px}
.tiles{display:grid;grid-template-columns:repeat(4,minmax(0,1fr));gap:12px;margin:18px 0 4px}
.tile{background:#f5f7fa;border:1px solid #dde1e7;border-radius:8px;padding:10px 14px}
.tile .label{font-size:12px;text-transform:uppercase;letter-spacing:0.04em;color:#5d6675}
.tile .value{font-size:22px;font-weight:600;font-variant-numeric:tabular-nums;line-height:1.3}
.tile .sub{font-size:13px;color:#3d4553}
.tile.answer{grid-column:span 4;background:#fff7ed;border-color:#f3c48b}
.tile.answer .value{font-size:17px}
.tile.answer.none{background:#f5f7fa;border-color:#dde1e7}
.box{border-radius:8px;padding:10px 14px;margin:8px 0}
.box.ok{background:#eef8ee;border:1px solid #b9dcb9}
.box.warn{background:#fff7ed;border:1px solid #f3c48b}
.box.missing{background:#f5f7fa;border:1px solid #dde1e7;color:#3d4553}
ul.quality{margin:6px 0;padding-left:22px}
ul.quality li{margin:4px 0}
.affects{font-size:12.5px;color:#5d6675}
table{border-collapse:collapse;width:100%;font-size:13.5px;margin:8px 0 6px}
th,td{padding:5px 8px;border-bottom:1px solid #e4e7ec;text-align:left;vertical-align:top}
th{font-weight:600;color:#3d4553;background:#f5f7fa;white-space:nowrap}
table.devices th{white-space:normal}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
td.num{white-space:nowrap}
td.sorted{font-weight:600}
table.ops tr > :first-child,table.kernels tr > :first-child{width:36px}
td.what{word-break:break-word}
table.compact{width:auto;min-width:55%}
.nowrap{white-space:nowrap}
td.name{font-family:ui-monospace,"DejaVu Sans Mono","Liberation Mono",Menlo,Consolas,monospace;font-size:12px;overflow-wrap:anywhere}
.clamp{display:-webkit-box;-webkit-line-clamp:2;-webkit-box-orient:vertical;overflow:hidden}
td.bar{width:22%}
.meter{height:10px;background:#e9ecf1;border-radius:5px;overflow:hidden;margin-top:5px}
.meter div{height:100%;background:#3366cc;border-radius:5px}
.swatch{display:inline-block;width:12px;height:12px;border-radius:2px;vertical-align:-1px;margin-right:6px}
.legend{display:flex;flex-wrap:wrap;gap:4px 18px;font-size:13px;margin:6px 0 2px}
.legend .line{display:inline-block;width:22px;height:0;vertical-align:4px;margin-right:6px;border-top:2px solid #1d2330}
svg.chart{display:block;width:100%;height:auto;margin:4px 0}
svg text{font-size:12px;fill:#1d2330}
svg text.axis{fill:#3d4553}
svg text.title{font-weight:600}
svg text.outlier{fill:#c62828;font-weight:600}
svg text.seg{font-size:11px;fill:#fff;font-weight:600}
svg text.seg.dark{fill:#1d2330}
svg text.halo{paint-order:stroke;stroke:#fff;stroke-width:3px;stroke-linejoin:round}
svg .grid{stroke:#e4e7ec;stroke-width:1}
svg .frame{fill:none;stroke:#8a93a3;stroke-width:1}
svg .busy{fill:#3366cc;fill-opacity:0.22;stroke:none}
svg .busy-line{fill:none;stroke:#3366cc;stroke-width:1.5}
svg .avg{stroke:#1d2330;stroke-width:1.5;stroke-dasharray:6 4}
svg .threshold{stroke:#c62828;stroke-width:1.2;stroke-dasharray:2 3}
svg .boundary{stroke:#8a93a3;stroke-width:1;stroke-dasharray:3 3}
svg .hover{fill:transparent}
svg .hover:hover{fill:#1d2330;fill-opacity:0.06}
.finding{border:1px solid #dde1e7;border-left:5px solid #dc3912;border-radius:6px;padding:10px 16px 12px;margin:14px 0}
.finding.nosaving{border-left-color:#8a93a3}
.finding h3{margin:0;font-size:16px;display:flex;gap:10px;align-items:baseline}
.finding .rank{color:#5d6675;font-variant-numeric:tabular-nums}
.badge{font-size:11px;font-weight:600;border-radius:10px;padding:1px 8px;white-space:nowrap;background:#e8eefb;color:#2a4f9b}
.badge.tensorboard{background:#fdeee6;color:#a34415}
.saving{display:flex;gap:14px;align-items:center;margin:8px 0 4px}
.saving .meter{flex:0 0 260px;margin:0}
.saving .meter div{background:#dc3912}
.recommendation{background:#f5f7fa;border-radius:6px;padding:8px 12px;margin-top:8px}
details{margin:8px 0}
summary{cursor:pointer;color:#3366cc}
footer{margin-top:36px;padding-top:10px;border-top:1px solid #dde1e7;font-size:13px;color:#5d6675}
)";

struct Page {
  const Report& r;
  std::string h;

  explicit Page(const Report& report) : r(report) {}

  void add(std::string_view s) { h.append(s.data(), s.size()); }

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

  // ------------------------------------------------------------------ header
  void header() {
    add("<header>\n<h1>Why is the step slow?<small>ptprof report</small></h1>\n");
    add("<p class=\"identity\">");
    const Report::Source& s = r.source;
    if (!s.worker_name.empty()) add("<span>worker <b>" + esc(s.worker_name) + "</b></span>");
    if (!s.process_name.empty() || s.pid != 0) {
      add("<span>process <b>" + esc(s.process_name.empty() ? "?" : s.process_name) + "</b>");
      if (s.pid != 0) add(" (pid " + i64(s.pid) + ")");
      add("</span>");
    }
    if (s.window_end_ns > s.window_start_ns && s.window_start_ns > 0) {
      add("<span>window #" + i64(s.window_index) + ": " + esc(utc_time(s.window_start_ns)) + ", " +
          ms(static_cast<double>(s.window_end_ns - s.window_start_ns)) + "</span>");
    }
    add("<span>" + i64(s.events) + " events</span>");
    for (const auto& d : r.devices)
      add("<span>GPU " + std::to_string(d.id) + (d.name.empty() ? "" : ": " + esc(d.name)) +
          "</span>");
    add("</p>\n");
    add("<nav><a href=\"#quality\">Trace quality</a><a href=\"#breakdown\">Step time</a>"
        "<a href=\"#utilization\">GPU utilization</a><a href=\"#idle\">GPU idle causes</a>"
        "<a href=\"#findings\">Findings</a><a href=\"#tables\">Tables</a></nav>\n");
    tiles();
    add("</header>\n");
  }

  void tiles() {
    add("<div class=\"tiles\">\n");
    auto tile = [&](const std::string& cls, const std::string& label, const std::string& value,
                    const std::string& sub) {
      add("<div class=\"tile" + cls + "\"><div class=\"label\">" + label +
          "</div><div class=\"value\">" + value + "</div><div class=\"sub\">" + sub +
          "</div></div>\n");
    };
    if (!r.breakdown_determined) {
      tile("", "Average step", "&#8211;", "no step could be analysed");
    } else if (r.has_steps) {
      tile("", "Average step", ms(r.average_step_ns),
           i64(static_cast<int64_t>(r.steps.size())) + " steps, #" + esc(r.steps.front().name) +
               " to #" + esc(r.steps.back().name));
    } else {
      tile("", "Whole trace", ms(r.average_step_ns), "no ProfilerStep# ranges: one step");
    }
    if (!r.has_gpu_data || r.devices.empty()) {
      tile("", "GPU utilization", "&#8211;", "no GPU data");
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
      tile("", "GPU idle in steps", "&#8211;",
           r.has_gpu_data ? "no step to analyse" : "no GPU data");
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
      tile(" answer", "Top finding", esc(f.title), sub);
    } else {
      tile(" answer none", "Top finding", "none",
           r.breakdown_determined ? "none of the rules fired" : "no step to analyse");
    }
    add("</div>\n");
  }

  // ------------------------------------------------------------------ trace quality
  void quality() {
    add("<section id=\"quality\">\n<h2>Trace quality</h2>\n");
    if (r.quality.empty() && r.undetermined.empty()) {
      add("<div class=\"box ok\">Nothing missing or suspect: every number below rests on "
          "complete data.</div>\n");
    }
    if (!r.quality.empty()) {
      add("<div class=\"box warn\"><b>What the numbers below rest on</b>\n<ul "
          "class=\"quality\">\n");
      for (const auto& q : r.quality) {
        add("<li data-id=\"" + esc(q.id) + "\">" + esc(q.message));
        if (!q.affects.empty()) {
          std::string a;
          for (const auto& s : q.affects) a += (a.empty() ? "" : ", ") + s;
          add(" <span class=\"affects\">(limits: " + esc(a) + ")</span>");
        }
        add("</li>\n");
      }
      add("</ul></div>\n");
    }
    if (!r.undetermined.empty()) {
      add("<div class=\"box missing\"><b>Cannot be determined</b>\n<ul class=\"quality\">\n");
      for (const auto& [what, why] : r.undetermined)
        add("<li data-what=\"" + esc(what) + "\"><code>" + esc(what) + "</code>: " + esc(why) +
            "</li>\n");
      add("</ul></div>\n");
    }
    add("</section>\n");
  }

  // ------------------------------------------------------------------ step breakdown
  void legend_categories() {
    add("<div class=\"legend\">");
    for (int c = 0; c < kStepCategories; ++c)
      add(std::string("<span><span class=\"swatch\" style=\"background:") + kCategoryColour[c] +
          "\"></span>" + esc(step_category_name(static_cast<StepCategory>(c))) + "</span>");
    add("</div>\n");
  }

  void breakdown() {
    add("<section id=\"breakdown\">\n<h2>Step time</h2>\n");
    if (!r.breakdown_determined) {
      const std::string* why = undetermined_why("breakdown");
      add("<div class=\"box missing\">The step-time breakdown cannot be determined: " +
          esc(why ? *why : "no step") + ".</div>\n</section>\n");
      return;
    }
    add("<p class=\"small muted\">TensorBoard's breakdown: each moment of a step goes to the first "
        "category active then, in this order (Kernel first); the categories sum exactly to the "
        "step. Steps are extended to the end of the GPU work they launched.</p>\n");
    legend_categories();
    breakdown_chart();
    breakdown_table();
    std::string outliers;
    for (const auto& s : r.steps)
      if (s.outlier) outliers += (outliers.empty() ? "#" : ", #") + s.name;
    if (r.spread_determined) {
      add("<p class=\"small\">" +
          (outliers.empty() ? std::string("No outlier step")
                            : "Outlier steps (marked red): " + esc(outliers)) +
          " (a step over " + format_general(r.options.thresholds.step_outlier_ratio) +
          " times the median step, or under its inverse).</p>\n");
    }
    if (!r.trimmed_steps.empty()) {
      std::string names;
      for (const auto& t : r.trimmed_steps) names += (names.empty() ? "#" : ", #") + t;
      add("<p class=\"small\">Left out, as TensorBoard does (tail trimming): " + esc(names) +
          ".</p>\n");
    }
    add("</section>\n");
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
    const double tick = nice_step(max_ms, 8);
    const double axis_ms = std::ceil(max_ms / tick * (1 - 1e-9)) * tick;
    auto x_of = [&](double ns) { return L + ns / 1e6 / axis_ms * pw; };

    add("<svg class=\"chart\" viewBox=\"0 0 " + num(W, 0) + " " + num(H, 0) +
        "\" role=\"img\" aria-label=\"step-time breakdown per step\">\n");
    add("<title>Step-time breakdown per step (TensorBoard's categories)</title>\n");
    for (int k = 0; k * tick <= axis_ms * (1 + 1e-9); ++k) {
      const double x = L + k * tick / axis_ms * pw;
      add("<line class=\"grid\" x1=\"" + num(x) + "\" y1=\"" + num(T) + "\" x2=\"" + num(x) +
          "\" y2=\"" + num(T + rows_h) + "\"/>");
      add("<text class=\"axis\" x=\"" + num(x) + "\" y=\"" + num(T + rows_h + 16) +
          "\" text-anchor=\"middle\">" + format_general(k * tick) + "</text>\n");
    }
    add("<text class=\"axis\" x=\"" + num(L + pw / 2) + "\" y=\"" + num(H - 6) +
        "\" text-anchor=\"middle\">time (ms)</text>\n");

    auto draw = [&](const std::string& name, const std::string& label, bool label_shown,
                    bool outlier, double y, double h, const std::array<double, kStepCategories>& ns,
                    double total_ns, bool total_shown, bool is_average) {
      add("<g class=\"" + std::string(is_average ? "average" : "step") + "\" data-step=\"" +
          esc(name) + "\" data-total-ns=\"" + num(total_ns, 0) + "\">");
      if (label_shown)
        add("<text class=\"" +
            std::string(outlier      ? "outlier"
                        : is_average ? "title"
                                     : "axis") +
            "\" x=\"" + num(L - 8) + "\" y=\"" + num(y + h / 2 + 4) + "\" text-anchor=\"end\">" +
            esc(label) + "</text>");
      double x = L;
      for (int c = 0; c < kStepCategories; ++c) {
        if (ns[c] <= 0) continue;
        const double w = ns[c] / 1e6 / axis_ms * pw;
        const std::string cat = step_category_name(static_cast<StepCategory>(c));
        const double share = total_ns > 0 ? ns[c] / total_ns : 0;
        add("<rect x=\"" + num(x, 2) + "\" y=\"" + num(y, 2) + "\" width=\"" + num(w, 2) +
            "\" height=\"" + num(h, 2) + "\" fill=\"" + kCategoryColour[c] + "\" data-category=\"" +
            esc(cat) + "\" data-ns=\"" + num(ns[c], 0) + "\"><title>" + esc(label) + ", " +
            esc(cat) + ": " + ms(ns[c]) + " (" + pct(share) + " of the step)</title></rect>");
        const std::string text = pct(share);
        if (h >= 12 && w >= text_width(text) + 8) {
          add("<text class=\"seg" + std::string(kCategoryDarkText[c] ? " dark" : "") + "\" x=\"" +
              num(x + w / 2) + "\" y=\"" + num(y + h / 2 + 4) + "\" text-anchor=\"middle\">" +
              text + "</text>");
        }
        x += w;
      }
      if (total_shown)
        add("<text class=\"halo" + std::string(is_average ? " title" : "") + "\" x=\"" +
            num(x_of(total_ns) + 6) + "\" y=\"" + num(y + h / 2 + 4) + "\">" + ms(total_ns) +
            "</text>");
      add("</g>\n");
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
      add("<line class=\"grid\" x1=\"" + num(8) + "\" y1=\"" + num(y0) + "\" x2=\"" + num(W - 8) +
          "\" y2=\"" + num(y0) + "\"/>\n");
      std::array<double, kStepCategories> ns{};
      for (int c = 0; c < kStepCategories; ++c) ns[c] = r.average_ns[c];
      draw("average", "Average", true, false, y0 + avg_gap / 2 + (avg_row - 18) / 2, 18, ns,
           r.average_step_ns, true, true);
    }
    // Axes, not a frame: the totals' labels run past the last tick.
    add("<path class=\"frame\" d=\"M" + num(L) + "," + num(T) + " V" + num(T + rows_h) + " H" +
        num(L + pw) + "\"/>\n</svg>\n");
  }

  void breakdown_table() {
    add("<table class=\"breakdown\">\n<thead><tr><th>Category</th><th class=\"num\">Average per "
        "step</th><th class=\"num\">Share</th>");
    if (r.spread_determined)
      add("<th class=\"num\">p50</th><th class=\"num\">p90</th><th class=\"num\">Min</th><th "
          "class=\"num\">Max</th>");
    add("</tr></thead>\n<tbody>\n");
    auto cells = [&](const Report::Spread& s) {
      if (!r.spread_determined) return;
      add("<td class=\"num\">" + ms(s.p50_ns) + "</td><td class=\"num\">" + ms(s.p90_ns) +
          "</td><td class=\"num\">" + ms(s.min_ns) + "</td><td class=\"num\">" + ms(s.max_ns) +
          "</td>");
    };
    for (int c = 0; c < kStepCategories; ++c) {
      const double avg = r.average_ns[c];
      add(std::string("<tr data-category=\"") +
          esc(step_category_name(static_cast<StepCategory>(c))) +
          "\"><td><span class=\"swatch\" style=\"background:" + kCategoryColour[c] + "\"></span>" +
          esc(step_category_name(static_cast<StepCategory>(c))) + "</td><td class=\"num\">" +
          ms(avg) + "</td><td class=\"num\">" +
          pct(r.average_step_ns > 0 ? avg / r.average_step_ns : 0) + "</td>");
      cells(r.category_spread[c]);
      add("</tr>\n");
    }
    add("<tr data-category=\"Total\"><td><b>Step</b></td><td class=\"num\"><b>" +
        ms(r.average_step_ns) + "</b></td><td class=\"num\">100.0%</td>");
    cells(r.step_spread);
    add("</tr>\n</tbody></table>\n");
    if (!r.spread_determined) {
      const std::string* why = undetermined_why("step_spread");
      add("<p class=\"small muted\">Spread (p50, p90, outliers) cannot be determined: " +
          esc(why ? *why : "fewer than three steps") + ".</p>\n");
    }
  }

  // ------------------------------------------------------------------ GPU utilization
  void utilization() {
    add("<section id=\"utilization\">\n<h2>GPU utilization over time</h2>\n");
    if (!r.has_gpu_data) {
      const Report::QualityItem* q = quality_item("no_gpu_data");
      std::string why = q ? q->message : "the trace has no kernels, copies or memsets";
      if (!why.empty() && why[0] >= 'a' && why[0] <= 'z') why[0] = static_cast<char>(why[0] - 32);
      add("<div class=\"box missing\"><b>No GPU data.</b> " + esc(why) +
          ". GPU utilization, the idle causes and the GPU findings cannot be determined.</div>\n"
          "</section>\n");
      return;
    }
    add("<p class=\"small muted\">Per device, the share of time some kernel ran (copies and "
        "memsets not counted), in equal time buckets from the first step's start to the last "
        "step's end: TensorBoard's GPU utilization, resolved in time.</p>\n");
    for (const auto& d : r.devices) device_chart(d);
    device_table();
    hta();
    add("</section>\n");
  }

  void device_chart(const Report::Device& d) {
    add("<h3>GPU " + std::to_string(d.id) + (d.name.empty() ? "" : ": " + esc(d.name)) + "</h3>\n");
    const int64_t window = d.window_end_ns - d.window_start_ns;
    if (window <= 0 || d.utilization_series.empty()) {
      add("<div class=\"box missing\">No utilization over time: " +
          std::string(window <= 0 ? "the steps' window is empty"
                                  : "ReportOptions::utilization_buckets is 0") +
          ".</div>\n");
      return;
    }
    const double thr = r.options.thresholds.low_gpu_utilization;
    add("<div class=\"legend\"><span><span class=\"swatch\" "
        "style=\"background:#3366cc;opacity:0.5\">"
        "</span>kernel busy share per " +
        format_general(static_cast<double>(d.utilization_bucket_ns) / 1e3, 4) +
        " &#181;s bucket</span><span><span class=\"line\" style=\"border-top-style:dashed\"></span>"
        "average: " +
        pct(d.utilization) +
        " (TB's utilization)</span><span><span class=\"line\" style=\"border-top:2px dotted "
        "#c62828\"></span>TB's low-utilization threshold (" +
        pct(thr) +
        ")</span><span><span class=\"line\" style=\"border-top:1px dashed #8a93a3\"></span>step "
        "boundaries</span></div>\n");
    constexpr double W = 1120, L = 66, R = 124, T = 26, B = 46, PH = 190;
    const double pw = W - L - R;
    const double H = T + PH + B;
    const double span = static_cast<double>(window);
    auto x_of = [&](int64_t ns) {
      return L + static_cast<double>(ns - d.window_start_ns) / span * pw;
    };
    auto y_of = [&](double u) { return T + PH - std::clamp(u, 0.0, 1.0) * PH; };

    add("<svg class=\"chart\" viewBox=\"0 0 " + num(W, 0) + " " + num(H, 0) +
        "\" role=\"img\" data-device=\"" + std::to_string(d.id) + "\" data-buckets=\"" +
        std::to_string(d.utilization_series.size()) + "\">\n");
    add("<title>GPU " + std::to_string(d.id) + " kernel busy share over time</title>\n");
    for (int k = 0; k <= 4; ++k) {
      const double y = y_of(k * 0.25);
      add("<line class=\"grid\" x1=\"" + num(L) + "\" y1=\"" + num(y) + "\" x2=\"" + num(L + pw) +
          "\" y2=\"" + num(y) + "\"/><text class=\"axis\" x=\"" + num(L - 8) + "\" y=\"" +
          num(y + 4) + "\" text-anchor=\"end\">" + std::to_string(k * 25) + "</text>\n");
    }
    const double span_ms = span / 1e6;
    const double tick = nice_step(span_ms, 10);
    for (int k = 0; k * tick <= span_ms * (1 + 1e-9); ++k) {
      const double x = L + k * tick / span_ms * pw;
      add("<line class=\"grid\" x1=\"" + num(x) + "\" y1=\"" + num(T) + "\" x2=\"" + num(x) +
          "\" y2=\"" + num(T + PH) + "\"/><text class=\"axis\" x=\"" + num(x) + "\" y=\"" +
          num(T + PH + 16) + "\" text-anchor=\"middle\">" + format_general(k * tick) + "</text>\n");
    }
    add("<text class=\"axis\" x=\"" + num(L + pw / 2) + "\" y=\"" + num(H - 6) +
        "\" text-anchor=\"middle\">" +
        (r.has_steps ? "time since the first step's start (ms)"
                     : "time since the trace's first operator (ms)") +
        "</text>\n");
    add("<text class=\"axis\" x=\"16\" y=\"" + num(T + PH / 2) +
        "\" text-anchor=\"middle\" transform=\"rotate(-90 16 " + num(T + PH / 2) +
        ")\">kernel busy (%)</text>\n");

    // The series as a step curve: each bucket's share holds across its bucket.
    std::string area = "M" + num(L, 2) + "," + num(y_of(0), 2);
    std::string line;
    const int64_t width = d.utilization_bucket_ns;
    for (std::size_t i = 0; i < d.utilization_series.size(); ++i) {
      const int64_t lo = d.window_start_ns + static_cast<int64_t>(i) * width;
      const int64_t hi = std::min(lo + width, d.window_end_ns);
      const std::string y = num(y_of(d.utilization_series[i]), 2);
      const std::string x0 = num(x_of(lo), 2), x1 = num(x_of(hi), 2);
      area += " V" + y + " H" + x1;
      line += (i == 0 ? "M" + x0 + "," + y : " V" + y) + " H" + x1;
    }
    area += " V" + num(y_of(0), 2) + " Z";
    add("<path class=\"busy\" d=\"" + area + "\"/>\n<path class=\"busy-line\" d=\"" + line +
        "\"/>\n");

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
        add("<line class=\"boundary\" x1=\"" + num(x) + "\" y1=\"" + num(T) + "\" x2=\"" + num(x) +
            "\" y2=\"" + num(T + PH) + "\"/>");
      }
      if (r.has_steps && i % label_every == 0)
        add("<text class=\"axis\" x=\"" + num((x_of(s.start_ns) + x_of(s.end_ns)) / 2) + "\" y=\"" +
            num(T - 8) + "\" text-anchor=\"middle\">#" + esc(s.name) + "</text>");
    }
    add("\n");

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
    add("<line class=\"threshold\" x1=\"" + num(L) + "\" y1=\"" + num(yt) + "\" x2=\"" +
        num(L + pw) + "\" y2=\"" + num(yt) + "\"/>");
    add("<line class=\"avg\" x1=\"" + num(L) + "\" y1=\"" + num(ya) + "\" x2=\"" + num(L + pw) +
        "\" y2=\"" + num(ya) + "\"/>");
    add("<text x=\"" + num(L + pw + 8) + "\" y=\"" + num(lt) +
        "\" style=\"fill:#c62828\">threshold " + pct(thr) + "</text>\n");
    add("<text class=\"title\" x=\"" + num(L + pw + 8) + "\" y=\"" + num(la) + "\">average " +
        pct(d.utilization) + "</text>\n");

    // One hover target per bucket: its time and share as a tooltip.
    for (std::size_t i = 0; i < d.utilization_series.size(); ++i) {
      const int64_t lo = d.window_start_ns + static_cast<int64_t>(i) * width;
      const int64_t hi = std::min(lo + width, d.window_end_ns);
      add("<rect class=\"hover\" x=\"" + num(x_of(lo), 2) + "\" y=\"" + num(T) + "\" width=\"" +
          num(x_of(hi) - x_of(lo), 2) + "\" height=\"" + num(PH) + "\"><title>" +
          format_fixed(static_cast<double>(lo - d.window_start_ns) / 1e6, 3) + " to " +
          format_fixed(static_cast<double>(hi - d.window_start_ns) / 1e6, 3) +
          " ms: " + pct(d.utilization_series[i]) + " kernel busy</title></rect>");
    }
    add("\n<rect class=\"frame\" x=\"" + num(L) + "\" y=\"" + num(T) + "\" width=\"" + num(pw) +
        "\" height=\"" + num(PH) + "\"/>\n</svg>\n");
  }

  void device_table() {
    auto opt_pct = [](const std::optional<double>& v) { return v ? pct(*v) : std::string("n/a"); };
    add("<table class=\"devices\">\n<thead><tr><th>Device</th><th class=\"num\">Utilization "
        "(TB)</th><th class=\"num\">SM efficiency (TB, est.)</th><th class=\"num\">Achieved "
        "occupancy (TB, est.)</th><th class=\"num\">Idle in steps, per step</th><th "
        "class=\"num\">Tensor Core kernels</th><th class=\"num\">Memory peak</th><th "
        "class=\"num\">Launch queue (HTA)</th></tr></thead>\n<tbody>\n");
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
      add("<tr data-device=\"" + std::to_string(d.id) + "\"><td class=\"nowrap\">GPU " +
          std::to_string(d.id) + (d.name.empty() ? "" : " " + esc(d.name)) +
          "</td><td class=\"num\">" + pct(d.utilization) + "</td><td class=\"num\">" +
          opt_pct(d.sm_efficiency) + "</td><td class=\"num\">" +
          (d.achieved_occupancy ? format_fixed(*d.achieved_occupancy, 1) + "%"
                                : std::string("n/a")) +
          "</td><td class=\"num\">" +
          (r.idle_causes_determined ? ms(static_cast<double>(d.idle_in_steps_ns) / steps_count())
                                    : std::string("n/a")) +
          "</td><td class=\"num\">" + tc + "</td><td class=\"num\">" + memory +
          "</td><td class=\"num\">up to " + i64(d.max_queue_length) +
          (d.full_queue_ns > 0 ? ", full " + ms(static_cast<double>(d.full_queue_ns)) : "") +
          "</td></tr>\n");
    }
    add("</tbody></table>\n");
  }

  void hta() {
    if (!r.temporal.determined) return;
    add("<h3>Holistic Trace Analysis' view</h3>\n<p class=\"small muted\">" + esc(r.hta_window) +
        ".</p>\n");
    const double span = static_cast<double>(std::max<int64_t>(r.temporal.span_ns, 1));
    add("<table class=\"hta compact\">\n<thead><tr><th>Temporal breakdown</th><th "
        "class=\"num\">Time</th><th class=\"num\">Share of the span</th></tr></thead>\n<tbody>\n");
    auto row = [&](const char* what, int64_t ns) {
      add(std::string("<tr><td>") + what + "</td><td class=\"num\">" + ms(static_cast<double>(ns)) +
          "</td><td class=\"num\">" + pct(static_cast<double>(ns) / span) + "</td></tr>\n");
    };
    row("Idle", r.temporal.idle_ns);
    row("Compute", r.temporal.compute_ns);
    row("Non-compute (copies, memsets, syncs, communication)", r.temporal.non_compute_ns);
    row("Span: first GPU event to last", r.temporal.span_ns);
    add("</tbody></table>\n");
    if (r.stream_idle.empty()) return;
    add("<table class=\"streams compact\">\n<thead><tr><th>Stream</th><th class=\"num\">Host "
        "wait</th><th "
        "class=\"num\">Kernel wait</th><th class=\"num\">Other</th><th "
        "class=\"num\">Activities</th></tr></thead>\n<tbody>\n");
    for (const auto& s : r.stream_idle)
      add("<tr><td>GPU " + std::to_string(s.device) + " stream " + i64(s.stream) +
          "</td><td class=\"num\">" + ms(static_cast<double>(s.host_wait_ns)) +
          "</td><td class=\"num\">" + ms(static_cast<double>(s.kernel_wait_ns)) +
          "</td><td class=\"num\">" + ms(static_cast<double>(s.other_ns)) +
          "</td><td class=\"num\">" + i64(s.activities) + "</td></tr>\n");
    add("</tbody></table>\n<p class=\"small muted\">Host wait: the launch came after the stream "
        "had drained; kernel wait: a gap shorter than " +
        format_general(static_cast<double>(r.options.thresholds.kernel_wait_ns) / 1e3) +
        " &#181;s between kernels; other: any longer gap (e.g. waiting on another "
        "stream).</p>\n");
  }

  // ------------------------------------------------------------------ idle causes
  void idle() {
    add("<section id=\"idle\">\n<h2>Why the GPU sat idle inside steps</h2>\n");
    if (!r.idle_causes_determined) {
      const std::string* why = undetermined_why("idle_causes");
      add("<div class=\"box missing\">The idle causes cannot be determined: " +
          esc(why ? *why : (r.has_gpu_data ? "no step to analyse" : "no GPU activity")) +
          ".</div>\n</section>\n");
      return;
    }
    const double n = steps_count();
    const double idle = static_cast<double>(r.gpu_idle_in_steps_ns);
    add("<p>For each moment inside a step that no kernel, copy or memset ran, what the thread "
        "that launches the GPU's next work was doing. In all: <b>" +
        ms(idle / n) + " per step</b>" +
        (r.average_step_ns > 0 ? " (" + pct(idle / n / r.average_step_ns) + " of the step" +
                                     (r.devices.size() > 1 ? ", devices summed" : "") + ")"
                               : std::string()) +
        ".</p>\n");
    if (r.gpu_idle_in_steps_ns <= 0) {
      add("<div class=\"box ok\">The GPU never sat idle inside the steps.</div>\n</section>\n");
      return;
    }
    std::vector<const Report::CauseTotal*> order;
    for (const auto& c : r.idle_causes)
      if (c.total_ns > 0) order.push_back(&c);
    std::stable_sort(order.begin(), order.end(),
                     [](const Report::CauseTotal* a, const Report::CauseTotal* b) {
                       return a->total_ns > b->total_ns;
                     });
    add("<table class=\"idle\">\n<thead><tr><th>The host was</th><th class=\"num\">Per "
        "step</th><th class=\"num\">Share of idle</th><th></th><th "
        "class=\"num\">Gaps</th><th>Where "
        "(per step)</th></tr></thead>\n<tbody>\n");
    for (const Report::CauseTotal* c : order) {
      const double share = static_cast<double>(c->total_ns) / idle;
      std::string where;
      for (std::size_t k = 0; k < c->top.size() && k < 3; ++k)
        where += (k ? "<br/>" : "") + std::string("<span class=\"mono\">") + esc(c->top[k].first) +
                 "</span> <span class=\"nowrap\">" + ms(static_cast<double>(c->top[k].second) / n) +
                 "</span>";
      add(std::string("<tr data-cause=\"") + idle_cause_name(c->cause) + "\"><td>" +
          esc(cause_words(c->cause)) + " <span class=\"affects\">" + idle_cause_name(c->cause) +
          "</span></td><td class=\"num\">" + ms(static_cast<double>(c->total_ns) / n) +
          "</td><td class=\"num\">" + pct(share) +
          "</td><td class=\"bar\"><div class=\"meter\"><div style=\"width:" +
          num(std::min(share, 1.0) * 100, 2) + "%\"></div></div></td><td class=\"num\">" +
          i64(c->gaps) + "</td><td class=\"small\">" + where + "</td></tr>\n");
    }
    add("</tbody></table>\n</section>\n");
  }

  // ------------------------------------------------------------------ findings
  void findings() {
    add("<section id=\"findings\">\n<h2>Findings</h2>\n");
    if (r.findings.empty()) {
      add(std::string("<div class=\"box ") + (r.breakdown_determined ? "ok" : "missing") + "\">" +
          (r.breakdown_determined ? "None of the rules fired."
                                  : "No findings: there is no step to analyse.") +
          "</div>\n</section>\n");
      return;
    }
    add("<p class=\"small muted\">Ranked by the most each could save per step: what removing the "
        "cause entirely would save. An upper bound, not a forecast; findings overlap, so their "
        "savings do not add up.</p>\n");
    int rank = 0;
    for (const auto& f : r.findings) {
      add("<article class=\"finding" + std::string(f.saving_ns_per_step ? "" : " nosaving") +
          "\" data-id=\"" + esc(f.id) + "\">\n<h3><span class=\"rank\">" + std::to_string(++rank) +
          ".</span><span>" + esc(f.title) + "</span><span class=\"badge " +
          (f.source == "tensorboard" ? "tensorboard\">TensorBoard's rule" : "ptprof\">ptprof") +
          "</span></h3>\n");
      if (f.saving_ns_per_step) {
        add("<div class=\"saving\"><div class=\"meter\"><div style=\"width:" +
            num(std::clamp(f.saving_share, 0.0, 1.0) * 100, 2) +
            "%\"></div></div><div>Could save up to <b>" +
            ms(static_cast<double>(*f.saving_ns_per_step)) + " per step</b> (" +
            pct(f.saving_share) + " of the step)</div></div>\n");
      } else {
        add("<p class=\"small muted\">Not a time saving.</p>\n");
      }
      if (!f.evidence.empty()) {
        add("<table class=\"evidence\">\n<thead><tr><th>Evidence</th><th class=\"num\">Per "
            "step</th><th class=\"num\">Time per step</th><th class=\"num\">Share of "
            "step</th><th>Note</th></tr></thead>\n<tbody>\n");
        for (const auto& e : f.evidence) {
          add("<tr><td class=\"what\"><div class=\"clamp\" title=\"" + esc(e.what) + "\">" +
              esc(e.what) + "</div></td><td class=\"num\">" +
              (e.per_step > 0 ? format_fixed(e.per_step, 1) : std::string("&#8211;")) +
              "</td><td class=\"num\">" +
              (e.ns_per_step > 0 ? ms(static_cast<double>(e.ns_per_step))
                                 : std::string("&#8211;")) +
              "</td><td class=\"num\">" +
              (e.ns_per_step > 0 ? pct(e.share_of_step) : std::string("&#8211;")) +
              "</td><td class=\"small\">" + esc(e.note) + "</td></tr>\n");
        }
        add("</tbody></table>\n");
      }
      add("<div class=\"recommendation\"><b>What to do:</b> " + esc(f.recommendation) +
          "</div>\n</article>\n");
    }
    add("</section>\n");
  }

  // ------------------------------------------------------------------ tables
  void tables() {
    add("<section id=\"tables\">\n<h2>Tables</h2>\n");
    std::string scope = "over the whole trace";
    if (r.has_steps)
      scope +=
          " (" + i64(static_cast<int64_t>(r.steps.size() + r.trimmed_steps.size())) + " steps)";
    add("<p class=\"small muted\">Totals " + scope +
        ", as torch.profiler's key_averages() and kernel table give them; user ranges and steps "
        "left out. Hover a name for all of it.</p>\n");
    ops_table("Top operators by self CPU time", "ops-cpu", r.top_ops_by_self_cpu, false);
    if (r.has_gpu_data)
      ops_table("Top operators by self device time", "ops-device", r.top_ops_by_self_device, true);
    kernels_table();
    add("</section>\n");
  }

  // The column the rows are sorted by is bold.
  void ops_table(const char* title, const char* id, const std::vector<Report::OpRow>& rows,
                 bool by_device) {
    add("<h3>" + std::string(title) + "</h3>\n");
    if (rows.empty()) {
      add("<p class=\"muted\">No operator time.</p>\n");
      return;
    }
    // Device columns only where there is device time to show.
    const bool device = r.has_gpu_data;
    add("<table class=\"ops\" id=\"" + std::string(id) +
        "\">\n<thead><tr><th class=\"num\">#</th><th>Operator</th><th class=\"num\">Calls</th><th "
        "class=\"num\">Self CPU</th><th class=\"num\">CPU total</th>" +
        (device ? "<th class=\"num\">Self device</th><th class=\"num\">Device total</th>" : "") +
        "</tr></thead>\n<tbody>\n");
    int rank = 0;
    for (const auto& o : rows) {
      add("<tr><td class=\"num\">" + std::to_string(++rank) +
          "</td><td class=\"name\"><div class=\"clamp\" title=\"" + esc(o.name) + "\">" +
          esc(o.name) + "</div></td><td class=\"num\">" + i64(o.calls) +
          (by_device ? "</td><td class=\"num\">" : "</td><td class=\"num sorted\">") +
          ms(static_cast<double>(o.self_cpu_ns)) + "</td><td class=\"num\">" +
          ms(static_cast<double>(o.cpu_total_ns)) + "</td>");
      if (device)
        add((by_device ? "<td class=\"num sorted\">" : "<td class=\"num\">") +
            ms(static_cast<double>(o.self_device_ns)) + "</td><td class=\"num\">" +
            ms(static_cast<double>(o.device_total_ns)) + "</td>");
      add("</tr>\n");
    }
    add("</tbody></table>\n");
  }

  void kernels_table() {
    if (!r.has_gpu_data) return;
    add("<h3>Top kernels by total time</h3>\n");
    if (r.top_kernels.empty()) {
      add("<p class=\"muted\">No kernels.</p>\n");
      return;
    }
    add("<table class=\"kernels\" id=\"kernels\">\n<thead><tr><th "
        "class=\"num\">#</th><th>Kernel</th>"
        "<th class=\"num\">Calls</th><th class=\"num\">Total</th><th class=\"num\">Average</th><th "
        "class=\"num\">Min</th><th class=\"num\">Max</th><th class=\"num\">Est. occupancy</th><th "
        "class=\"num\">Blocks per SM</th></tr></thead>\n<tbody>\n");
    int rank = 0;
    for (const auto& k : r.top_kernels)
      add("<tr><td class=\"num\">" + std::to_string(++rank) +
          "</td><td class=\"name\"><div class=\"clamp\" title=\"" + esc(k.name) + "\">" +
          esc(k.name) + "</div></td><td class=\"num\">" + i64(k.calls) +
          "</td><td class=\"num sorted\">" + ms(static_cast<double>(k.total_ns)) +
          "</td><td class=\"num\">" +
          ms(k.calls ? static_cast<double>(k.total_ns) / static_cast<double>(k.calls) : 0) +
          "</td><td class=\"num\">" + ms(static_cast<double>(k.min_ns)) +
          "</td><td class=\"num\">" + ms(static_cast<double>(k.max_ns)) +
          "</td><td class=\"num\">" +
          (k.achieved_occupancy ? format_fixed(*k.achieved_occupancy, 0) + "%"
                                : std::string("n/a")) +
          "</td><td class=\"num\">" +
          (k.blocks_per_sm ? format_fixed(*k.blocks_per_sm, 2) : std::string("n/a")) +
          "</td></tr>\n");
    add("</tbody></table>\n");
  }

  // ------------------------------------------------------------------ footer
  void footer() {
    const ReportThresholds& th = r.options.thresholds;
    add("<footer>\n<p><b>TB</b>: TensorBoard's PyTorch Profiler plugin's definition (its last "
        "source); <b>HTA</b>: Holistic Trace Analysis'; the rest is ptprof's own. Definitions: "
        "docs/report.md.</p>\n<details><summary>Thresholds of the rules</summary>\n<table "
        "class=\"thresholds\"><tbody>\n");
    auto row = [&](const char* name, const std::string& v) {
      add(std::string("<tr><td><code>") + name + "</code></td><td class=\"num\">" + v +
          "</td></tr>\n");
    };
    auto us = [](int64_t ns) { return format_general(static_cast<double>(ns) / 1e3) + " us"; };
    row("dataloader_share", format_general(th.dataloader_share));
    row("communication_share", format_general(th.communication_share));
    row("low_gpu_utilization", format_general(th.low_gpu_utilization));
    row("memory_peak_share", format_general(th.memory_peak_share));
    row("tensor_core_min_compute_major", std::to_string(th.tensor_core_min_compute_major));
    row("tail_step_gpu_ratio", format_general(th.tail_step_gpu_ratio));
    row("kernel_wait", us(th.kernel_wait_ns));
    row("launch_queue_full", i64(th.launch_queue_full));
    row("copy_share", format_general(th.copy_share));
    row("sync_share", format_general(th.sync_share));
    row("launch_bound_share", format_general(th.launch_bound_share));
    row("tiny_kernel", us(th.tiny_kernel_ns));
    row("launch_bound_min_kernels", std::to_string(th.launch_bound_min_kernels));
    row("cpu_bound_share", format_general(th.cpu_bound_share));
    row("dominant_op_share", format_general(th.dominant_op_share));
    row("low_occupancy_pct", format_general(th.low_occupancy_pct));
    row("low_occupancy_kernel_share", format_general(th.low_occupancy_kernel_share));
    row("step_outlier_ratio", format_general(th.step_outlier_ratio));
    row("blocking_call_slack", us(th.blocking_call_slack_ns));
    row("hta_include_last_step", r.options.hta_include_last_step ? "true" : "false");
    add("</tbody></table>\n</details>\n</footer>\n");
  }

  std::string build() {
    add("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n<title>");
    std::string title = "ptprof report";
    if (!r.source.worker_name.empty()) {
      title += ": " + r.source.worker_name;
    } else if (!r.source.process_name.empty()) {
      title += ": " + r.source.process_name;
    }
    add(esc(title) + "</title>\n<style>" + kStyle + "</style>\n</head>\n<body>\n<main>\n");
    header();
    quality();
    breakdown();
    utilization();
    idle();
    findings();
    tables();
    footer();
    add("</main>\n</body>\n</html>\n");
    return std::move(h);
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
