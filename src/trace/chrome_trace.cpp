#include "trace/chrome_trace.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <tuple>
#include <utility>

#include "ptprof/error.h"
#include "ptprof/trace.h"
#include "trace/arg_keys.h"
#include "trace/clock.h"
#include "trace/distributed_info.h"
#include "trace/fwd_bwd.h"

namespace ptprof::detail {

namespace {

// Kineto's GPU process sort index base (kExceedMaxPid).
constexpr int64_t kGpuSortIndexBase = 5000000;
constexpr int64_t kSpansSortIndex = 536870912;

void write_dims(JsonWriter& w, const std::vector<int64_t>& dims) {
  w.begin_array();
  for (int64_t d : dims) w.value(d);
  w.end_array();
}

// PyTorch's record_shapes args: one entry per input in each list.
void write_inputs(JsonWriter& w, const std::vector<OpInput>& inputs) {
  using Kind = OpInput::Kind;
  w.key(arg_keys::kInputDims).begin_array();
  for (const OpInput& in : inputs) {
    if (in.kind == Kind::Tensor) {
      write_dims(w, in.sizes);
    } else if (in.kind == Kind::TensorList) {
      w.begin_array();
      for (const auto& d : in.list_sizes) write_dims(w, d);
      w.end_array();
    } else {
      w.begin_array().end_array();
    }
  }
  w.end_array();
  w.key(arg_keys::kInputType).begin_array();
  for (const OpInput& in : inputs) w.value(in.dtype);
  w.end_array();
  w.key(arg_keys::kInputStrides).begin_array();
  for (const OpInput& in : inputs) {
    if (in.kind == Kind::Tensor) {
      write_dims(w, in.strides);
    } else {
      w.begin_array().end_array();
    }
  }
  w.end_array();
  w.key(arg_keys::kConcreteInputs).begin_array();
  for (const OpInput& in : inputs) w.value(in.concrete);
  w.end_array();
}

// The collective's args, in the order Kineto writes them; what is not known is left out.
void write_collective(JsonWriter& w, const Trace& t, const Event& e) {
  if (e.collective < 0 || static_cast<std::size_t>(e.collective) >= t.collectives.size()) return;
  const CollectiveInfo& c = t.collectives[static_cast<std::size_t>(e.collective)];
  auto text = [&](std::string_view key, const std::string& v) {
    if (!v.empty()) w.key(key).value(v);
  };
  auto number = [&](std::string_view key, int64_t v) {
    if (v >= 0) w.key(key).value(v);
  };
  text(arg_keys::kCollName, c.name);
  number(arg_keys::kInNelems, c.in_nelems);
  number(arg_keys::kOutNelems, c.out_nelems);
  number(arg_keys::kGroupSize, c.group_size);
  text(arg_keys::kDtype, c.dtype);
  text(arg_keys::kInSplit, c.in_split);
  text(arg_keys::kOutSplit, c.out_split);
  text(arg_keys::kPgName, c.pg_name);
  text(arg_keys::kPgDesc, c.pg_desc);
  text(arg_keys::kPgRanks, c.pg_ranks);
  number(arg_keys::kRank, c.rank);
  number(arg_keys::kGlobalRankStart, c.global_rank_start);
  number(arg_keys::kGlobalRankStride, c.global_rank_stride);
  number(arg_keys::kSeq, c.seq);
}

// GPU work replayed by a CUDA graph: its node and what captured it (ptprof's args; Kineto
// writes none for graphs). Ranges are joined with ';', as "Call stack" joins frames.
void write_graph_node(JsonWriter& w, const Trace& t, const Event& e) {
  if (e.graph_node < 0 || static_cast<std::size_t>(e.graph_node) >= t.graph_nodes.size()) return;
  const GraphNodeInfo& g = t.graph_nodes[static_cast<std::size_t>(e.graph_node)];
  w.key(arg_keys::kGraphId).value(g.graph_id);
  if (g.node_id != 0) w.key(arg_keys::kGraphNode).value(g.node_id);
  if (!g.captured_by.empty()) w.key(arg_keys::kCapturedBy).value(g.captured_by);
  if (!g.capture_ranges.empty()) {
    std::string joined;
    for (std::string_view r : g.capture_ranges) {
      if (!joined.empty()) joined += ';';
      joined += r;
    }
    w.key(arg_keys::kCaptureRanges).value(joined);
  }
}

void write_cpu_args(JsonWriter& w, const Trace& t, const Event& e, uint64_t index) {
  w.key("args").begin_object();
  if (e.external_id != 0) w.key(arg_keys::kExternalId).value(e.external_id);
  if (e.inputs >= 0 && static_cast<std::size_t>(e.inputs) < t.op_inputs.size())
    write_inputs(w, t.op_inputs[e.inputs]);
  if (e.flops != 0) w.key(arg_keys::kFlops).value(e.flops);
  write_collective(w, t, e);
  if (e.stack >= 0 && static_cast<std::size_t>(e.stack) < t.stacks.size()) {
    std::string joined;
    for (const std::string& f : t.stacks[e.stack]) {
      if (!joined.empty()) joined += ';';
      joined += f;
    }
    w.key(arg_keys::kCallStack).value(joined);
  }
  w.key(arg_keys::kRecordFunctionId).value(e.record_function_id);
  if (e.sequence_nr >= 0) {
    w.key(arg_keys::kFwdThreadId).value(e.fwd_thread_id);
    w.key(arg_keys::kSequenceNumber).value(e.sequence_nr);
  }
  w.key(arg_keys::kEvIdx).value(index);
  if (!e.finished) w.key(arg_keys::kFinished).value(false);
  w.end_object();
}

void write_gpu_args(JsonWriter& w, const Trace& t, const Event& e) {
  w.key("args").begin_object();
  if (e.external_id != 0) w.key(arg_keys::kExternalId).value(e.external_id);
  switch (e.kind) {
    case EventKind::Kernel: {
      const KernelInfo& k = e.kernel;
      w.key(arg_keys::kQueued).value(k.queued);
      w.key(arg_keys::kDevice).value(e.device);
      w.key(arg_keys::kContext).value(k.context);
      w.key(arg_keys::kStream).value(e.stream);
      w.key(arg_keys::kCorrelation).value(e.correlation);
      w.key(arg_keys::kRegisters).value(k.registers_per_thread);
      w.key(arg_keys::kSharedMemory).value(k.shared_memory);
      w.key(arg_keys::kBlocksPerSm).value(static_cast<double>(k.blocks_per_sm));
      w.key(arg_keys::kWarpsPerSm).value(static_cast<double>(k.warps_per_sm));
      w.key(arg_keys::kGrid)
          .begin_array()
          .value(k.grid[0])
          .value(k.grid[1])
          .value(k.grid[2])
          .end_array();
      w.key(arg_keys::kBlock)
          .begin_array()
          .value(k.block[0])
          .value(k.block[1])
          .value(k.block[2])
          .end_array();
      w.key(arg_keys::kOccupancy).value(k.occupancy_pct);
      write_collective(w, t, e);  // an NCCL kernel: its collective's, as Kineto copies them
      write_graph_node(w, t, e);
      break;
    }
    case EventKind::Memcpy:
    case EventKind::Memset: {
      w.key(arg_keys::kDevice).value(e.device);
      w.key(arg_keys::kContext).value(e.transfer.context);
      w.key(arg_keys::kStream).value(e.stream);
      w.key(arg_keys::kCorrelation).value(e.correlation);
      w.key(arg_keys::kBytes).value(e.transfer.bytes);
      if (e.duration_ns > 0) {
        w.key(arg_keys::kBandwidth)
            .value(static_cast<double>(e.transfer.bytes) / static_cast<double>(e.duration_ns));
      } else {
        w.key(arg_keys::kBandwidth).value("N/A");
      }
      write_graph_node(w, t, e);
      break;
    }
    case EventKind::CudaRuntime:
    case EventKind::CudaDriver:
      w.key(arg_keys::kCbid).value(e.cbid);
      w.key(arg_keys::kCorrelation).value(e.correlation);
      break;
    case EventKind::CudaSync:
      w.key(arg_keys::kStream).value(e.stream);
      w.key(arg_keys::kCorrelation).value(e.correlation);
      w.key(arg_keys::kDevice).value(e.device);
      break;
    default:
      break;
  }
  w.end_object();
}

template <typename ArgsFn>
void write_meta(JsonWriter& w, const char* name, uint64_t ts, int64_t pid, int64_t tid,
                const char* arg, ArgsFn&& value) {
  w.begin_object();
  w.key("name").value(name);
  w.key("ph").value("M");
  w.key("ts").value_us(ts);
  w.key("pid").value(pid);
  w.key("tid").value(tid);
  w.key("args").begin_object().key(arg);
  value(w);
  w.end_object().end_object();
}

}  // namespace

namespace {
// The category TensorBoard's plugin, release and last source, reads right (Trace::SaveOptions).
const char* tensorboard_category(const Event& e) {
  if (e.kind == EventKind::CudaRuntime || e.kind == EventKind::CudaDriver) return "Runtime";
  if (e.kind == EventKind::UserAnnotation && is_dataloader_name(e.name)) return "cpu_op";
  return category(e.kind);
}
}  // namespace

void check_metadata(const Trace& t) {
  // The keys write_chrome_trace writes itself: a reader would take either of two.
  static const char* const kOwn[] = {"schemaVersion", "deviceProperties",    "displayTimeUnit",
                                     "traceEvents",   "baseTimeNanoseconds", "traceName"};
  for (const auto& [key, value] : t.metadata) {
    std::string quoted;
    JsonWriter::escape_into(quoted, key);
    for (const char* own : kOwn) {
      if (key == own)
        throw Error("ptprof: Trace::metadata key " + quoted +
                    " is one of the trace's own top-level keys; use another name");
    }
    // Inside the top-level object: one level less than the writer's bound.
    const std::string problem = json_problem(value, JsonWriter::kMaxDepth - 1);
    if (!problem.empty()) {
      std::string shown;
      JsonWriter::escape_into(shown, std::string_view(value).substr(0, 80));
      throw Error("ptprof: Trace::metadata[" + quoted + "] is not valid JSON (" + problem +
                  "); each value is written into the trace as it is, so it must be JSON text, "
                  "e.g. a quoted string. The value" +
                  (value.size() > 80 ? " begins " : " is ") + shown);
    }
  }
}

int64_t earliest_time_ns(const Trace& t) {
  int64_t earliest = std::min(t.window_start_ns, t.window_end_ns);
  for (const Event& e : t.events) earliest = std::min(earliest, e.start_ns);
  for (const MemoryEvent& m : t.memory_events) earliest = std::min(earliest, m.time_ns);
  return earliest;
}

void write_event_args(JsonWriter& w, const Trace& t, const Event& e, uint64_t index) {
  if (e.kind == EventKind::CpuOp || e.kind == EventKind::UserAnnotation) {
    write_cpu_args(w, t, e, index);
  } else if (e.kind == EventKind::GpuUserAnnotation) {
    w.key("args").begin_object().key(arg_keys::kExternalId).value(e.external_id).end_object();
  } else if (e.kind != EventKind::Overhead) {
    write_gpu_args(w, t, e);
  }
}

void write_trace_events(const Trace& t, JsonWriter& w, int64_t base_ns, const EventPlacement& p,
                        const Trace::SaveOptions& options) {
  // Unsigned: a trace spanning most of the int64 range has offsets beyond INT64_MAX.
  auto rel = [base_ns, &p](int64_t unix_ns) {
    return static_cast<uint64_t>(unix_ns) + static_cast<uint64_t>(p.shift_ns) -
           static_cast<uint64_t>(base_ns);
  };
  const int64_t cpu_pid = p.cpu_pid >= 0 ? p.cpu_pid : t.pid;
  auto host_pid = [&](int64_t pid) { return pid == t.pid ? cpu_pid : pid; };
  auto device_pid = [&](int64_t dev) { return p.gpu_pid_base >= 0 ? p.gpu_pid_base + dev : dev; };
  auto pid_of = [&](const Event& e) {
    return is_gpu(e.kind) ? device_pid(e.pid) : host_pid(e.pid);
  };
  // A flow's end at `e`: "ac2g" (launch to GPU activity, id = correlation) or "fwdbwd"
  // (forward op to backward node, ids from 1), as Kineto writes them.
  auto flow = [&](const Event& e, bool start, uint64_t id, const char* cat) {
    w.newline().begin_object();
    w.key("ph").value(start ? "s" : "f");
    w.key("id").value(id + p.flow_id_base);
    w.key("pid").value(pid_of(e));
    w.key("tid").value(e.tid);
    w.key("ts").value_us(rel(e.start_ns));
    w.key("cat").value(cat);
    w.key("name").value(cat);
    if (!start) w.key("bp").value("e");
    w.end_object();
  };
  // The fwdbwd flows' ends by event position: (position, id, start).
  std::vector<std::tuple<std::size_t, uint64_t, bool>> fwdbwd;
  {
    const std::vector<FwdBwdLink> links = fwd_bwd_links(t.events);
    fwdbwd.reserve(2 * links.size());
    for (std::size_t i = 0; i < links.size(); ++i) {
      fwdbwd.emplace_back(links[i].forward, i + 1, true);
      fwdbwd.emplace_back(links[i].backward, i + 1, false);
    }
    std::sort(fwdbwd.begin(), fwdbwd.end());
  }
  std::size_t next_fwdbwd = 0;

  // Activities, each followed by its flow event (Kineto's order).
  std::set<std::pair<int64_t, int64_t>> streams;  // (device, stream) of GPU events
  std::set<int64_t> gpu_devices;
  uint64_t index = 0;
  for (const Event& e : t.events) {
    if (options.tensorboard && e.kind == EventKind::GpuUserAnnotation && is_step_name(e.name))
      continue;
    w.newline().begin_object();
    w.key("ph").value("X");
    w.key("cat").value(options.tensorboard ? tensorboard_category(e) : category(e.kind));
    w.key("name").value(e.name);
    w.key("pid").value(pid_of(e));
    w.key("tid").value(e.tid);
    w.key("ts").value_us(rel(e.start_ns));
    w.key("dur").value_us(e.duration_ns > 0 ? e.duration_ns : 0);
    write_event_args(w, t, e, index);
    w.end_object();
    if (e.flow_start) flow(e, true, static_cast<uint64_t>(e.correlation), "ac2g");
    if (e.flow_end) flow(e, false, static_cast<uint64_t>(e.correlation), "ac2g");
    const std::size_t position = static_cast<std::size_t>(&e - t.events.data());
    for (; next_fwdbwd < fwdbwd.size() && std::get<0>(fwdbwd[next_fwdbwd]) <= position;
         ++next_fwdbwd) {
      const auto& [at, id, start] = fwdbwd[next_fwdbwd];
      if (at == position) flow(e, start, id, "fwdbwd");
    }
    if (is_gpu(e.kind) && e.kind != EventKind::Overhead) {
      streams.emplace(e.pid, e.tid);
      gpu_devices.insert(e.pid);
    }
    ++index;
    w.maybe_flush();
  }

  // profile_memory: instant events in time order (TensorBoard asserts that order).
  for (const MemoryEvent& m : t.memory_events) {
    w.newline().begin_object();
    w.key("ph").value("i");
    w.key("cat").value("cpu_instant_event");
    w.key("s").value("t");
    w.key("name").value("[memory]");
    w.key("pid").value(host_pid(m.pid));
    w.key("tid").value(m.tid);
    w.key("ts").value_us(rel(m.time_ns));
    w.key("args").begin_object();
    w.key(arg_keys::kTotalReserved).value(m.total_reserved);
    w.key(arg_keys::kTotalAllocated).value(m.total_allocated);
    w.key(arg_keys::kMemBytes).value(m.bytes);
    w.key(arg_keys::kAddr).value(m.address);
    w.key(arg_keys::kDeviceId).value(static_cast<int64_t>(m.device_index));
    w.key(arg_keys::kDeviceType).value(static_cast<int64_t>(m.device_type));
    w.key(arg_keys::kEvIdx).value(index++);
    w.end_object().end_object();
    w.maybe_flush();
  }

  const uint64_t ts0 = rel(t.window_start_ns);
  const std::string& pname = p.process_name.empty() ? t.process_name : p.process_name;
  auto str = [](const std::string& s) { return [&s](JsonWriter& w) { w.value(s); }; };
  auto num = [](int64_t v) { return [v](JsonWriter& w) { w.value(v); }; };
  write_meta(w.newline(), "process_name", ts0, cpu_pid, 0, arg_keys::kName, str(pname));
  const std::string cpu_label = "CPU";
  write_meta(w.newline(), "process_labels", ts0, cpu_pid, 0, arg_keys::kLabels, str(cpu_label));
  write_meta(w.newline(), "process_sort_index", ts0, cpu_pid, 0, "sort_index",
             num(p.sort_index >= 0 ? p.sort_index : t.pid));
  for (const DeviceProperties& d : t.devices) gpu_devices.insert(d.id);
  for (int64_t dev : gpu_devices) {
    const std::string label = "GPU " + std::to_string(dev);
    write_meta(w.newline(), "process_name", ts0, device_pid(dev), 0, arg_keys::kName, str(pname));
    write_meta(w.newline(), "process_labels", ts0, device_pid(dev), 0, arg_keys::kLabels,
               str(label));
    write_meta(w.newline(), "process_sort_index", ts0, device_pid(dev), 0, "sort_index",
               num(p.sort_index >= 0 ? p.sort_index + 1 + dev : kGpuSortIndexBase + dev));
  }
  for (const ThreadInfo& th : t.threads) {
    const std::string label =
        "thread " + std::to_string(th.tid) + " (" + (th.name.empty() ? pname : th.name) + ")";
    write_meta(w.newline(), "thread_name", ts0, cpu_pid, th.tid, arg_keys::kName, str(label));
    write_meta(w.newline(), "thread_sort_index", ts0, cpu_pid, th.tid, "sort_index", num(th.tid));
  }
  for (const auto& [dev, stream] : streams) {
    const std::string label = "stream " + std::to_string(stream) + " ";  // Kineto's trailing space
    write_meta(w.newline(), "thread_name", ts0, device_pid(dev), stream, arg_keys::kName,
               str(label));
    write_meta(w.newline(), "thread_sort_index", ts0, device_pid(dev), stream, "sort_index",
               num(stream));
  }

  // The profiler span of the window.
  w.newline().begin_object();
  w.key("ph").value("X");
  w.key("cat").value("Trace");
  w.key("ts").value_us(ts0);
  // The reader requires a window that does not end before it starts.
  w.key("dur").value_us(t.window_end_ns > t.window_start_ns ? rel(t.window_end_ns) - ts0
                                                            : uint64_t{0});
  w.key("pid").value("Spans");
  w.key("tid").value("PyTorch Profiler");
  w.key("name").value(p.span_name.empty()
                          ? "PyTorch Profiler (" + std::to_string(t.window_index) + ")"
                          : p.span_name);
  w.key("args").begin_object().key("Op count").value(int64_t{0}).end_object();
  w.end_object();
}

void write_spans_sort_index(JsonWriter& w, uint64_t ts) {
  w.newline().begin_object();
  w.key("name").value("process_sort_index");
  w.key("ph").value("M");
  w.key("ts").value_us(ts);
  w.key("pid").value("Spans");
  w.key("tid").value(int64_t{0});
  w.key("args").begin_object().key("sort_index").value(kSpansSortIndex).end_object();
  w.end_object();
}

void write_trace_header(JsonWriter& w, const std::vector<DeviceProperties>& devices,
                        const std::map<std::string, std::string>& metadata,
                        const std::optional<DistributedInfo>& distributed, int64_t base_ns) {
  w.begin_object();
  w.key("schemaVersion").value(int64_t{1});
  w.newline().key("deviceProperties").begin_array();
  for (const DeviceProperties& d : devices) {
    w.begin_object();
    w.key("id").value(d.id);
    w.key("name").value(d.name);
    w.key("totalGlobalMem").value(d.total_global_mem);
    w.key("computeMajor").value(d.compute_major);
    w.key("computeMinor").value(d.compute_minor);
    w.key("maxThreadsPerBlock").value(d.max_threads_per_block);
    w.key("maxThreadsPerMultiprocessor").value(d.max_threads_per_multiprocessor);
    w.key("regsPerBlock").value(d.regs_per_block);
    w.key("warpSize").value(d.warp_size);
    w.key("sharedMemPerBlock").value(d.shared_mem_per_block);
    w.key("numSms").value(d.num_sms);
    w.key("regsPerMultiprocessor").value(d.regs_per_multiprocessor);
    w.key("sharedMemPerBlockOptin").value(d.shared_mem_per_block_optin);
    w.key("sharedMemPerMultiprocessor").value(d.shared_mem_per_multiprocessor);
    w.end_object();
  }
  w.end_array();
  // distributedInfo where a metadata key of that name would sort (std::map's order).
  const std::string kDistributed = "distributedInfo";
  bool distributed_left = distributed.has_value() && metadata.count(kDistributed) == 0;
  for (const auto& [k, v] : metadata) {
    if (distributed_left && kDistributed < k) {
      w.newline().key(kDistributed).raw(distributed_info_json(*distributed));
      distributed_left = false;
    }
    w.newline().key(k).raw(v);
  }
  if (distributed_left) w.newline().key(kDistributed).raw(distributed_info_json(*distributed));
  w.newline().key("displayTimeUnit").value("ms");
  w.newline().key("baseTimeNanoseconds").value(base_ns);
  w.newline().key("traceEvents").begin_array();
}

void write_trace_trailer(JsonWriter& w, std::string_view trace_name) {
  w.newline().end_array();
  w.newline().key("traceName").value(trace_name);
  w.newline().end_object();
  w.finish();
}

void write_chrome_trace(const Trace& t, JsonWriter& w, std::string_view trace_name,
                        const Trace::SaveOptions& options) {
  // Before the first byte: a bad value leaves no partial trace behind.
  check_metadata(t);
  // The base comes from the trace's own earliest time, not the process's clock: a trace read
  // back from another period (or one with times before this process's base) must still be
  // written as offsets >= 0 that the reader accepts. A trace of this run gets Kineto's base.
  const int64_t base = trace_base_time_ns(earliest_time_ns(t));
  auto rel = [base](int64_t unix_ns) {
    return static_cast<uint64_t>(unix_ns) - static_cast<uint64_t>(base);
  };

  write_trace_header(w, t.devices, t.metadata, t.distributed, base);
  write_trace_events(t, w, base, EventPlacement{}, options);
  const uint64_t ts0 = rel(t.window_start_ns);
  write_spans_sort_index(w, ts0);
  w.newline().begin_object();
  w.key("name").value("Iteration Start: PyTorch Profiler");
  w.key("ph").value("i");
  w.key("s").value("g");
  w.key("pid").value("Traces");
  w.key("tid").value("Trace PyTorch Profiler");
  w.key("ts").value_us(ts0);
  w.end_object();
  w.newline().begin_object();
  w.key("name").value("Record Window End");
  w.key("ph").value("i");
  w.key("s").value("g");
  w.key("pid").value("");
  w.key("tid").value("");
  w.key("ts").value_us(rel(t.window_end_ns));
  w.end_object();
  write_trace_trailer(w, trace_name);
}

namespace {

std::string errno_text(int err) {
  return std::strerror(err);
}

class FileSink final : public Sink {
 public:
  FileSink(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  void write(const char* data, std::size_t size) override {
    while (size > 0) {
      const ssize_t n = ::write(fd_, data, size);
      if (n < 0) {
        if (errno == EINTR) continue;
        throw Error("ptprof: cannot write trace file " + path_ + ": " + errno_text(errno));
      }
      data += n;
      size -= static_cast<std::size_t>(n);
    }
  }

 private:
  int fd_;
  std::string path_;
};

class GzipSink final : public Sink {
 public:
  GzipSink(Sink& out, std::string path) : out_(out), path_(std::move(path)) {
    std::memset(&zs_, 0, sizeof(zs_));
    // windowBits 15 + 16: gzip framing. Level 3 keeps writing fast while compressing traces
    // (repetitive JSON) by a large factor.
    if (deflateInit2(&zs_, 3, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
      throw Error("ptprof: cannot start gzip for " + path_);
  }
  ~GzipSink() override { deflateEnd(&zs_); }
  void write(const char* data, std::size_t size) override { pump(data, size, Z_NO_FLUSH); }
  void finish() { pump(nullptr, 0, Z_FINISH); }

 private:
  void pump(const char* data, std::size_t size, int flush) {
    zs_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data));
    zs_.avail_in = static_cast<uInt>(size);
    int rc;
    do {
      zs_.next_out = reinterpret_cast<Bytef*>(buf_);
      zs_.avail_out = sizeof(buf_);
      rc = deflate(&zs_, flush);
      if (rc == Z_STREAM_ERROR) throw Error("ptprof: gzip failed for " + path_);
      out_.write(buf_, sizeof(buf_) - zs_.avail_out);
    } while (zs_.avail_out == 0 || (flush == Z_FINISH && rc != Z_STREAM_END));
  }

