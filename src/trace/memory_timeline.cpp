#include "trace/memory_timeline.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <tuple>
#include <utility>

#include "ptprof/error.h"
#include "ptprof/trace.h"
#include "render/markup.h"
#include "render/svg.h"
#include "trace/chrome_trace.h"
#include "trace/json_writer.h"
#include "trace/memory_timeline_css.h"

namespace ptprof::detail {

std::string memory_device_name(int device_type, int device_index) {
  // c10::DeviceTypeName's names, by c10::DeviceType's values (a trace file carries the number;
  // the core reads traces without libtorch).
  static const char* const kNames[] = {"CPU", "CUDA", "MKLDNN",       "OPENGL", "OPENCL", "IDEEP",
                                       "HIP", "FPGA", "MAIA",         "XLA",    "VULKAN", "METAL",
                                       "XPU", "MPS",  "META",         "HPU",    "VE",     "LAZY",
                                       "IPU", "MTIA", "PRIVATEUSEONE"};
  std::string name;
  if (device_type >= 0 && device_type < static_cast<int>(std::size(kNames))) {
    name = kNames[device_type];
  } else {
    name = "device" + std::to_string(device_type);
  }
  if (device_index >= 0) name += ":" + std::to_string(device_index);
  return name;
}

namespace {

// The memory events' indexes by time. They are recorded in time order; a stable sort keeps
// that order for ties and costs nothing when it already holds.
std::vector<std::size_t> by_time(const Trace& t) {
  std::vector<std::size_t> order(t.memory_events.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return t.memory_events[a].time_ns < t.memory_events[b].time_ns;
  });
  return order;
}

}  // namespace

std::vector<MemoryCurve> memory_curves(const Trace& t) {
  const std::vector<std::size_t> order = by_time(t);
  std::map<std::pair<int, int>, MemoryCurve> by_device;
  for (std::size_t i : order) {
    const MemoryEvent& m = t.memory_events[i];
    const std::pair<int, int> key(m.device_type, m.device_index);
    MemoryCurve& c = by_device[key];
    if (c.time_ns.empty()) {
      c.device = memory_device_name(m.device_type, m.device_index);
      c.device_type = m.device_type;
      c.device_index = m.device_index;
    }
    c.time_ns.push_back(m.time_ns);
    c.allocated.push_back(m.total_allocated);
    c.reserved.push_back(m.total_reserved);
    if (c.time_ns.size() == 1 || m.total_allocated > c.peak_allocated) {
      c.peak_allocated = m.total_allocated;
      c.peak_time_ns = m.time_ns;
    }
  }
  std::vector<MemoryCurve> out;
  out.reserve(by_device.size());
  for (auto& [key, c] : by_device) out.push_back(std::move(c));
  return out;
}

std::vector<MemoryAllocation> memory_allocations(const Trace& t) {
  const std::vector<std::size_t> order = by_time(t);
  std::vector<MemoryAllocation> out;
  // (device type, device index, address) -> the allocation still live there
  std::map<std::tuple<int, int, uint64_t>, std::size_t> live;
  for (std::size_t i : order) {
    const MemoryEvent& m = t.memory_events[i];
    const auto key = std::make_tuple(int{m.device_type}, int{m.device_index}, m.address);
    if (m.bytes > 0) {
      MemoryAllocation a;
      a.device_type = m.device_type;
      a.device_index = m.device_index;
      a.address = m.address;
      a.bytes = m.bytes;
      a.alloc_ns = m.time_ns;
      a.alloc_op = m.op;
      live[key] = out.size();
      out.push_back(a);
    } else if (m.bytes < 0) {
      auto it = live.find(key);
      if (it == live.end()) continue;
      out[it->second].free_ns = m.time_ns;
      out[it->second].free_op = m.op;
      live.erase(it);
    }
  }
  return out;
}

int64_t peak_allocated(const Trace& t, int device_type, int device_index) {
  int64_t peak = 0;
  for (const MemoryEvent& m : t.memory_events) {
    if (m.device_type == device_type && m.device_index == device_index)
      peak = std::max(peak, m.total_allocated);
  }
  return peak;
}

