// timeline_format.h: the timeline's columns in the index (written by timeline_index.cpp, read
// by timeline.cpp).
//
// Every event is a slice on a track (a host thread, or a GPU stream) at a depth (its nesting
// there). The slices of one (track, depth) are a lane: they never overlap, and are stored by
// start time, so a time range is two binary searches away and at most one slice from before
// it reaches into it. Per lane, the longest duration of each block of 64 slices and of each
// block of 4096 answer "the longest slice among these" in O(64) reads, which is what level of
// detail needs (Perfetto's mipmap, with blocks instead of a segment tree).
//
// A slice's id is its position in the columns (lane after lane). Sections:
//   tl.meta        JSON: origin, tracks, counters (see timeline_index.cpp)
//   tl.lanes       Lane[]
//   tl.start       int64[]: start, ns after the origin
//   tl.dur         int64[]: duration, ns
//   tl.name        uint32[]: index into the names table
//   tl.max64       int64[]: longest duration per 64 slices of each lane (Lane::max64)
//   tl.max4096     int64[]: the same per 4096
//   tl.detail      the rest of each slice's event, SliceDetail (slice_detail.h) encoded
//   tl.detail.at   uint64[n + 1]: where each slice's detail starts in tl.detail
//   tl.flows       Flow[]: launch -> GPU activity, by the launch's start
//   names.*, inputs.*, stacks.*, collectives.*  string tables (text + uint64 offsets[n + 1]);
//                  inputs, stacks and collectives as the JSON the details pane shows
//   counter.<i>.time/.allocated/.reserved  memory counters per device (int64[])
#pragma once

#include <cstdint>

namespace ptprof::view {

constexpr uint64_t kBlock = 64;
constexpr uint64_t kBlock2 = 64 * 64;

struct Lane {
  uint32_t track = 0;
  uint32_t depth = 0;
  uint64_t first = 0;     // first slice
  uint64_t count = 0;
  uint64_t max64 = 0;     // first entry in tl.max64
  uint64_t max4096 = 0;   // first entry in tl.max4096
};

struct Flow {
  int64_t start = 0;  // the launch's start
  uint64_t from = 0;  // slice ids
  uint64_t to = 0;
};

}  // namespace ptprof::view
