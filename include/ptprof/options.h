// ptprof/options.h: everything a ProfileSession can be asked to do, as one plain struct.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ptprof/cuda_memory_history.h"
#include "ptprof/distributed_info.h"
#include "ptprof/flight_recorder.h"
#include "ptprof/log.h"
#include "ptprof/schedule.h"
#include "ptprof/trace_handler.h"

namespace ptprof {

enum class Activity {
  CPU,   // ATen ops, autograd, user ranges (RecordFunction)
  CUDA,  // kernels, copies, memsets, runtime/driver calls (CUPTI)
};

enum class CudaTracing {
  // CUPTI callbacks on the launch, copy, memset, synchronization and graph-launch calls only:
  // they link GPU work to its call and op and time the call ("cuda_runtime" events); no
  // runtime/driver API records, no external correlation per op. Kernels replayed by a CUDA
  // graph are attributed to the op that captured their node.
  Lean,
  // What torch.profiler (Kineto) enables: runtime and driver API records of every call, and
  // each op's id pushed as CUPTI external correlation. More calls in the trace, more cost.
  Classic,
};

// A binary that links ptprof but leaves it unconfigured can be switched on from the
// environment: each variable fills what the Options leave unset, when a session starts.
//   PTPROF_LOGDIR=DIR          on_trace_ready = {tensorboard_trace_handler(DIR)}
//   PTPROF_SCHEDULE=W,U,A[,R[,S]]  schedule = {wait, warmup, active, repeat, skip_first}
//   PTPROF_TRIGGER_FILE, PTPROF_TRIGGER_SIGNAL, PTPROF_ON_DEMAND_ONLY: see below.
//   PTPROF_FLIGHT_RECORDER=1   flight_recorder.enabled (dumps under PTPROF_LOGDIR/flight);
//   PTPROF_FLIGHT_RECORDER_HANG_S=T  flight_recorder.hang_seconds. With no session at all, the
//                              recorder runs from the moment ptprof is loaded.
// A variable that cannot be parsed is an error naming it (ptprof::Error from the session).
// The launcher's variables fill `distributed` (below); ptprof does not own them, so a bad one
// is a warning, not an error.

struct Options {
  // What to collect. CUDA without a usable GPU/CUPTI degrades to CPU with one warning.
  std::vector<Activity> activities{Activity::CPU};

  // Without a schedule everything from construction to stop() is one trace and no
  // ProfilerStep#N ranges are emitted (as torch.profiler without `schedule`).
  std::optional<Schedule> schedule;

  // Called, in order, with each finished trace. A handler that throws is reported and
  // the others still run.
  std::vector<TraceHandlerPtr> on_trace_ready;

  // Op inputs: "Input Dims", "Input type", ... in the trace; also the arguments of c10d's
  // collective ops ("Collective name", "In msg nelems", "Process Group Ranks", "Seq", ...),
  // which are read from their inputs. NCCL's record_param_comms has its arguments either way.
  bool record_shapes = false;
  bool profile_memory = false;  // "[memory]" events from c10's allocators
  bool with_stack = false;      // native C++ stack of each op at entry ("Call stack")
  bool with_flops = false;      // estimated FLOPs of matmuls, convolutions, attention, ...
  int max_stack_depth = 64;     // with_stack: innermost frames kept; deeper stacks are cut

  // Name of this process in traces; empty: "<hostname>_<pid>" (torch.profiler's default),
  // "<hostname>_<pid>_rank<R>" in a distributed job.
  std::string worker_name;

  // Written as each trace's "distributedInfo" ({"backend": ..., "rank": R, "world_size": N,
  // "pg_count": ..., "pg_config": [...]}, as torch.profiler writes it: Holistic Trace Analysis
  // finds each rank's file by it). From a c10d group: ptprof::distributed_info(*pg). Groups
  // not given here are completed from those the window's collectives used (as Kineto does), and
  // with nothing else known the rank and world size are those of the default group's. Unset:
  // from the launcher's environment, the first of RANK and WORLD_SIZE (torchrun, c10d's env://),
  // OMPI_COMM_WORLD_RANK and _SIZE (Open MPI), PMI_RANK and PMI_SIZE (MPICH, Intel MPI),
  // SLURM_PROCID and SLURM_NTASKS (srun); none of them: a single process, no distributedInfo.
  std::optional<DistributedInfo> distributed;

