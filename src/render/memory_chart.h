// memory_chart.h: the bytes-over-time chart of ptprof's memory pages (profile_memory's
// timeline, a CUDA memory snapshot's): step curves on a time axis in ms and a byte axis in MB,
// the peak marked, and markers at instants (an out-of-memory error).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "render/markup.h"

namespace ptprof::detail {

struct MemoryChartCurve {
  std::string cls;     // its CSS class (stroke), and "legend-<cls>" for its legend
  std::string legend;  // the legend's text; empty: none
  const std::vector<int64_t>* time_ns = nullptr;  // ascending
  const std::vector<int64_t>* bytes = nullptr;    // the value from each time to the next
};

struct MemoryChartMarker {
  int64_t time_ns = 0;
  std::string title;  // shown on hover
};

struct MemoryChart {
  std::string title;        // the SVG's <title>
  int64_t t0 = 0;           // the time axis starts here (0 ms)
  int64_t end_ns = 0;       // and ends here
  std::vector<MemoryChartCurve> curves;  // drawn in order; the first is the one whose peak is marked
  int64_t peak_bytes = 0;
  int64_t peak_time_ns = 0;
  std::vector<MemoryChartMarker> markers;  // class "marker"
};

// The chart as an <svg> element.
void write_memory_chart(Markup& m, const MemoryChart& chart);

}  // namespace ptprof::detail
