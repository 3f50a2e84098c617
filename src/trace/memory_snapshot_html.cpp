// A snapshot's summary as a self-contained page: no script, nothing loaded from anywhere.
#include <algorithm>
#include <string>
#include <vector>

#include "ptprof/memory_snapshot.h"
#include "render/markup.h"
#include "render/memory_chart.h"
#include "trace/chrome_trace.h"
#include "trace/json_writer.h"
#include "trace/memory_snapshot_css.h"
#include "trace/memory_snapshot_text.h"

namespace ptprof {

namespace {

using detail::format_bytes;
using detail::Markup;

std::string ms_since(int64_t time_us, int64_t t0) {
  return time_us < 0 ? "before the trace" : detail::format_fixed((time_us - t0) / 1e3, 3) + " ms";
}

void tile(Markup& m, const char* label, const std::string& value, const char* cls = "tile") {
  m.open("div", {{"class", cls}});
  m.element("div", {{"class", "label"}}, label);
  m.element("div", {{"class", "value"}}, value);
  m.close("div").line();
}

// A stack: its first shown frame, the rest folded under it.
void stack_cell(Markup& m, const MemorySnapshot& s, int32_t index) {
  m.open("td");
  if (index < 0 || static_cast<std::size_t>(index) >= s.stacks.size()) {
    m.open("span", {{"class", "muted"}}).text("no stack recorded").close("span");
    m.close("td");
    return;
  }
  const auto frames = detail::shown_frames(s.stacks[static_cast<std::size_t>(index)]);
  m.open("details").element("summary", detail::stack_headline(s, index));
  m.open("ol", {{"class", "stack"}});
  for (const MemoryFrame* f : frames) m.element("li", detail::frame_text(*f));
  m.close("ol").close("details");
  m.close("td");
}

void num_cell(Markup& m, const std::string& text) { m.element("td", {{"class", "num"}}, text); }

void head(Markup& m, std::initializer_list<std::pair<const char*, bool>> cols) {
  m.open("tr");
  for (const auto& [name, numeric] : cols) {
    if (numeric)
      m.element("th", {{"class", "num"}}, name);
    else
      m.element("th", name);
  }
  m.close("tr").line();
}

void device_section(Markup& m, const MemorySnapshot& s, const MemoryDeviceSummary& d) {
  const std::string id = "cuda" + std::to_string(d.device);
  m.open("section", {{"id", id}, {"data-testid", "device"}}).line();
  m.element("h2", "CUDA:" + std::to_string(d.device));
  m.open("div", {{"class", "tiles"}}).line();
  tile(m, "Reserved", format_bytes(d.reserved));
  tile(m, "Allocated", format_bytes(d.allocated));
  tile(m, "Peak allocated", format_bytes(d.peak_bytes));
  tile(m, "Unallocated", format_bytes(d.reserved - d.allocated));
  tile(m, "Largest free block", format_bytes(d.largest_free_block));
  if (!d.ooms.empty()) tile(m, "Out of memory", std::to_string(d.ooms.size()), "tile oom");
  m.close("div").line();

  const int64_t t0 = d.trace_start_us;
  m.element("h3", "Active memory timeline");
  if (d.trace_entries == 0) {
    m.element("p", {{"class", "muted"}},
              "No trace: the allocator's history was not recorded when this snapshot was taken "
              "(Options::cuda_memory_history, or torch.cuda.memory._record_memory_history). "
              "The state below is what the allocator held then.");
  } else {
    m.element("p", std::to_string(d.trace_entries) + " trace entries; allocated at the trace's start " +
                       format_bytes(d.start_bytes) + "; peak " + format_bytes(d.peak_bytes) + " at " +
                       ms_since(d.peak_time_us, t0) + ". 1 MB = 2^20 bytes.");
    // Times are microseconds; the chart works in ns.
    std::vector<int64_t> t, v;
    t.push_back(t0 * 1000);
    v.push_back(d.start_bytes);
    for (const MemoryTimelinePoint& p : d.timeline) {
      t.push_back(p.time_us * 1000);
      v.push_back(p.bytes);
    }
    detail::MemoryChart chart;
    chart.title = "CUDA:" + std::to_string(d.device) + " allocated memory over time";
    chart.t0 = t0 * 1000;
    chart.end_ns = std::max(t.back(), d.trace_end_us * 1000);  // an OOM may come last
    chart.curves.push_back({"allocated", "\xe2\x80\x94 allocated", &t, &v});
    std::vector<std::vector<int64_t>> st, sv;
    if (d.streams.size() > 1) {
      st.resize(d.streams.size());
      sv.resize(d.streams.size());
      for (std::size_t k = 0; k < d.streams.size() && k < 3; ++k) {
        for (const MemoryTimelinePoint& p : d.streams[k].points) {
          st[k].push_back(p.time_us * 1000);
          sv[k].push_back(p.bytes);
        }
        chart.curves.push_back({"stream" + std::to_string(k + 1),
                                "stream " + std::to_string(d.streams[k].stream), &st[k], &sv[k]});
      }
    }
    chart.peak_bytes = d.peak_bytes;
    chart.peak_time_ns = d.peak_time_us * 1000;
    for (const MemoryOomInfo& o : d.ooms)
      chart.markers.push_back({o.time_us * 1000, "out of memory: asked " + format_bytes(o.requested)});
    detail::write_memory_chart(m, chart);
  }

  m.element("h3", "Live at the peak, by the stack that allocated it");
  m.open("table", {{"data-testid", "peak-stacks"}}).line();
  head(m, {{"Bytes", true}, {"Allocations", true}, {"Allocated at", false}});
  for (const MemoryStackShare& sh : d.peak_by_stack) {
    m.open("tr");
    num_cell(m, format_bytes(sh.bytes));
    num_cell(m, std::to_string(sh.count));
    stack_cell(m, s, sh.stack);
    m.close("tr").line();
  }
  m.close("table").line();

  m.element("h3", "Largest allocations");
  m.open("table", {{"data-testid", "largest"}}).line();
  head(m, {{"Size", true}, {"Allocated", true}, {"Freed", true}, {"Stream", true}, {"Allocated at", false}});
  for (const MemoryAllocationInfo& a : d.largest) {
    m.open("tr");
    num_cell(m, format_bytes(a.size));
    num_cell(m, ms_since(a.alloc_time_us, t0));
    num_cell(m, a.free_time_us < 0 ? "not freed" : ms_since(a.free_time_us, t0));
    num_cell(m, std::to_string(a.stream));
    stack_cell(m, s, a.stack);
    m.close("tr").line();
  }
  m.close("table").line();

  m.element("h3", "Segments with the most unallocated bytes");
  m.open("table", {{"data-testid", "segments"}}).line();
  head(m, {{"Reserved", true}, {"Allocated", true}, {"Unallocated", true}, {"Free blocks", true},
           {"Largest free block", true}, {"Pool", false}, {"Stream", true}});
  for (const MemorySegmentUse& u : d.segments) {
    m.open("tr");
    num_cell(m, format_bytes(u.total_size));
    num_cell(m, format_bytes(u.allocated_size));
    num_cell(m, format_bytes(u.total_size - u.allocated_size));
    num_cell(m, std::to_string(u.free_blocks));
    num_cell(m, format_bytes(u.largest_free_block));
    m.element("td", u.large ? "large" : "small");
    num_cell(m, std::to_string(u.stream));
    m.close("tr").line();
  }
  m.close("table").line();

  if (!d.ooms.empty()) {
    m.element("h3", "Out of memory");
    m.open("table", {{"data-testid", "ooms"}}).line();
    head(m, {{"At", true}, {"Asked", true}, {"CUDA free", true}, {"Reserved", true},
             {"Allocated", true}, {"Stream", true}, {"Asked at", false}});
    for (const MemoryOomInfo& o : d.ooms) {
      m.open("tr");
      num_cell(m, ms_since(o.time_us, t0));
      num_cell(m, format_bytes(o.requested));
      num_cell(m, format_bytes(o.device_free));
      num_cell(m, format_bytes(o.reserved));
      num_cell(m, format_bytes(o.allocated));
      num_cell(m, std::to_string(o.stream));
      stack_cell(m, s, o.stack);
      m.close("tr").line();
    }
    m.close("table").line();
  }
  m.close("section").line();
  m.maybe_flush();
}

}  // namespace

void MemorySnapshotSummary::save_html(const MemorySnapshot& snapshot, const std::string& path,
                                      const std::string& title) const {
  detail::write_file_atomically(path, [&](detail::Sink& sink) {
    Markup m(&sink);
    m.doctype_html();
    m.open("html", {{"lang", "en"}}).line();
    m.open("head").line();
    m.empty("meta", {{"charset", "utf-8"}}).line();
    m.element("title", "ptprof CUDA memory snapshot: " + title).line();
    m.style(std::string("\n") + detail::kMemorySnapshotCss).line();
    m.close("head").line();
    m.open("body").open("main").line();
    m.element("h1", "CUDA memory snapshot");
    m.element("p", {{"class", "muted"}},
              title + ": the caching allocator's segments and blocks when it was taken and, where "
                      "its history was recorded, every allocation and free before (as "
                      "pytorch.org/memory_viz replays them).");
    if (devices.empty()) m.element("p", "The snapshot holds no segments and no trace.");
    for (const MemoryDeviceSummary& d : devices) device_section(m, snapshot, d);
    m.close("main").close("body").line();
    m.close("html").line();
    m.finish();
  });
}

}  // namespace ptprof
