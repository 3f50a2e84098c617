// ptprof/event.h: one collected event, CPU or GPU, as handed to trace handlers.
//
// Times are int64 nanoseconds since the Unix epoch; conversion to the microseconds of the
// Chrome-trace format happens only in the trace writer.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ptprof {

enum class EventKind : uint8_t {
  CpuOp,              // ATen operator, autograd node ("cpu_op")
  UserAnnotation,     // ptprof::Range, RECORD_USER_SCOPE, ProfilerStep#N ("user_annotation")
  Kernel,             // GPU kernel ("kernel")
  Memcpy,             // GPU copy ("gpu_memcpy")
  Memset,             // GPU memset ("gpu_memset")
  CudaRuntime,        // cudaLaunchKernel, ... ("cuda_runtime")
  CudaDriver,         // cuLaunchKernel, ... ("cuda_driver")
  CudaSync,           // stream/event/context synchronization ("cuda_sync")
  GpuUserAnnotation,  // a user range projected onto a GPU stream ("gpu_user_annotation")
  Overhead,           // CUPTI's own overhead ("overhead")
};

// The trace category PyTorch's profiler writes for `kind`.
const char* category(EventKind kind);
bool is_gpu(EventKind kind);
// Whether `name` is a step range's, "ProfilerStep#...", matched by prefix as TensorBoard's
// plugin and HTA match it.
bool is_step_name(std::string_view name);
// Whether `name` is a data-loader range's as TensorBoard's plugin matches them
// ("enumerate(DataLoader)#....__next__" or "enumerate(DataPipe)#..."; ptprof::DataLoaderRange).
bool is_dataloader_name(std::string_view name);

// Launch geometry and resources of a kernel, as CUPTI reports them.
struct KernelInfo {
  int32_t grid[3] = {0, 0, 0};
  int32_t block[3] = {0, 0, 0};
  int32_t registers_per_thread = 0;
  int32_t shared_memory = 0;  // static + dynamic, bytes
  uint32_t context = 0;
  int64_t queued = 0;
  float blocks_per_sm = 0;
  float warps_per_sm = 0;
  int32_t occupancy_pct = 0;  // est. achieved occupancy %
};

// Bytes moved by a copy or memset, and its kinds (copy kind and src/dst memory kinds).
struct TransferInfo {
  uint64_t bytes = 0;
  uint32_t context = 0;
  uint8_t copy_kind = 0;
  uint8_t src_kind = 0;
  uint8_t dst_kind = 0;
};

// One input of an op, as record_shapes captures it (PyTorch's "Input Dims"/"Input type"/
// "Input Strides"/"Concrete Inputs").
struct OpInput {
  enum class Kind : uint8_t { None, Tensor, TensorList, Scalar, ScalarList, Other };
  Kind kind = Kind::None;
  std::string dtype;             // "float", "long int", "Scalar", "TensorList", "" ...
  std::vector<int64_t> sizes;    // Tensor: its sizes; ScalarList: the values (ints)
  std::vector<int64_t> strides;  // Tensor (strided layout only)
  std::vector<std::vector<int64_t>> list_sizes;  // TensorList: sizes of each element
  std::string concrete;  // Scalar / ScalarList: the value as text ("1", "0.5", "[1, 1]")
  double scalar = 0;     // Scalar: the value
};

// A collective's arguments, under PyTorch's names: what its profiler writes on NCCL's
// record_param_comms op and on the kernels it launched; ptprof also on the c10d ops of any
// backend (Gloo's included) where op inputs are recorded (record_shapes).
struct CollectiveInfo {
  std::string name;                 // "Collective name": "allreduce", "broadcast", ...
  std::string dtype;                // "dtype": "Float", ...
  int64_t in_nelems = -1;           // "In msg nelems"; -1: not known
  int64_t out_nelems = -1;          // "Out msg nelems"
  int64_t group_size = -1;          // "Group size"
  std::string in_split;             // "In split size": as PyTorch writes it, "[]" or "[2, 2]"
  std::string out_split;            // "Out split size"
  std::string pg_name;              // "Process Group Name": "0" for the default group
  std::string pg_desc;              // "Process Group Description": "default_pg", ...
  std::string pg_ranks;             // "Process Group Ranks": "[0, 1]"
  int64_t rank = -1;                // "Rank": this process's rank in the group
  int64_t global_rank_start = -1;   // "Global rank start"
  int64_t global_rank_stride = -1;  // "Global rank stride"
  int64_t seq = -1;  // "Seq": the group's count of collectives before this one (same on every
                     // rank for the same collective)
};

