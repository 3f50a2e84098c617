// timeline_index.h: a Trace's timeline written into its index (timeline_format.h): tracks,
// lanes by depth, columns by start, the details of each slice, launch flows and the memory
// counters.
#pragma once

#include <memory>

#include "ptprof/trace.h"
#include "view/index_file.h"

namespace ptprof::view {

// Laid out (tracks, depths, each lane's order, flows) when constructed, about 16 bytes per
// event besides the trace, which it reads and must outlive it; written by write() as columns.
class TimelineLayout {
 public:
  explicit TimelineLayout(const Trace& trace);
  ~TimelineLayout();
  void write(IndexWriter& w) const;

 private:
  struct Data;
  const Trace& t_;
  std::unique_ptr<Data> d_;
};

}  // namespace ptprof::view
