// ptprof/cuda_memory_history.h: CUDA memory snapshots from a running job
// (docs/memory-snapshots.md). The CUDA caching allocator records every allocation, free and
// segment change with the stack that made it (the C++ side of Python's
// torch.cuda.memory._record_memory_history), and ptprof writes its snapshot, the pickle
// pytorch.org/memory_viz and 'ptprof memory' read:
//   - with each saved window, beside each trace file the handlers wrote
//     (<trace name>.memory_snapshot.pickle; 'ptprof memory' and memory_viz open it);
//   - at an out-of-memory error, from the allocator's OOM observer:
//     <dir>/<worker>.<unix ns>.oom.memory_snapshot.pickle.
// The on-demand trigger file's CUDA_MEMORY=1 records the history for that window only.
// Only where ptprof was built against a libtorch with CUDA, and a GPU is visible; otherwise one
// warning (kUnavailable) and the traces as before.
#pragma once

#include <cstddef>
#include <string>

namespace ptprof {

struct CudaMemoryHistoryOptions {
  // Record the history while the session runs (from its start to stop()), a snapshot with
  // each saved window and at OOM.
  bool enabled = false;
  // Trace entries the allocator keeps per device, the oldest dropped first (its ring). Each
  // costs its stack's frames (shared) and ~100 bytes.
  std::size_t max_entries = 100000;
  // Each entry's C++ stack, through libtorch's unwinder (what makes the snapshot useful, and
  // most of its cost: a few microseconds per allocation). false: entries without stacks.
  bool cpp_stacks = true;
  // A snapshot when an allocation fails for lack of memory (at most max_oom_dumps per
  // session: a job that catches OOMs and retries would write one per try).
  bool dump_on_oom = true;
  int max_oom_dumps = 3;
  // Where the OOM snapshots go, and also each window's when set (<worker>.<unix ns>
  // .memory_snapshot.pickle). Empty: windows' beside their traces, OOMs' in the directory of
  // the last trace written, or the working directory before any.
  std::string dir;
};

}  // namespace ptprof
