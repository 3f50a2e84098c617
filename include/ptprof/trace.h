// ptprof/trace.h: one finished profiling window: its events, threads, devices, metadata.
//
// A Trace is what trace handlers receive and what ProfileSession keeps as the result of the
// last window. It owns the strings its events' names point into, so copies share them.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ptprof/distributed_info.h"
#include "ptprof/event.h"
#include "ptprof/key_averages.h"

namespace ptprof {

struct ThreadInfo {
  int64_t tid = 0;          // OS thread id
  uint64_t logical_id = 0;  // RecordFunction's thread id
  std::string name;         // pthread name
};

struct DeviceProperties {
  int32_t id = 0;
  std::string name;
  int64_t total_global_mem = 0;
  int32_t compute_major = 0;
  int32_t compute_minor = 0;
  int32_t max_threads_per_block = 0;
  int32_t max_threads_per_multiprocessor = 0;
  int32_t regs_per_block = 0;
  int32_t warp_size = 0;
  int64_t shared_mem_per_block = 0;
  int32_t num_sms = 0;
  int32_t regs_per_multiprocessor = 0;
  int64_t shared_mem_per_block_optin = 0;
  int64_t shared_mem_per_multiprocessor = 0;
};

class Trace {
 public:
  Trace();

  // Events in no particular cross-thread order; on each thread CPU events are in start order
  // and `parent` links give the exact nesting.
  std::vector<Event> events;
  std::vector<MemoryEvent> memory_events;  // profile_memory, in time order
  // record_shapes: Event::inputs indexes it; ops that had the same inputs share an entry.
  std::vector<std::vector<OpInput>> op_inputs;
  // with_stack: symbolized native frames, outermost first; Event::stack indexes it. A stack
  // cut at the depth bound starts with the frame "<truncated>" (its outer frames are gone).
  std::vector<std::vector<std::string>> stacks;
  // Collectives' arguments (Event::collective indexes it; a kernel shares its op's entry).
  std::vector<CollectiveInfo> collectives;
  // CUDA graph nodes whose work is in the trace (Event::graph_node indexes it; the replays of
  // one node share its entry).
  std::vector<GraphNodeInfo> graph_nodes;
  // Python's traces with with_stack: the Python tracer's calls, in no particular order.
  std::vector<PythonFunction> python_functions;
  std::vector<ThreadInfo> threads;
  std::vector<DeviceProperties> devices;

  int64_t pid = 0;
  std::string process_name;
  std::string worker_name;
  int64_t window_start_ns = 0;  // Unix epoch ns
  int64_t window_end_ns = 0;
  int64_t window_index = 0;    // 0 for the first saved window of the session
  std::vector<int64_t> steps;  // step numbers recorded in this window

  // Events that could not be recorded (memory budget): in all, and by kind ("cpu_op" for ops
  // and ranges, "memory" for [memory] events).
  uint64_t dropped_events = 0;
  std::map<std::string, uint64_t> dropped_by_kind;
  // Who this process was in a distributed job: written as "distributedInfo" in torch.profiler's
  // form (json.dumps spacing: HTA finds the rank with "rank":\s+(\d+)), and read back from it.
  std::optional<DistributedInfo> distributed;
  // Top-level keys written into the trace as-is; each value must be valid JSON text. A trace
  // read from a file whose distributedInfo holds more than `distributed` does (keys this model
  // has not, another order or spacing) keeps that text here under "distributedInfo", and the
  // writer puts it back instead of `distributed`: a round trip loses nothing.
  std::map<std::string, std::string> metadata;
  // Why GPU data is absent, when CUDA was asked for and could not be collected.
  std::string gpu_unavailable_reason;

  // Copies `s` into storage owned by this trace and returns a view of it (for builders).
  std::string_view intern(std::string_view s);

  // torch.profiler's key_averages(); see ptprof/key_averages.h. group_by_stack_n > 0 also
  // groups by the innermost group_by_stack_n frames of each op's stack (with_stack), as
  // torch.profiler's group_by_stack_n does.
  KeyAverages key_averages(bool group_by_input_shape = false, int group_by_stack_n = 0) const;
  // The GPU kernels of the trace by name: calls, total, average, min, max.
  KernelTable kernel_table() const;

  struct SaveOptions {
    // Written for TensorBoard's PyTorch Profiler plugin, the release on PyPI (0.4.3) and its
    // last source alike, rather than in PyTorch's exact current schema. Three differences,
    // each checked against both plugins and Holistic Trace Analysis, which reads either form
    // the same (tests/gpu/check_real_gpu_consumers.py):
    //  - runtime and driver calls are written with the category "Runtime" (PyTorch 1.8's)
    //    instead of "cuda_runtime"/"cuda_driver", which the release does not know: with them it
    //    shows no GPU time for any operator and does not extend steps to their kernels;
    //  - data-loader ranges ("enumerate(DataLoader)#...") are "cpu_op" instead of
    //    "user_annotation", which the release drops: it would show DataLoader 0;
    //  - the GPU spans of ProfilerStep#N are left out: both plugins take every event named
    //    ProfilerStep#N for a step, a GPU span too, and would show each step twice.
    bool tensorboard = false;
  };

  // Chrome-trace JSON as torch.profiler's export_chrome_trace writes it; ".gz" compresses.
  // Written to a temporary file and renamed. Throws ptprof::Error naming the path on failure.
  void save(const std::string& path) const { save(path, SaveOptions{}); }
  // Reads a trace file back: ptprof's, or any torch.profiler has written since PyTorch 1.8,
  // .json or .json.gz (told by its first bytes). Streams it: memory is what the Trace holds.
  // Throws ptprof::Error naming the file and, for malformed content, the byte offset.
  static Trace load(const std::string& path);
  void save(const std::string& path, const SaveOptions& options) const;
  std::string to_json() const;

  // Recomputes parent, depth and self time of CPU events from their intervals per thread.
  void rebuild_tree();
  // Sorts memory_events by time and sets each one's op: the innermost CPU event on its thread
  // that contains it (after rebuild_tree()).
  void attribute_memory();

  // torch.profiler's export_stacks: one "frame;frame;...;frame value" line per distinct stack
  // (the collapsed format of flamegraph.pl, speedscope and inferno), value in microseconds of
  // `metric`: "self_cpu_time_total" or "self_cuda_time_total". A path ending in ".svg" gets a
  // self-contained SVG flame graph instead. Needs with_stack; throws ptprof::Error otherwise.
  void export_stacks(const std::string& path,
                     const std::string& metric = "self_cpu_time_total") const;
  // Allocated memory over time per device (profile_memory): ".json" writes the curves,
  // ".html" a self-contained page with a plot. Throws ptprof::Error without memory events.
  void export_memory_timeline(const std::string& path) const;

 private:
  std::shared_ptr<void> strings_;  // opaque string storage shared by copies
};

}  // namespace ptprof
