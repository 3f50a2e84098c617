#include "render/memory_chart.h"

#include <algorithm>
#include <cmath>

#include "render/svg.h"
#include "trace/json_writer.h"

namespace ptprof::detail {

namespace {

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kPlotW = 960, kPlotH = 360;
constexpr double kLeft = 80, kRight = 30, kTop = 30, kBottom = 50;
constexpr double kInnerW = kPlotW - kLeft - kRight, kInnerH = kPlotH - kTop - kBottom;

// Coordinates and labels, whatever the process locale (format_fixed, format_general).
std::string num(double v, int decimals = 2) {
  return format_fixed(v, decimals);
}

// Indexes of the samples to draw: all of them when few; else per pixel column its first,
// lowest, highest and last, so the shape (and the peak) survive millions of events.
std::vector<std::size_t> samples_to_draw(const std::vector<int64_t>& t,
                                         const std::vector<int64_t>& v, int64_t t0,
                                         double span_ns) {
  std::vector<std::size_t> out;
  const std::size_t n = std::min(t.size(), v.size());
  if (n <= static_cast<std::size_t>(4 * kInnerW)) {
    for (std::size_t i = 0; i < n; ++i) out.push_back(i);
    return out;
  }
  auto column = [&](std::size_t i) {
    return static_cast<int64_t>(static_cast<double>(t[i] - t0) / span_ns * kInnerW);
  };
  for (std::size_t i = 0; i < n;) {
    const int64_t col = column(i);
    std::size_t lo = i, hi = i, first = i, last = i;
    for (; i < n && column(i) == col; ++i) {
      if (v[i] < v[lo]) lo = i;
      if (v[i] > v[hi]) hi = i;
      last = i;
    }
    std::size_t pick[4] = {first, lo, hi, last};
    std::sort(pick, pick + 4);
    for (int k = 0; k < 4; ++k)
      if (k == 0 || pick[k] != pick[k - 1]) out.push_back(pick[k]);
  }
  return out;
}

struct Plot {
  int64_t t0;
  double span_ns;  // x axis: [t0, t0 + span_ns]
  double ymax;     // bytes at the top of the y axis

  double x(int64_t ns) const { return kLeft + static_cast<double>(ns - t0) / span_ns * kInnerW; }
  double y(double bytes) const { return kTop + kInnerH - bytes / ymax * kInnerH; }
};

// A step curve: the total holds from one event until the next.
std::string step_path(const Plot& p, const std::vector<int64_t>& t, const std::vector<int64_t>& v,
                      int64_t end_ns) {
  SvgPath d(2);
  bool first = true;
  for (std::size_t i : samples_to_draw(t, v, p.t0, p.span_ns)) {
    if (first) {
      d.move(p.x(t[i]), p.y(static_cast<double>(v[i])));
      first = false;
    } else {
      d.h(p.x(t[i])).v(p.y(static_cast<double>(v[i])));
    }
  }
  d.h(p.x(end_ns));
  return d.str();
}

}  // namespace

void write_memory_chart(Markup& m, const MemoryChart& c) {
  double top = static_cast<double>(c.peak_bytes);
  for (const MemoryChartCurve& curve : c.curves)
    if (curve.bytes && !curve.bytes->empty())
      top = std::max(top, static_cast<double>(*std::max_element(curve.bytes->begin(), curve.bytes->end())));
  Plot p{c.t0, std::max(1000.0, static_cast<double>(c.end_ns - c.t0)), 0};
  const double ystep_mb = nice_step(std::max(top * 1.05 / kMiB, 1e-3), 5);
  p.ymax = std::max(1.0, std::ceil(top * 1.05 / kMiB / ystep_mb)) * ystep_mb * kMiB;

  Svg svg(m, 2);
  m.open("svg", {{"width", num(kPlotW, 0)},
                 {"height", num(kPlotH, 0)},
                 {"viewBox", "0 0 " + num(kPlotW, 0) + " " + num(kPlotH, 0)},
                 {"role", "img"}})
      .line();
  m.element("title", c.title).line();
  // Grid, ticks and labels.
  const double span_ms = p.span_ns / 1e6;
  const double xstep = nice_step(span_ms, 8);
  for (double ms = 0; ms <= span_ms * (1 + 1e-9); ms += xstep) {
    const double x = kLeft + ms / span_ms * kInnerW;
    svg.line("grid", x, kTop, x, kTop + kInnerH);
    svg.text("", x, kTop + kInnerH + 16, "middle", format_general(ms));
    m.line();
  }
  for (double mb = 0; mb * kMiB <= p.ymax * (1 + 1e-9); mb += ystep_mb) {
    const double y = p.y(mb * kMiB);
    svg.line("grid", kLeft, y, kLeft + kInnerW, y);
    svg.text("", kLeft - 6, y + 4, "end", format_general(mb));
    m.line();
  }
  svg.rect("frame", kLeft, kTop, kInnerW, kInnerH);
  m.line();
  svg.text("", kLeft + kInnerW / 2, kPlotH - 10, "middle", "time (ms)");
  m.line();
  svg.vertical_text("", 16, kTop + kInnerH / 2, "memory (MB)");
  m.line();
  // Curves, the first on top.
  for (std::size_t k = c.curves.size(); k-- > 0;) {
    const MemoryChartCurve& curve = c.curves[k];
    if (!curve.time_ns || !curve.bytes || curve.time_ns->empty()) continue;
    m.open("path", {{"class", curve.cls}, {"d", step_path(p, *curve.time_ns, *curve.bytes, c.end_ns)}});
    m.element("title", curve.cls).close("path").line();
  }
  for (const MemoryChartMarker& mk : c.markers) {
    const double x = p.x(mk.time_ns);
    m.open("line", {{"class", "marker"}, svg.at("x1", x), svg.at("y1", kTop), svg.at("x2", x),
                    svg.at("y2", kTop + kInnerH)});
    m.element("title", mk.title).close("line").line();
  }
  // The peak.
  const double px = p.x(c.peak_time_ns), py = p.y(static_cast<double>(c.peak_bytes));
  const std::string label = "peak " + num(c.peak_bytes / kMiB, 3) + " MB at " +
                            num((c.peak_time_ns - c.t0) / 1e6, 3) + " ms";
  m.open("circle", {{"class", "peak"}, svg.at("cx", px), svg.at("cy", py), {"r", "4"}});
  m.element("title", label + " (" + std::to_string(c.peak_bytes) + " bytes)")
      .close("circle")
      .line();
  const bool right_half = px > kLeft + kInnerW / 2;
  svg.text("peak-label", right_half ? px - 8 : px + 8, std::max(kTop + 12, py - 8),
           right_half ? "end" : "start", label);
  m.line();
  // Legend.
  double lx = kLeft + 8;
  for (const MemoryChartCurve& curve : c.curves) {
    if (curve.legend.empty()) continue;
    svg.text("legend-" + curve.cls, lx, kTop - 10, "", curve.legend);
    lx += 102;
  }
  m.line();
  m.close("svg").line();
}

}  // namespace ptprof::detail