  // Upper bound on host memory for the CPU events of one window: its records while it
  // records, plus the Trace built from them when it closes (an op is counted at what it costs
  // through both, ~4x its record). When a window outgrows it, new events are dropped and
  // counted (see Trace::dropped_events), and the session warns once. The background writer
  // may still hold the previous window's trace while the next is built (at most one: step()
  // waits until the writer has taken it before building the next).
  std::size_t max_event_memory_bytes = std::size_t{1} << 30;

  // CUPTI activity buffers: size of each, and the cap on all of them together. Records CUPTI
  // cannot place are dropped, counted, and reported.
  std::size_t gpu_buffer_bytes = std::size_t{4} << 20;
  std::size_t max_gpu_buffer_bytes = std::size_t{128} << 20;

  // How CUDA activity is collected (docs/gpu.md). Both link every kernel, copy and memset to
  // its launch and op; Lean costs less per launch. Classic stays the default until
  // scripts/gpu-check has shown on a GPU that Lean links every kernel as Classic does.
  CudaTracing cuda_tracing = CudaTracing::Classic;
  // CUDA graphs: one GPU event per graph launch (CUPTI's graph trace) instead of one per
  // kernel, copy and memset the launch replays. Cheaper for graphs of many nodes; the nodes'
  // own work, and which op captured each, are then not in the trace.
  bool cuda_graph_launches_only = false;

  // At the end of each saved window, ptprof's report of it (ptprof/report.h: the step
  // breakdown, why the GPU sat idle, ranked findings): its summary through `log` (kInfo), and
  // the report saved as JSON and HTML in a "reports" folder beside each trace file the handlers
  // wrote (<dir>/reports/<trace file>.report.json and .report.html): not in the trace's own
  // folder, where Holistic Trace Analysis takes every .json for a trace. The same as
  // report_handler("", log) after on_trace_ready (ptprof/trace_handler.h); run with them.
  bool report = false;

  // On demand: capture a window in a running job, without a restart. When the trigger file
  // changes (a stat() of it at most every trigger_check_interval_ms, from step()), its
  // KEY=VALUE lines name the window: STEPS, WARMUP, START_STEP or ROUNDUP (ranks that see it
  // before then all start at the same step, the next multiple of ROUNDUP), OUTPUT (a log
  // directory), RECORD_SHAPES, PROFILE_MEMORY, WITH_STACK, WITH_FLOPS, REPORT, CUDA_MEMORY
  // (docs/on-demand.md).
  // A file already there when the session starts counts as a change. Empty: the environment's
  // PTPROF_TRIGGER_FILE, if any. A request that comes while a window is recording is refused
  // with a warning; a bad file is reported with its line and key, never fatal.
  std::string trigger_file;
  int64_t trigger_check_interval_ms = 100;  // 0: at every step
  // Opt-in signal (e.g. SIGUSR1): its handler only sets a flag, and the next step() reads the
  // trigger file at once, or, with none, records the default window (1 warmup, 3 active steps)
  // to on_trace_ready. 0: PTPROF_TRIGGER_SIGNAL ("SIGUSR1", "USR2", a number), if set.
  int trigger_signal = 0;
  // Record only windows asked for on demand; the schedule is not used. Also set by
  // PTPROF_ON_DEMAND_ONLY=1.
  bool on_demand_only = false;

  // Run trace handlers on a ptprof thread, so writing a large trace does not stall step().
  // At most one finished window waits to be written; stop() waits for all of them.
  bool write_in_background = true;

  // Where the session's messages go: each warning and error (also kept, with its code, in the
  // session's Status), and notes such as an on-demand window armed or a window's report
  // summary. ptprof writes nothing to stdout. Default: stderr, "[ptprof] warning: ..." lines.
  // nullptr: nothing is printed.
  LogSink log = log_to_stderr;
  // The always-on flight recorder (ptprof/flight_recorder.h, docs/flight-recorder.md): every
  // op, range and collective of the session's life kept in bounded per-thread rings, beside
  // the scheduled and on-demand windows, dumped when asked, on a hang (no step() for
  // hang_seconds) or a crash. Its dumps' messages go through `log`.
  FlightRecorderOptions flight_recorder;
  // CUDA memory snapshots (ptprof/cuda_memory_history.h): the caching allocator's history
  // recorded while the session runs, its snapshot (memory_viz's pickle) written with each
  // saved window and at an out-of-memory error. The trigger file's CUDA_MEMORY=1 asks for it
  // in one window.
  CudaMemoryHistoryOptions cuda_memory_history;
};

}  // namespace ptprof