  Sink& out_;
  std::string path_;
  z_stream zs_;
  char buf_[1 << 16];
};

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Temporary files being written; removed by an exit hook if the process ends mid-write, so
// nothing half-written is left behind (the renamed, final files are always complete).
std::mutex& in_flight_mu() {
  static auto* mu = new std::mutex();
  return *mu;
}
std::set<std::string>& in_flight() {
  static auto* s = new std::set<std::string>();
  return *s;
}
bool g_exiting = false;  // under in_flight_mu(): set by the exit hook
void remove_in_flight() {
  std::lock_guard<std::mutex> lock(in_flight_mu());
  g_exiting = true;  // a writer thread that has not created its file yet must not now
  for (const std::string& p : in_flight()) ::unlink(p.c_str());
}

// Registered when the library is loaded, before any user static exists, so that it runs
// after their destructors (atexit order is reversed): a session destroyed in static
// destruction finishes its writes first, and only what is still in flight after that goes.
__attribute__((constructor(101))) void register_in_flight_cleanup() {
  std::atexit(remove_in_flight);
}

// A temporary file, created and registered in one step under the lock the exit hook takes,
// so that the hook sees every temporary that exists. Its name is unique in the process (the
// pid and a counter), so two writes of one path, from two threads or two handlers, never share
// one; O_EXCL skips a file an earlier process with the same pid left behind. It owns the
// descriptor and, unless renamed into place, removes the file when it goes.
class InFlight {
 public:
  InFlight(const std::string& dir, const std::string& base, const std::string& final_path) {
    std::lock_guard<std::mutex> lock(in_flight_mu());
    if (g_exiting)
      throw Error("ptprof: trace file " + final_path + " not written: the process is exiting");
    static uint64_t counter = 0;  // under in_flight_mu()
    for (int attempt = 0;; ++attempt) {
      // A hidden name that matches no viewer's file pattern (".json"/".gz" suffixes).
      path_ = dir + "." + base + "." + std::to_string(::getpid()) + "." +
              std::to_string(counter++) + ".tmp";
      fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
      if (fd_ >= 0) break;
      if (errno != EEXIST || attempt == 1000)
        throw Error("ptprof: cannot create trace file " + final_path + ": " + errno_text(errno));
    }
    in_flight().insert(path_);
  }
  ~InFlight() {
    if (fd_ >= 0) ::close(fd_);  // a failed write: the file goes, the result does not matter
    std::lock_guard<std::mutex> lock(in_flight_mu());
    if (!renamed_) ::unlink(path_.c_str());
    in_flight().erase(path_);
  }
  int fd() const { return fd_; }
  const std::string& path() const { return path_; }
  // Closes the descriptor, once: Linux releases it even when close() fails, so a second
  // close() could only hit a descriptor another thread has opened since.
  int close() {
    const int fd = fd_;
    fd_ = -1;
    return ::close(fd);
  }
  void renamed() { renamed_ = true; }

