// cupti_graphs.h: which op captured each CUDA graph node, so that the work a graph launch
// replays is attributed to that op rather than to whatever launched the graph.
//
// CUPTI reports a node's creation on the thread that creates it, inside the captured launch
// call (CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED), and each copy that instantiation makes
// (GRAPHNODE_CLONED); replayed GPU records carry the copy's node id. The table keeps, per node
// id, the ids of the ops open at capture and, once known, their names: from the recorder at
// capture (OpenOpsHook), else from the first window whose trace holds those ops.
//
// One table per process (CUPTI's callbacks are plain functions), kept across sessions: a graph
// captured under one session and replayed under the next is still attributed. Nodes leave it
// once destroyed and the window that may hold their last replays has closed. Capture,
// instantiation and destruction are rare: a mutex and allocations are fine here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "gpu/gpu_backend.h"
#include "ptprof/trace.h"

namespace ptprof::detail {

struct GraphCapture {
  uint32_t graph_id = 0;      // the graph the node was created in
  std::vector<uint64_t> ops;  // ids of the ops and ranges open at capture, outermost first
  bool named = false;
  std::string captured_by;          // the innermost of them
  std::vector<std::string> ranges;  // the user ranges among them, outermost first, steps left out
  bool destroyed = false;
};

using GraphCaptureMap = std::unordered_map<uint64_t, GraphCapture>;

class GraphCaptures {
 public:
  static GraphCaptures& get();  // never destroyed

  // A node created while `open` were open (outermost first). Names may be null (not known
  // yet). A node already known (a copy reported first) is left as it is.
  void created(uint64_t node, uint32_t graph, const OpenOp* open, std::size_t n);
  // `node` is a copy of `original` (instantiation, cudaGraphClone): it inherits its capture.
  void cloned(uint64_t node, uint32_t graph, uint64_t original);
  void destroyed(uint64_t node);
  // Names the captures whose innermost op `trace` holds (its cpu_op and user_annotation
  // events by External id).
  void name_from(const Trace& trace);
  GraphCaptureMap snapshot() const;
  // Drops destroyed nodes (no window to come can hold their work).
  void forget_destroyed();
  void clear();
  std::size_t size() const;

 private:
  GraphCaptures() = default;
  mutable std::mutex mu_;
  GraphCaptureMap nodes_;
};

}  // namespace ptprof::detail