// GPU work that a CUDA graph launch replayed: the graph node that ran it and what was open on
// the thread that captured the node ("graph id", "graph node", "captured by", "capture ranges"
// in the trace). A graph launch's own event (Options::cuda_graph_launches_only) has node 0.
struct GraphNodeInfo {
  uint32_t graph_id = 0;  // CUPTI's id of the graph that ran
  uint64_t node_id = 0;   // CUPTI's id of the node
  // The innermost op or user range open when the node was captured; empty: not known.
  std::string_view captured_by;                  // owned by the Trace
  std::vector<std::string_view> capture_ranges;  // user ranges open then, outermost first
};

// A `[memory]` event: an allocation (bytes > 0) or free (bytes < 0) seen by profile_memory.
struct MemoryEvent {
  int64_t time_ns = 0;  // Unix epoch ns
  int64_t pid = 0;
  int64_t tid = 0;  // OS thread that allocated or freed
  uint64_t address = 0;
  int64_t bytes = 0;
  int64_t total_allocated = 0;
  int64_t total_reserved = 0;
  int8_t device_type = 0;    // c10::DeviceType: 0 CPU, 1 CUDA
  int8_t device_index = -1;  // -1 for CPU
  int64_t op = -1;           // index of the innermost op in Trace::events, -1 if none
};

// A Python function call that torch.profiler's Python tracer recorded (with_stack in Python:
// "python_function" events, "nn.Module: ..." for modules, "<built-in method ...>" for C
// functions). Read from Python's traces so the report can apply torch.profiler's pattern
// matchers, which look for them; ptprof records none, and Trace::save does not write them.
struct PythonFunction {
  std::string_view name;  // owned by the Trace that holds it
  int64_t start_ns = 0;   // Unix epoch ns
  int64_t duration_ns = 0;
  int64_t pid = 0;
  int64_t tid = 0;
};

struct Event {
  EventKind kind = EventKind::CpuOp;
  std::string_view name;  // owned by the Trace that holds the event
  int64_t start_ns = 0;   // Unix epoch ns
  int64_t duration_ns = 0;
  int64_t self_ns = 0;  // duration minus the durations of direct children (CPU events)

  // CPU events: process id and OS thread id. GPU events: device id and stream id.
  int64_t pid = 0;
  int64_t tid = 0;

  uint64_t external_id = 0;         // ptprof's id of the CPU op ("External id")
  uint64_t correlation = 0;         // CUPTI correlation id (runtime call <-> GPU activity)
  uint64_t record_function_id = 0;  // unique per CPU op in the process ("Record function id")
  int64_t sequence_nr = -1;         // autograd sequence number, -1 if none
  uint64_t fwd_thread_id = 0;       // backward ops: logical id of the forward thread
  uint64_t thread_id = 0;           // RecordFunction's logical thread id of the op
  int64_t parent = -1;              // index of the enclosing event in Trace::events(), -1 if root
  int32_t depth = 0;                // nesting depth on its thread
  bool finished = true;             // false: still running when the window closed
  bool is_async = false;
  bool flow_start = false;  // starts an "ac2g" flow (id = correlation): a launch
  bool flow_end = false;    // ends one: the GPU activity it launched

  // Details (record_shapes / with_stack / with_flops): indexes into the Trace's tables.
  int32_t inputs = -1;      // Trace::op_inputs
  int32_t stack = -1;       // Trace::stacks
  uint64_t flops = 0;       // estimated floating point operations, 0 if unknown
  int32_t collective = -1;  // Trace::collectives: a collective op, or a kernel it launched
  int32_t graph_node = -1;  // Trace::graph_nodes: GPU work replayed by a CUDA graph launch

  // CUDA runtime/driver calls.
  int32_t cbid = 0;
  // GPU activity.
  int32_t device = -1;
  int64_t stream = -1;
  KernelInfo kernel;
  TransferInfo transfer;
};

}  // namespace ptprof
