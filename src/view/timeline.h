// timeline.h: the Trace view's queries, answered from the index's columns (timeline_format.h)
// without the trace: slices at a level of detail, counters, one slice's details, search and
// launch flows. Every answer is JSON; times are ns after the trace's origin (tl.meta).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "trace/json_writer.h"
#include "view/index_file.h"
#include "view/slice_detail.h"
#include "view/string_table.h"
#include "view/timeline_format.h"

namespace ptprof::view {

class Timeline {
 public:
  // Throws ptprof::Error when the index's timeline sections do not fit together.
  explicit Timeline(std::shared_ptr<const IndexFile> index);

  std::string_view meta_json() const { return index_->section("tl.meta"); }

  // The slices of `tracks` (every track when empty) that overlap [t0, t1), the window drawn
  // `px` pixels wide: per lane, of the slices starting in each bucket of (t1 - t0) / (2 px) ns
  // (buckets aligned to multiples of their width, so a pan reuses them) the longest one, with
  // how many it stands for, and the one reaching in from before t0. So an answer holds at most
  // 2 slices per pixel per depth, however many the trace has. Each lane's "id" and "start"
  // arrays hold differences: from the lane's first slice ("first") and from t0 for the first, from the
  // one before for the others.
  // `lanes` (lane indexes: a track's are first_lane + depth), when not empty, narrows the
  // answer to those: the page asks for the lanes it shows.
  std::string slices_json(int64_t t0, int64_t t1, int px, const std::vector<uint32_t>& tracks,
                          const std::vector<uint64_t>& lanes = {}) const;
  // Memory counters over [t0, t1) in `px` buckets: per bucket with points, the allocated
  // bytes' min, max and last value and the reserved bytes' max, and the values before t0.
  std::string counters_json(int64_t t0, int64_t t1, int px) const;
  // One slice: its event as the trace file has it (name, category, times, args) and the other
  // end of its launch flow. Throws ptprof::Error for an id out of range.
  std::string event_json(uint64_t id) const;
  // Slices whose name contains `query` (ASCII case ignored): how many, and the first `limit`
  // by start time.
  std::string search_json(std::string_view query, int limit) const;
  // Flows overlapping [t0, t1), at most `limit`: launch flows (launch -> GPU activity, kind
  // 0), then autograd's links (forward op -> backward node, kind 1); a window with more says
  // so instead ("too_many"). Each: [from, to, from's start, to's start, from's track and
  // depth, to's track and depth, kind].
  std::string flows_json(int64_t t0, int64_t t1, int limit) const;

  uint64_t slices() const { return start_.size(); }
  uint64_t lanes() const { return lanes_.size(); }

 private:
  uint64_t longest(const Lane& l, uint64_t i, uint64_t j) const;
  SliceDetail detail(uint64_t s) const;
  // {id, name, start_ns, dur_ns, track, depth} of slice s.
  void write_slice(detail::JsonWriter& w, uint64_t s) const;

  std::shared_ptr<const IndexFile> index_;
  Column<Lane> lanes_;
  Column<int64_t> start_, dur_, max64_, max4096_;
  Column<uint32_t> name_;
  std::string_view detail_;     // tl.detail: SliceDetail encodings
  Column<uint64_t> detail_at_;  // where each starts
  Column<Flow> flows_;
  Column<Flow> fwdbwd_;  // autograd's forward op -> backward node links
  StringTable names_, inputs_, stacks_, collectives_;
  std::vector<std::vector<uint64_t>> lanes_of_track_;
  struct Counter {
    Column<int64_t> time, allocated, reserved;
  };
  std::vector<Counter> counters_;
  int64_t max_flow_span_ = 0;  // the longest launch-to-activity-end of any flow
  int64_t max_fwdbwd_span_ = 0;  // the longest forward-op-to-backward-node-end of any link
};

}  // namespace ptprof::view
