// The page's GPU utilization section: per device its kernel busy share over time, the
// devices' table and Holistic Trace Analysis' temporal and stream breakdowns.
#include "analysis/report/html_page.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "render/format.h"
#include "render/svg.h"

namespace ptprof::detail {

void HtmlPage::utilization() {
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
void HtmlPage::legend_line(const std::string& style, const std::string& text) {
  m.open("span")
      .element("span", {{"class", "line"}, {"style", style}}, "")
      .text(text)
      .close("span");
}

void HtmlPage::device_chart(const Report::Device& d) {
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

void HtmlPage::device_table() {
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

void HtmlPage::hta() {
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

}  // namespace ptprof::detail
