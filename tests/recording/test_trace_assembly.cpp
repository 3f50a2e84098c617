// Window assembly without a session: records as the recorder hands them over (Collected, built
// here by hand) -> the window's Trace.
#include <gtest/gtest.h>

#include <ATen/record_function.h>

#include <cstring>
#include <string>
#include <vector>

#include "recording/details.h"
#include "recording/recorder.h"
#include "recording/symbolizer.h"
#include "recording/trace_assembly.h"

namespace ptprof::detail {
namespace {

constexpr uint8_t kFunction = static_cast<uint8_t>(at::RecordScope::FUNCTION);
constexpr uint8_t kUser = static_cast<uint8_t>(at::RecordScope::USER_SCOPE);
constexpr int64_t kUnix = 1'700'000'000'000'000'000;  // Unix ns at CLOCK_MONOTONIC 0

RawRecord op(uint32_t name_id, int64_t start, int64_t end, uint64_t correlation,
             uint8_t scope = kFunction) {
  return RawRecord{start, end, correlation, 0, 7, 0, name_id, scope, 0, 0, kNoDetails};
}

// The details section of two float tensors, [2, 3] and [3, 4], dense.
std::string mm_inputs() {
  char buf[256];
  DetailWriter w(buf, sizeof buf);
  w.reserve(1);
  w.put<uint8_t>(2);
  for (const std::vector<int64_t>& sizes : {std::vector<int64_t>{2, 3}, {3, 4}}) {
    w.reserve(4 + 16);
    w.put<uint8_t>(static_cast<uint8_t>(OpInput::Kind::Tensor));
    w.put<int8_t>(6);  // c10::ScalarType::Float
    w.put<uint8_t>(kDenseStrides);
    w.put<uint8_t>(2);
    w.put_int64s(sizes.data(), 2);
  }
  return std::string(buf, static_cast<std::size_t>(w.pos() - buf));
}

struct Window {
  Collected records;
  WindowInfo info;
  Window() {
    info.pid = 4242;
    info.process_name = "trainer";
    info.worker_name = "host_4242";
    info.start_ns = 1000;
    info.end_ns = 10000;
    info.unix_offset_ns = kUnix;
    info.index = 3;
    info.steps = {5};
    records.names = {"aten::mm", "aten::add", "c10d::allreduce_"};
  }
  Trace build() {
    Trace t;
    Symbolizer symbolizer;
    assemble_trace(records, info, symbolizer, t);
    finish_trace(t);
    return t;
  }
};

const Event* find(const Trace& t, std::string_view name) {
  for (const Event& e : t.events)
    if (e.name == name) return &e;
  return nullptr;
}

TEST(TraceAssembly, RecordsBecomeTheWindowsEventsInUnixTime) {
  Window w;
  CollectedThread th;
  th.os_tid = 11;
  th.logical_tid = 1;
  th.name = "main";
  th.records.push_back(op(kStepNameId, 1500, 9000, 1, kUser));
  th.records.back().seq_nr = 5;  // a step range keeps its N here
  th.records.push_back(op(0, 2000, 6000, 2));
  th.records.push_back(op(1, 3000, 4000, 3));
  th.records.push_back(op(1, 500, 1200, 4));     // began before the window: left out
  th.records.push_back(op(1, 10000, 10500, 5));  // begins at its very end: left out
  th.records.push_back(op(1, 8000, 0, 6));       // still running at the close
  RawRecord mem = op(pack_memory_device(1, 0), 3500, 3500, 0xbeef);
  mem.scope = kScopeMemory;
  mem.bytes = 4096;
  mem.seq_nr = 4096;   // total allocated
  mem.fwd_tid = 8192;  // total reserved
  th.records.push_back(mem);
  w.records.threads.push_back(th);

  const Trace t = w.build();
  EXPECT_EQ(t.pid, 4242);
  EXPECT_EQ(t.worker_name, "host_4242");
  EXPECT_EQ(t.window_start_ns, kUnix + 1000);
  EXPECT_EQ(t.window_end_ns, kUnix + 10000);
  EXPECT_EQ(t.window_index, 3);
  EXPECT_EQ(t.steps, std::vector<int64_t>{5});
  ASSERT_EQ(t.threads.size(), 1u);
  EXPECT_EQ(t.threads[0].name, "main");
  ASSERT_EQ(t.events.size(), 4u);

  const Event* step = find(t, "ProfilerStep#5");
  ASSERT_NE(step, nullptr);
  EXPECT_EQ(step->kind, EventKind::UserAnnotation);
  EXPECT_EQ(step->sequence_nr, -1);
  const Event* mm = find(t, "aten::mm");
  ASSERT_NE(mm, nullptr);
  EXPECT_EQ(mm->start_ns, kUnix + 2000);
  EXPECT_EQ(mm->duration_ns, 4000);
  EXPECT_EQ(mm->tid, 11);
  EXPECT_EQ(mm->external_id, 2u);
  EXPECT_EQ(mm->sequence_nr, 7);
  EXPECT_TRUE(mm->finished);
  EXPECT_EQ(t.events[static_cast<std::size_t>(mm->parent)].name, "ProfilerStep#5");
  const Event* running = nullptr;
  for (const Event& e : t.events)
    if (e.external_id == 6) running = &e;
  ASSERT_NE(running, nullptr);
  EXPECT_FALSE(running->finished);
  EXPECT_EQ(running->duration_ns, 2000);  // cut at the window's end

  ASSERT_EQ(t.memory_events.size(), 1u);
  const MemoryEvent& m = t.memory_events[0];
  EXPECT_EQ(m.time_ns, kUnix + 3500);
  EXPECT_EQ(m.device_type, 1);
  EXPECT_EQ(m.device_index, 0);
  EXPECT_EQ(m.bytes, 4096);
  EXPECT_EQ(m.total_reserved, 8192);
  EXPECT_EQ(m.address, 0xbeefu);
  // The innermost op around it on its thread.
  ASSERT_GE(m.op, 0);
  EXPECT_EQ(t.events[static_cast<std::size_t>(m.op)].name, "aten::add");
}

TEST(TraceAssembly, InputsAreSharedAndKeptOnlyWithRecordShapes) {
  for (const bool shapes : {true, false}) {
    Window w;
    w.info.options.record_shapes = shapes;
    w.info.options.with_flops = true;
    CollectedThread th;
    th.os_tid = 11;
    th.details = mm_inputs();
    for (uint64_t corr : {1, 2}) {  // two ops with the same inputs
      RawRecord r = op(0, 2000 + 1000 * static_cast<int64_t>(corr),
                       2500 + 1000 * static_cast<int64_t>(corr), corr);
      r.details = 0;
      r.details_len = static_cast<uint16_t>(th.details.size());
      th.records.push_back(r);
    }
    w.records.threads.push_back(th);
    const Trace t = w.build();
    ASSERT_EQ(t.events.size(), 2u);
    for (const Event& e : t.events) EXPECT_EQ(e.flops, 2u * 2 * 3 * 4) << "2*m*n*k";
    EXPECT_EQ(t.metadata.count("record_shapes"), shapes ? 1u : 0u);
    EXPECT_EQ(t.metadata.at("with_flops"), "1");
    if (!shapes) {
      EXPECT_TRUE(t.op_inputs.empty());  // decoded for FLOPs only
      EXPECT_EQ(t.events[0].inputs, -1);
      continue;
    }
    ASSERT_EQ(t.op_inputs.size(), 1u);  // one entry, shared
    EXPECT_EQ(t.events[0].inputs, 0);
    EXPECT_EQ(t.events[1].inputs, 0);
    ASSERT_EQ(t.op_inputs[0].size(), 2u);
    EXPECT_EQ(t.op_inputs[0][1].sizes, (std::vector<int64_t>{3, 4}));
    EXPECT_EQ(t.op_inputs[0][1].strides, (std::vector<int64_t>{4, 1}));
    EXPECT_EQ(t.op_inputs[0][1].dtype, "float");
  }
}

TEST(TraceAssembly, DroppedEventsAndAMissingGpuAreInTheMetadata) {
  Window w;
  w.records.dropped = 3;
  w.records.dropped_memory = 1;
  w.info.gpu_unavailable = "no \"GPU\"";
  const Trace t = w.build();
  EXPECT_EQ(t.dropped_events, 4u);
  EXPECT_EQ(t.metadata.at("ptprof_dropped_events"), R"({"cpu_op": 3, "memory": 1})");
  EXPECT_EQ(t.gpu_unavailable_reason, "no \"GPU\"");
  EXPECT_EQ(t.metadata.at("ptprof_gpu_unavailable"), R"("no \"GPU\"")");
}

CollectiveInfo allreduce(const std::string& pg, const std::string& desc, int64_t rank,
                         int64_t stride = -1) {
  CollectiveInfo c;
  c.name = "allreduce";
  c.pg_name = pg;
  c.pg_desc = desc;
  c.pg_ranks = "[0, 1]";
  c.group_size = 2;
  c.rank = rank;
  c.global_rank_stride = stride;
  return c;
}

TEST(TraceAssembly, CollectivesGiveTheirOpsArgumentsAndTheRankItsDistributedInfo) {
  Window w;
  CollectedThread th;
  th.os_tid = 11;
  th.records.push_back(op(2, 2000, 3000, 9));
  w.records.threads.push_back(th);
  w.records.collectives.emplace_back(9, allreduce("0", "default_pg", 1, /*nccl=*/1));
  const Trace t = w.build();
  ASSERT_EQ(t.collectives.size(), 1u);
  ASSERT_EQ(t.events.size(), 1u);
  EXPECT_EQ(t.events[0].collective, 0);
  ASSERT_TRUE(t.distributed.has_value());
  EXPECT_EQ(t.distributed->rank, 1);
  EXPECT_EQ(t.distributed->world_size, 2);
  EXPECT_EQ(t.distributed->backend, "nccl");  // record_param_comms names global ranks
  ASSERT_EQ(t.distributed->groups.size(), 1u);
  EXPECT_EQ(t.distributed->groups[0],
            (ProcessGroupInfo{"0", "default_pg", "cuda:nccl", 2, {0, 1}}));
}

TEST(TraceAssembly, TheOptionsDistributedInfoIsCompletedFromTheCollectives) {
  DistributedInfo given;
  given.backend = "gloo";
  given.rank = 0;
  given.world_size = 2;
  // No collective: as given.
  EXPECT_EQ(window_distributed_info(given, {}), given);
  // Groups the collectives used join it; a group given in the Options wins over them.
  const auto filled = window_distributed_info(
      given,
      {allreduce("0", "default_pg", 0), allreduce("3", "tp", 0), allreduce("0", "default_pg", 0)});
  ASSERT_TRUE(filled.has_value());
  EXPECT_EQ(filled->rank, 0);
  EXPECT_EQ(filled->backend, "gloo");
  ASSERT_EQ(filled->groups.size(), 2u);
  EXPECT_EQ(filled->groups[1].name, "3");
  DistributedInfo with_groups = given;
  with_groups.groups.push_back(ProcessGroupInfo{"0", "default_pg", "cpu:gloo", 2, {0, 1}});
  EXPECT_EQ(window_distributed_info(with_groups, {allreduce("3", "tp", 0)}), with_groups);
  // Nothing known and no default group: none.
  EXPECT_EQ(window_distributed_info(std::nullopt, {allreduce("3", "tp", 0)}), std::nullopt);
}

}  // namespace
}  // namespace ptprof::detail