 private:
  std::string path_;
  int fd_ = -1;
  bool renamed_ = false;
};

// fsync, except where the file cannot be synced at all (EINVAL, EROFS: a pipe, a special or
// read-only filesystem), which is no failure of this write.
int sync_fd(int fd) {
  const int rc = ::fsync(fd);
  return rc != 0 && (errno == EINVAL || errno == EROFS) ? 0 : rc;
}

}  // namespace

void write_file_atomically(const std::string& path, const std::function<void(Sink&)>& body) {
  if (path.empty()) throw Error("ptprof: empty trace path");
  const auto slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  InFlight tmp(dir, base, path);
  {
    FileSink file(tmp.fd(), path);
    if (ends_with(path, ".gz")) {
      GzipSink gz(file, path);
      body(gz);
      gz.finish();
    } else {
      body(file);
    }
  }
  // The data is on disk before the rename makes it the file at `path`, so a power loss leaves
  // the old file or the new one there, never a partial one.
  if (sync_fd(tmp.fd()) != 0 || tmp.close() != 0) {
    const int err = errno;
    throw Error("ptprof: cannot write trace file " + path + ": " + errno_text(err));
  }
  if (::rename(tmp.path().c_str(), path.c_str()) != 0) {
    const int err = errno;
    throw Error("ptprof: cannot move trace file into place at " + path + ": " + errno_text(err));
  }
  tmp.renamed();
  // And the rename itself is on disk before we return. A directory that cannot be opened
  // (no read permission) cannot be synced: the file is in place regardless.
  const int dir_fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    const int rc = sync_fd(dir_fd);
    const int err = errno;
    ::close(dir_fd);
    if (rc != 0)
      throw Error("ptprof: trace file " + path +
                  " was written, but its directory could not be synced (it may not survive a "
                  "power loss): " +
                  errno_text(err));
  }
}

}  // namespace ptprof::detail
