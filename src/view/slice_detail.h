// slice_detail.h: what the timeline keeps of each event besides its start, duration and name
// (the details pane's: ids, self time, inputs, stack, collective, kernel launch data), encoded
// compactly: a mask of the fields that differ from their defaults, then those fields as
// variable-length integers. A host op takes ~25 bytes, a kernel ~45, against ~200 as plain
// structs: the index of a large trace is mostly these.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ptprof::view {

constexpr uint8_t kUnfinished = 1;
constexpr uint8_t kAsync = 2;

struct SliceDetail {
  uint8_t kind = 0;   // ptprof::EventKind
  uint8_t flags = 0;  // kUnfinished, kAsync
  uint32_t track = 0;
  uint32_t depth = 0;
  int64_t self_ns = 0;
  uint64_t external_id = 0;
  uint64_t correlation = 0;
  uint64_t flops = 0;
  int64_t sequence_nr = -1;
  uint64_t fwd_thread_id = 0;
  uint64_t record_function_id = 0;
  uint64_t thread_id = 0;
  int32_t inputs = -1;      // the index's "inputs" table
  int32_t stack = -1;       // "stacks"
  int32_t collective = -1;  // "collectives"
  int32_t cbid = 0;
  uint64_t flow = 0;  // the other end of its launch flow, slice id + 1; 0: none
  // GPU activity (kernels, copies, memsets, syncs): present when `gpu`.
  bool gpu = false;
  int32_t grid[3] = {0, 0, 0};
  int32_t block[3] = {0, 0, 0};
  int32_t registers_per_thread = 0;
  int32_t shared_memory = 0;
  float blocks_per_sm = 0;
  float warps_per_sm = 0;
  int32_t occupancy_pct = 0;
  int32_t device = -1;
  int64_t stream = -1;
  int64_t queued = 0;
  uint32_t context = 0;
  uint32_t transfer_context = 0;
  uint64_t bytes = 0;
  uint8_t copy_kind = 0, src_kind = 0, dst_kind = 0;
};

void encode_detail(const SliceDetail& d, std::string& out);
// Throws ptprof::Error on bytes that are no encoding (a damaged index).
SliceDetail decode_detail(std::string_view bytes);

}  // namespace ptprof::view
