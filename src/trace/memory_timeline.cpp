#include "trace/memory_timeline.h"

#include <algorithm>
#include <iterator>
#include <cmath>
#include <map>
#include <utility>

#include "trace/chrome_trace.h"
#include "trace/json_writer.h"
#include "ptprof/error.h"
#include "ptprof/trace.h"
#include "trace/stacks_export.h"  // xml_escape

namespace ptprof::detail {

std::string memory_device_name(int device_type, int device_index) {
  // c10::DeviceTypeName's names, by c10::DeviceType's values (a trace file carries the number;
  // the core reads traces without libtorch).
  static const char* const kNames[] = {"CPU",  "CUDA",   "MKLDNN", "OPENGL", "OPENCL", "IDEEP",
                                       "HIP",  "FPGA",   "MAIA",   "XLA",    "VULKAN", "METAL",
                                       "XPU",  "MPS",    "META",   "HPU",    "VE",     "LAZY",
                                       "IPU",  "MTIA",   "PRIVATEUSEONE"};
  std::string name;
  if (device_type >= 0 && device_type < static_cast<int>(std::size(kNames))) {
    name = kNames[device_type];
  } else {
    name = "device" + std::to_string(device_type);
  }
  if (device_index >= 0) name += ":" + std::to_string(device_index);
  return name;
}

std::vector<MemoryCurve> memory_curves(const Trace& t) {
  // Memory events are recorded in time order; a stable sort keeps that order for ties and
  // costs nothing when it already holds.
  std::vector<std::size_t> order(t.memory_events.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return t.memory_events[a].time_ns < t.memory_events[b].time_ns;
  });
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

// 1, 2 or 5 times a power of ten, giving about `ticks` intervals over `range`.
double nice_step(double range, int ticks) {
  const double raw = range / ticks;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double n = raw / mag;
  return (n < 1.5 ? 1 : n < 3.5 ? 2 : n < 7.5 ? 5 : 10) * mag;
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
  std::string d;
  for (std::size_t i : samples_to_draw(t, v, p.t0, p.span_ns)) {
    if (d.empty()) {
      d = "M" + num(p.x(t[i])) + "," + num(p.y(static_cast<double>(v[i])));
    } else {
      d += " H" + num(p.x(t[i])) + " V" + num(p.y(static_cast<double>(v[i])));
    }
  }
  d += " H" + num(p.x(end_ns));
  return d;
}

std::string device_svg(const MemoryCurve& c, int64_t t0, int64_t end_ns) {
  const bool has_reserved =
      std::any_of(c.reserved.begin(), c.reserved.end(), [](int64_t v) { return v > 0; });
  double top = static_cast<double>(c.peak_allocated);
  if (has_reserved)
    top =
        std::max(top, static_cast<double>(*std::max_element(c.reserved.begin(), c.reserved.end())));
  Plot p{t0, std::max(1000.0, static_cast<double>(end_ns - t0)), 0};
  const double ystep_mb = nice_step(std::max(top * 1.05 / kMiB, 1e-3), 5);
  p.ymax = std::max(1.0, std::ceil(top * 1.05 / kMiB / ystep_mb)) * ystep_mb * kMiB;

  std::string s;
  s += "<svg width=\"" + num(kPlotW, 0) + "\" height=\"" + num(kPlotH, 0) + "\" viewBox=\"0 0 " +
       num(kPlotW, 0) + " " + num(kPlotH, 0) + "\" role=\"img\">\n";
  s += "<title>" + xml_escape(c.device) + " allocated memory over time</title>\n";
  // Grid, ticks and labels.
  const double span_ms = p.span_ns / 1e6;
  const double xstep = nice_step(span_ms, 8);
  for (double ms = 0; ms <= span_ms * (1 + 1e-9); ms += xstep) {
    const double x = kLeft + ms / span_ms * kInnerW;
    s += "<line class=\"grid\" x1=\"" + num(x) + "\" y1=\"" + num(kTop) + "\" x2=\"" + num(x) +
         "\" y2=\"" + num(kTop + kInnerH) + "\"/>";
    s += "<text x=\"" + num(x) + "\" y=\"" + num(kTop + kInnerH + 16) +
         "\" text-anchor=\"middle\">" + format_general(ms) + "</text>\n";
  }
  for (double mb = 0; mb * kMiB <= p.ymax * (1 + 1e-9); mb += ystep_mb) {
    const double y = p.y(mb * kMiB);
    s += "<line class=\"grid\" x1=\"" + num(kLeft) + "\" y1=\"" + num(y) + "\" x2=\"" +
         num(kLeft + kInnerW) + "\" y2=\"" + num(y) + "\"/>";
    s += "<text x=\"" + num(kLeft - 6) + "\" y=\"" + num(y + 4) + "\" text-anchor=\"end\">" +
         format_general(mb) + "</text>\n";
  }
  s += "<rect class=\"frame\" x=\"" + num(kLeft) + "\" y=\"" + num(kTop) + "\" width=\"" +
       num(kInnerW) + "\" height=\"" + num(kInnerH) + "\"/>\n";
  s += "<text x=\"" + num(kLeft + kInnerW / 2) + "\" y=\"" + num(kPlotH - 10) +
       "\" text-anchor=\"middle\">time (ms)</text>\n";
  s += "<text x=\"16\" y=\"" + num(kTop + kInnerH / 2) +
       "\" text-anchor=\"middle\" "
       "transform=\"rotate(-90 16 " +
       num(kTop + kInnerH / 2) + ")\">memory (MB)</text>\n";
  // Curves.
  if (has_reserved)
    s += "<path class=\"reserved\" d=\"" + step_path(p, c.time_ns, c.reserved, end_ns) +
         "\"><title>reserved</title></path>\n";
  s += "<path class=\"allocated\" d=\"" + step_path(p, c.time_ns, c.allocated, end_ns) +
       "\"><title>allocated</title></path>\n";
  // The peak.
  const double px = p.x(c.peak_time_ns), py = p.y(static_cast<double>(c.peak_allocated));
  const std::string label = "peak " + num(c.peak_allocated / kMiB, 3) + " MB at " +
                            num((c.peak_time_ns - t0) / 1e6, 3) + " ms";
  s += "<circle class=\"peak\" cx=\"" + num(px) + "\" cy=\"" + num(py) + "\" r=\"4\"><title>" +
       label + " (" + std::to_string(c.peak_allocated) + " bytes)</title></circle>\n";
  const bool right_half = px > kLeft + kInnerW / 2;
  s += "<text class=\"peak-label\" x=\"" + num(right_half ? px - 8 : px + 8) + "\" y=\"" +
       num(std::max(kTop + 12, py - 8)) + "\" text-anchor=\"" + (right_half ? "end" : "start") +
       "\">" + label + "</text>\n";
  // Legend.
  s += "<text x=\"" + num(kLeft + 8) + "\" y=\"" + num(kTop - 10) +
       "\" class=\"legend-allocated\">&#x2014; allocated</text>";
  if (has_reserved)
    s += "<text x=\"" + num(kLeft + 110) + "\" y=\"" + num(kTop - 10) +
         "\" class=\"legend-reserved\">- - reserved</text>";
  s += "\n</svg>\n";
  return s;
}

void write_html(const Trace& t, Sink& sink) {
  const int64_t t0 = time_origin(t);
  int64_t end = t0;
  for (const MemoryEvent& m : t.memory_events) end = std::max(end, m.time_ns);
  end = std::max(end, t.window_end_ns);
  const std::vector<MemoryCurve> curves = memory_curves(t);
  std::string h;
  h += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n";
  h += "<title>ptprof memory timeline</title>\n";
  h += "<style>\n"
       "body{font-family:sans-serif;margin:24px;color:#222}\n"
       "svg{display:block;margin-bottom:24px}\n"
       "svg text{font-size:12px;fill:#222}\n"
       ".grid{stroke:#e4e4e4;stroke-width:1}\n"
       ".frame{fill:none;stroke:#555;stroke-width:1}\n"
       ".allocated{fill:none;stroke:#1f77b4;stroke-width:1.5}\n"
       ".reserved{fill:none;stroke:#ff7f0e;stroke-width:1;stroke-dasharray:4 3}\n"
       ".peak{fill:#d62728}\n"
       "svg text.peak-label{fill:#d62728}\n"
       "svg text.legend-allocated{fill:#1f77b4}\n"
       "svg text.legend-reserved{fill:#ff7f0e}\n"
       "</style>\n</head>\n<body>\n";
  h += "<h1>Memory timeline</h1>\n<p>";
  if (!t.worker_name.empty()) h += xml_escape(t.worker_name) + ": ";
  h += std::to_string(t.memory_events.size()) +
       " memory events. Allocated bytes per device as its allocator reported them after each "
       "allocation and free; time from the start of the profiling window; 1 MB = 2<sup>20</sup> "
       "bytes.</p>\n";
  sink.write(h.data(), h.size());
  for (const MemoryCurve& c : curves) {
    std::string d = "<h2>" + xml_escape(c.device) +
                    "</h2>\n<p>Peak allocated: " + num(c.peak_allocated / kMiB, 3) + " MB (" +
                    std::to_string(c.peak_allocated) + " bytes) at " +
                    num((c.peak_time_ns - t0) / 1e6, 3) + " ms; " +
                    std::to_string(c.time_ns.size()) + " events.</p>\n";
    d += device_svg(c, t0, end);
    sink.write(d.data(), d.size());
  }
  const std::string tail = "</body>\n</html>\n";
  sink.write(tail.data(), tail.size());
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
