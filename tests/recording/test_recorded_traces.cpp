// Traces recorded by a session, read back: every option round-trips byte-identical and field by
// field, as files the command reads (plain, gzip'ed, concatenated gzip members).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <tuple>

#include "test_util.h"
#include "trace/byte_source.h"
#include "trace/trace_reader.h"

namespace ptprof {
namespace {

using test::gzip;
using test::write_file;

TEST(TraceReader, ReadsBackWhatTheSessionRecorded) {
  test::Mlp model;
  ProfileSession s;
  test::train_step(model);
  s.stop();
  const Trace& original = *s.last_trace();
  const Trace back = detail::parse_trace(original.to_json(), "memory");
  ASSERT_EQ(back.events.size(), original.events.size());
  const KeyAverages a = original.key_averages();
  const KeyAverages b = back.key_averages();
  ASSERT_EQ(a.rows.size(), b.rows.size());
  for (const KeyAverage& r : a.rows) {
    const KeyAverage* o = b.find(r.key);
    ASSERT_NE(o, nullptr) << r.key;
    EXPECT_EQ(o->count, r.count) << r.key;
    // ns precision survives the µs text with three decimals.
    EXPECT_EQ(o->cpu_time_total_ns, r.cpu_time_total_ns) << r.key;
  }
}


std::string join(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

// of kind Other is written as None's (no type, no dims): the file cannot tell them apart.
std::string describe(const OpInput& in) {
  using Kind = OpInput::Kind;
  const Kind kind = in.kind == Kind::Other ? Kind::None : in.kind;
  std::string s = "kind=" + std::to_string(static_cast<int>(kind)) + " dtype=" + in.dtype +
                  " sizes=" + join(in.sizes) + " strides=" + join(in.strides) + " lists=";
  for (const auto& l : in.list_sizes) s += join(l);
  char scalar[40];
  std::snprintf(scalar, sizeof(scalar), "%.17g", in.scalar);
  return s + " concrete=" + in.concrete + " scalar=" + scalar;
}

std::string describe(const CollectiveInfo& c) {
  std::ostringstream o;
  o << c.name << "|" << c.dtype << "|" << c.in_nelems << "|" << c.out_nelems << "|" << c.group_size
    << "|" << c.in_split << "|" << c.out_split << "|" << c.pg_name << "|" << c.pg_desc << "|"
    << c.pg_ranks << "|" << c.rank << "|" << c.global_rank_start << "|" << c.global_rank_stride
    << "|" << c.seq;
  return o.str();
}

// Everything the trace file carries of one event (the writer writes each kind's own args),
// and what the reader derives from it (nesting, self time).
std::string describe(const Trace& t, const Event& e) {
  std::ostringstream o;
  o << category(e.kind) << " " << e.name << " start=" << e.start_ns << " dur=" << e.duration_ns
    << " pid=" << e.pid << " tid=" << e.tid << " flow=" << e.flow_start << e.flow_end;
  const bool cpu = e.kind == EventKind::CpuOp || e.kind == EventKind::UserAnnotation;
  if (e.kind != EventKind::Overhead) o << " ext=" << e.external_id;
  if (cpu) {
    o << " rfid=" << e.record_function_id << " seq=" << e.sequence_nr
      << " fwd=" << (e.sequence_nr >= 0 ? e.fwd_thread_id : 0) << " finished=" << e.finished
      << " flops=" << e.flops << " parent=" << e.parent << " depth=" << e.depth
      << " self=" << e.self_ns;
    o << " inputs=";
    if (e.inputs >= 0)
      for (const OpInput& in : t.op_inputs.at(e.inputs)) o << "{" << describe(in) << "}";
    o << " stack=";
    if (e.stack >= 0)
      for (const std::string& f : t.stacks.at(e.stack)) o << f << "|";
  }
  if (e.collective >= 0) o << " coll=" << describe(t.collectives.at(e.collective));
  switch (e.kind) {
    case EventKind::Kernel: {
      const KernelInfo& k = e.kernel;
      o << " corr=" << e.correlation << " device=" << e.device << " stream=" << e.stream
        << " grid=" << k.grid[0] << "," << k.grid[1] << "," << k.grid[2] << " block=" << k.block[0]
        << "," << k.block[1] << "," << k.block[2] << " regs=" << k.registers_per_thread
        << " smem=" << k.shared_memory << " ctx=" << k.context << " queued=" << k.queued
        << " bpsm=" << k.blocks_per_sm << " wpsm=" << k.warps_per_sm << " occ=" << k.occupancy_pct;
      break;
    }
    case EventKind::Memcpy:
    case EventKind::Memset:
      o << " corr=" << e.correlation << " device=" << e.device << " stream=" << e.stream
        << " bytes=" << e.transfer.bytes << " ctx=" << e.transfer.context
        << " kinds=" << int{e.transfer.copy_kind} << "," << int{e.transfer.src_kind} << ","
        << int{e.transfer.dst_kind};
      break;
    case EventKind::CudaRuntime:
    case EventKind::CudaDriver:
      o << " cbid=" << e.cbid << " corr=" << e.correlation;
      break;
    case EventKind::CudaSync:
      o << " corr=" << e.correlation << " device=" << e.device << " stream=" << e.stream;
      break;
    default:
      break;
  }
  return o.str();
}

// The reader's trace equals `original` in everything the file carries.
void expect_same_trace(const Trace& original, const Trace& back) {
  ASSERT_EQ(back.events.size(), original.events.size());
  for (std::size_t i = 0; i < original.events.size(); ++i)
    EXPECT_EQ(describe(back, back.events[i]), describe(original, original.events[i])) << i;
  ASSERT_EQ(back.memory_events.size(), original.memory_events.size());
  for (std::size_t i = 0; i < original.memory_events.size(); ++i) {
    const MemoryEvent& a = original.memory_events[i];
    const MemoryEvent& b = back.memory_events[i];
    EXPECT_EQ(std::make_tuple(b.time_ns, b.pid, b.tid, b.address, b.bytes, b.total_allocated,
                              b.total_reserved, b.device_type, b.device_index, b.op),
              std::make_tuple(a.time_ns, a.pid, a.tid, a.address, a.bytes, a.total_allocated,
                              a.total_reserved, a.device_type, a.device_index, a.op))
        << i;
  }
  ASSERT_EQ(back.threads.size(), original.threads.size());
  for (std::size_t i = 0; i < original.threads.size(); ++i) {
    EXPECT_EQ(back.threads[i].tid, original.threads[i].tid);
    // A thread without a name is labelled with the process's.
    EXPECT_EQ(back.threads[i].name,
              original.threads[i].name.empty() ? original.process_name : original.threads[i].name);
  }
  ASSERT_EQ(back.devices.size(), original.devices.size());
  for (std::size_t i = 0; i < original.devices.size(); ++i) {
    const DeviceProperties& a = original.devices[i];
    const DeviceProperties& b = back.devices[i];
    EXPECT_EQ(
        std::make_tuple(b.id, b.name, b.total_global_mem, b.compute_major, b.compute_minor,
                        b.max_threads_per_block, b.max_threads_per_multiprocessor, b.regs_per_block,
                        b.warp_size, b.shared_mem_per_block, b.num_sms, b.regs_per_multiprocessor,
                        b.shared_mem_per_block_optin, b.shared_mem_per_multiprocessor),
        std::make_tuple(a.id, a.name, a.total_global_mem, a.compute_major, a.compute_minor,
                        a.max_threads_per_block, a.max_threads_per_multiprocessor, a.regs_per_block,
                        a.warp_size, a.shared_mem_per_block, a.num_sms, a.regs_per_multiprocessor,
                        a.shared_mem_per_block_optin, a.shared_mem_per_multiprocessor));
  }
  EXPECT_EQ(back.pid, original.pid);
  EXPECT_EQ(back.process_name, original.process_name);
  EXPECT_EQ(back.window_start_ns, original.window_start_ns);
  EXPECT_EQ(back.window_end_ns, original.window_end_ns);
  EXPECT_EQ(back.window_index, original.window_index);
  EXPECT_EQ(back.steps, original.steps);
  EXPECT_EQ(back.dropped_events, original.dropped_events);
  EXPECT_EQ(back.dropped_by_kind, original.dropped_by_kind);
  EXPECT_EQ(back.metadata, original.metadata);
  EXPECT_EQ(back.gpu_unavailable_reason, original.gpu_unavailable_reason);
}

// A window recorded with every option on (two steps, a user range, forward and backward on
// two threads), then a GPU part as the CUPTI backend would add it (no GPU here), with every
// kind and field the writer has.
Trace every_option_trace() {
  Options o;
  o.record_shapes = true;
  o.profile_memory = true;
  o.with_stack = true;
  o.with_flops = true;
  o.schedule = Schedule{0, 0, 2, 1};
  std::shared_ptr<Trace> out;
  o.on_trace_ready = {callback_handler([&](const Trace& t) { out = std::make_shared<Trace>(t); })};
  test::Mlp model;
  {
    ProfileSession s(o);
    for (int i = 0; i < 2; ++i) {
      {
        PTPROF_RANGE("train");
        test::train_step(model);
        auto x = torch::ones({4, 4});
        torch::cat({x, x}, 1).add_(1.5).mul(torch::tensor(2));  // TensorList, Scalar inputs
        torch::sum(x, {0}, false);                              // a ScalarList input
      }
      s.step();
    }
  }
  EXPECT_TRUE(out);
  Trace t = *out;
  EXPECT_FALSE(t.stacks.empty());
  EXPECT_FALSE(t.op_inputs.empty());
  EXPECT_FALSE(t.memory_events.empty());
  EXPECT_EQ(t.steps, (std::vector<int64_t>{0, 1}));

  const Event* op = nullptr;
  const Event* range = nullptr;
  for (const Event& e : t.events) {
    if (!op && e.kind == EventKind::CpuOp && e.external_id != 0) op = &e;
    if (!range && e.kind == EventKind::UserAnnotation && e.name == "train") range = &e;
  }
  EXPECT_TRUE(op && range);
  const Event cpu = *op;
  const uint64_t range_id = range->external_id;

  DeviceProperties d;
  d.id = 0;
  d.name = "NVIDIA H200";
  d.total_global_mem = 150109880320;
  d.compute_major = 9;
  d.max_threads_per_block = 1024;
  d.max_threads_per_multiprocessor = 2048;
  d.regs_per_block = 65536;
  d.warp_size = 32;
  d.shared_mem_per_block = 49152;
  d.num_sms = 132;
  d.regs_per_multiprocessor = 65536;
  d.shared_mem_per_block_optin = 232448;
  d.shared_mem_per_multiprocessor = 233472;
  t.devices.push_back(d);
  t.metadata["cupti_version"] = "130001";
  t.metadata["cuda_runtime_version"] = "13000";
  t.metadata["distributedInfo"] =
      R"({"backend": "nccl", "rank": 0, "world_size": 2, "pg_config": [{"ranks": [0, 1]}]})";
  t.metadata["ptprof_dropped_events"] = R"({"cpu_op": 3, "memory": 1})";
  t.dropped_events = 4;
  t.dropped_by_kind = {{"cpu_op", 3}, {"memory", 1}};
  t.metadata["ptprof_gpu_unavailable"] = R"("no \"GPU\"\n here")";
  t.gpu_unavailable_reason = "no \"GPU\"\n here";

  auto add = [&](EventKind kind, const char* name, int64_t at, int64_t dur) -> Event& {
    Event e;
    e.kind = kind;
    e.name = t.intern(name);
    e.start_ns = cpu.start_ns + at;
    e.duration_ns = dur;
    t.events.push_back(e);
    return t.events.back();
  };
  auto launch = [&](EventKind kind, const char* name, int64_t at, uint64_t corr, int32_t cbid) {
    Event& e = add(kind, name, at, 1789);
    e.pid = cpu.pid;
    e.tid = cpu.tid;
    e.external_id = cpu.external_id;
    e.correlation = corr;
    e.cbid = cbid;
    e.flow_start = true;
  };
  auto on_gpu = [&](EventKind kind, const char* name, int64_t at, uint64_t corr) -> Event& {
    Event& e = add(kind, name, at, 3333);
    e.pid = 0;
    e.tid = 7;
    e.device = 0;
    e.stream = 7;
    e.external_id = cpu.external_id;
    e.correlation = corr;
    e.flow_end = true;
    return e;
  };
  launch(EventKind::CudaRuntime, "cudaLaunchKernel", 11, 900001, 211);
  Event& k = on_gpu(EventKind::Kernel, "void gemm<float, 128>(int, float const*)", 7001, 900001);
  k.kernel = KernelInfo{{1, 512, 1}, {128, 1, 1}, 166, 16896, 1, 12, 3.8787879f, 15.515152f, 19};
  launch(EventKind::CudaDriver, "cuLaunchKernel", 20011, 900002, 307);
  on_gpu(EventKind::Kernel, "triton_poi_fused_add_0", 27001, 900002).kernel.block[0] = 64;
  launch(EventKind::CudaRuntime, "cudaMemcpyAsync", 40011, 900003, 41);
  Event& copy = on_gpu(EventKind::Memcpy, "Memcpy HtoD (Pageable -> Device)", 47001, 900003);
  copy.transfer = TransferInfo{4096, 1, 1, 1, 3};
  launch(EventKind::CudaRuntime, "cudaMemsetAsync", 60011, 900004, 51);
  Event& set = on_gpu(EventKind::Memset, "Memset (Device)", 67001, 900004);
  set.transfer = TransferInfo{512, 1, 0, 0, 3};
  set.duration_ns = 0;  // the bandwidth is "N/A"
  Event& sync = on_gpu(EventKind::CudaSync, "Stream Sync", 80001, 900005);
  sync.flow_end = false;
  sync.external_id = 0;
  Event& span = on_gpu(EventKind::GpuUserAnnotation, "train", 6999, 0);
  span.external_id = range_id;
  span.device = -1;  // not in the file: a span has pid/tid only
  span.stream = -1;
  span.flow_end = false;
  Event& overhead = add(EventKind::Overhead, "Buffer Flush", 90001, 2500);
  overhead.pid = -1;
  overhead.tid = 0;
  Event& unfinished = add(EventKind::CpuOp, "aten::still_running", 95001, 1000);
  unfinished.pid = cpu.pid;
  unfinished.tid = cpu.tid + 1000000;  // a thread of its own, outside the recorded nesting
  unfinished.finished = false;
  unfinished.external_id = 123456789;
  unfinished.record_function_id = 987654321;
  unfinished.sequence_nr = 42;
  unfinished.fwd_thread_id = 3;
  unfinished.flops = uint64_t{1} << 40;
  // A collective: its op and its NCCL kernel carry its arguments.
  CollectiveInfo c;
  c.name = "allreduce";
  c.dtype = "BFloat16";
  c.in_nelems = 1024;
  c.out_nelems = 2048;
  c.group_size = 2;
  c.in_split = "[]";
  c.out_split = "[512, 512]";
  c.pg_name = "0";
  c.pg_desc = "default_pg";
  c.pg_ranks = "[0, 1]";
  c.rank = 0;
  c.global_rank_start = 0;
  c.global_rank_stride = 1;
  c.seq = 7;
  t.collectives.push_back(c);
  unfinished.collective = 0;
  Event& nccl = on_gpu(EventKind::Kernel, "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", 96001, 0);
  nccl.collective = 0;
  nccl.flow_end = false;
  t.rebuild_tree();
  t.attribute_memory();
  return t;
}

// ---- round trips -------------------------------------------------------------------------------

TEST(TraceReader, EveryOptionRoundTripsByteIdenticalAndFieldByField) {
  const Trace original = every_option_trace();
  const std::string json = original.to_json();
  const Trace back = detail::parse_trace(json, "round trip");
  expect_same_trace(original, back);
  // Written again: the same bytes.
  const std::string again = back.to_json();
  EXPECT_EQ(again.size(), json.size());
  EXPECT_TRUE(again == json)
      << "first difference at byte "
      << std::mismatch(again.begin(), again.end(), json.begin(), json.end()).first - again.begin();
  // Each kind of input and detail is there to be compared.
  std::set<OpInput::Kind> kinds;
  for (const auto& list : back.op_inputs)
    for (const OpInput& in : list) kinds.insert(in.kind);
  using Kind = OpInput::Kind;
  for (Kind k : {Kind::None, Kind::Tensor, Kind::TensorList, Kind::Scalar, Kind::ScalarList})
    EXPECT_TRUE(kinds.count(k)) << static_cast<int>(k);
  int flops = 0, flows = 0;
  for (const Event& e : back.events) {
    flops += e.flops > 0;
    flows += e.flow_start + e.flow_end;
  }
  EXPECT_GT(flops, 0);
  EXPECT_EQ(flows, 8);
}

TEST(TraceReader, FilesReadAsTheCommandReadsThem) {
  // Through files, plain and gzip'ed, as `ptprof` reads them: the same trace as from memory.
  const Trace original = every_option_trace();
  test::TempDir dir;
  const std::string json = original.to_json();
  for (const char* name : {"/t.json", "/t.json.gz", "/gzip_without_gz_suffix.json"}) {
    const std::string path = dir.path() + name;
    if (std::string(name).find("suffix") != std::string::npos) {
      write_file(path, gzip(json));
    } else {
      original.save(path);
    }
    const Trace back = detail::read_trace(path);
    expect_same_trace(original, back);
    EXPECT_TRUE(back.to_json() == json) << path;
  }
}

TEST(TraceReader, ConcatenatedGzipMembersAreOneStream) {
  // `cat a.gz b.gz` (what zcat and TensorBoard read), with members cut anywhere, even inside a
  // token, and an empty member.
  const Trace original = every_option_trace();
  const std::string json = original.to_json();
  test::TempDir dir;
  const std::string path = dir.path() + "/members.json.gz";
  const std::size_t cut1 = json.find("\"ts\": ") + 8;  // inside a number
  const std::size_t cut2 = json.size() / 2;
  write_file(path, gzip(json.substr(0, cut1)) + gzip("") + gzip(json.substr(cut1, cut2 - cut1)) +
                       gzip(json.substr(cut2), 1));
  EXPECT_EQ(detail::read_trace_file(path), json);
  const Trace back = detail::read_trace(path);
  expect_same_trace(original, back);
}

}  // namespace
}  // namespace ptprof