namespace {

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Times are written relative to the window start (or the first event, if earlier), which is
// given once as Unix epoch ns.
int64_t time_origin(const Trace& t) {
  int64_t first = t.memory_events.front().time_ns;
  for (const MemoryEvent& m : t.memory_events) first = std::min(first, m.time_ns);
  return t.window_start_ns > 0 && t.window_start_ns <= first ? t.window_start_ns : first;
}

void write_json(const Trace& t, Sink& sink) {
  const int64_t t0 = time_origin(t);
  JsonWriter w(&sink);
  w.begin_object();
  w.key("time_origin_unix_ns").value(t0);
  w.key("time_unit").value("us since time_origin_unix_ns");
  w.newline().key("devices").begin_object();
  for (const MemoryCurve& c : memory_curves(t)) {
    w.newline().key(c.device).begin_object();
    w.key("device_type").value(static_cast<int64_t>(c.device_type));
    w.key("device_index").value(static_cast<int64_t>(c.device_index));
    w.key("peak_allocated_bytes").value(c.peak_allocated);
    w.key("peak_time_us").value_us(c.peak_time_ns - t0);
    w.newline().key("times_us").begin_array();
    for (int64_t ns : c.time_ns) {
      w.value_us(ns - t0);
      w.maybe_flush();
    }
    w.end_array();
    w.newline().key("allocated_bytes").begin_array();
    for (int64_t v : c.allocated) {
      w.value(v);
      w.maybe_flush();
    }
    w.end_array();
    w.newline().key("reserved_bytes").begin_array();
    for (int64_t v : c.reserved) {
      w.value(v);
      w.maybe_flush();
    }
    w.end_array();
    w.end_object();
  }
  w.newline().end_object();
  w.newline().end_object();
  w.finish();
}

// ---- HTML --------------------------------------------------------------------------------

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
  const std::size_t n = t.size();
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

// A step curve: the allocator's total holds from one event until the next.
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

void device_svg(Markup& m, const MemoryCurve& c, int64_t t0, int64_t end_ns) {
  const bool has_reserved =
      std::any_of(c.reserved.begin(), c.reserved.end(), [](int64_t v) { return v > 0; });
  double top = static_cast<double>(c.peak_allocated);
  if (has_reserved)
    top =
        std::max(top, static_cast<double>(*std::max_element(c.reserved.begin(), c.reserved.end())));
  Plot p{t0, std::max(1000.0, static_cast<double>(end_ns - t0)), 0};
  const double ystep_mb = nice_step(std::max(top * 1.05 / kMiB, 1e-3), 5);
  p.ymax = std::max(1.0, std::ceil(top * 1.05 / kMiB / ystep_mb)) * ystep_mb * kMiB;

  Svg svg(m, 2);
  m.open("svg", {{"width", num(kPlotW, 0)},
                 {"height", num(kPlotH, 0)},
                 {"viewBox", "0 0 " + num(kPlotW, 0) + " " + num(kPlotH, 0)},
                 {"role", "img"}})
      .line();
  m.element("title", c.device + " allocated memory over time").line();
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
  // Curves.
  if (has_reserved) {
    m.open("path", {{"class", "reserved"}, {"d", step_path(p, c.time_ns, c.reserved, end_ns)}});
    m.element("title", "reserved").close("path").line();
  }
  m.open("path", {{"class", "allocated"}, {"d", step_path(p, c.time_ns, c.allocated, end_ns)}});
  m.element("title", "allocated").close("path").line();
  // The peak.
  const double px = p.x(c.peak_time_ns), py = p.y(static_cast<double>(c.peak_allocated));
  const std::string label = "peak " + num(c.peak_allocated / kMiB, 3) + " MB at " +
                            num((c.peak_time_ns - t0) / 1e6, 3) + " ms";
  m.open("circle", {{"class", "peak"}, svg.at("cx", px), svg.at("cy", py), {"r", "4"}});
  m.element("title", label + " (" + std::to_string(c.peak_allocated) + " bytes)")
      .close("circle")
      .line();
  const bool right_half = px > kLeft + kInnerW / 2;
  svg.text("peak-label", right_half ? px - 8 : px + 8, std::max(kTop + 12, py - 8),
           right_half ? "end" : "start", label);
  m.line();
  // Legend.
  svg.text("legend-allocated", kLeft + 8, kTop - 10, "", "\xe2\x80\x94 allocated");
  if (has_reserved) svg.text("legend-reserved", kLeft + 110, kTop - 10, "", "- - reserved");
  m.line();
  m.close("svg").line();
}

void write_html(const Trace& t, Sink& sink) {
  const int64_t t0 = time_origin(t);
  int64_t end = t0;
  for (const MemoryEvent& m : t.memory_events) end = std::max(end, m.time_ns);
  end = std::max(end, t.window_end_ns);
  const std::vector<MemoryCurve> curves = memory_curves(t);
  Markup m(&sink);
  m.doctype_html();
  m.open("html", {{"lang", "en"}}).line();
  m.open("head").line();
  m.empty("meta", {{"charset", "utf-8"}}).line();
  m.element("title", "ptprof memory timeline").line();
  m.style(std::string("\n") + kMemoryTimelineCss).line();
  m.close("head").line();
  m.open("body").line();
  m.element("h1", "Memory timeline").line();
  m.open("p");
  if (!t.worker_name.empty()) m.text(t.worker_name + ": ");
  m.text(std::to_string(t.memory_events.size()) +
         " memory events. Allocated bytes per device as its allocator reported them after each "
         "allocation and free; time from the start of the profiling window; 1 MB = 2");
  m.element("sup", "20").text(" bytes.").close("p").line();
  for (const MemoryCurve& c : curves) {
    m.element("h2", c.device).line();
    m.element("p", "Peak allocated: " + num(c.peak_allocated / kMiB, 3) + " MB (" +
                       std::to_string(c.peak_allocated) + " bytes) at " +
                       num((c.peak_time_ns - t0) / 1e6, 3) + " ms; " +
                       std::to_string(c.time_ns.size()) + " events.")
        .line();
    device_svg(m, c, t0, end);
    m.maybe_flush();
  }
  m.close("body").line();
  m.close("html").line();
  m.finish();
}

}  // namespace

}  // namespace ptprof::detail

namespace ptprof {

void Trace::export_memory_timeline(const std::string& path) const {
  const bool json = detail::ends_with(path, ".json") || detail::ends_with(path, ".json.gz");
  const bool html = detail::ends_with(path, ".html");
  if (!json && !html)
    throw Error("ptprof: export_memory_timeline(" + path +
                "): unknown file type; the path must end in .json, .json.gz or .html");
  if (memory_events.empty())
    throw Error("ptprof: export_memory_timeline(" + path +
                "): the trace has no memory events; record it with "
                "Options::profile_memory = true");
  detail::write_file_atomically(path, [&](detail::Sink& sink) {
    if (json) {
      detail::write_json(*this, sink);
    } else {
      detail::write_html(*this, sink);
    }
  });
}

}  // namespace ptprof
