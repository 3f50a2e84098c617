// The page's step-time section: TensorBoard's breakdown of each step, as a chart and a table.
#include "analysis/report/html_page.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "render/format.h"
#include "render/svg.h"

namespace ptprof::detail {

namespace {

// Google Charts' default series colours, in TB's category order (Kernel first).
constexpr const char* kCategoryColour[kStepCategories] = {
    "#3366cc", "#dc3912", "#ff9900", "#109618", "#990099", "#0099c6", "#dd4477", "#66aa00"};
// Labels inside a segment: white where it reads on the colour, dark where it does not.
constexpr bool kCategoryDarkText[kStepCategories] = {false, false, true,  false,
                                                     false, true,  false, true};

}  // namespace

void HtmlPage::swatch(const char* colour) {
  m.element("span", {{"class", "swatch"}, {"style", std::string("background:") + colour}}, "");
}

void HtmlPage::legend_categories() {
  m.open("div", {{"class", "legend"}});
  for (int c = 0; c < kStepCategories; ++c) {
    m.open("span");
    swatch(kCategoryColour[c]);
    m.text(step_category_name(static_cast<StepCategory>(c))).close("span");
  }
  m.close("div").line();
}

void HtmlPage::breakdown() {
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

void HtmlPage::breakdown_chart() {
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

void HtmlPage::breakdown_table() {
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

}  // namespace ptprof::detail
