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
#include "render/memory_chart.h"
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

// Coordinates and labels, whatever the process locale (format_fixed, format_general).
std::string num(double v, int decimals = 2) {
  return format_fixed(v, decimals);
}

void device_svg(Markup& m, const MemoryCurve& c, int64_t t0, int64_t end_ns) {
  MemoryChart chart;
  chart.title = c.device + " allocated memory over time";
  chart.t0 = t0;
  chart.end_ns = end_ns;
  const bool has_reserved =
      std::any_of(c.reserved.begin(), c.reserved.end(), [](int64_t v) { return v > 0; });
  if (has_reserved) chart.curves.push_back({"reserved", "- - reserved", &c.time_ns, &c.reserved});
  chart.curves.insert(chart.curves.begin(),
                      MemoryChartCurve{"allocated", "\xe2\x80\x94 allocated", &c.time_ns, &c.allocated});
  chart.peak_bytes = c.peak_allocated;
  chart.peak_time_ns = c.peak_time_ns;
  write_memory_chart(m, chart);
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
