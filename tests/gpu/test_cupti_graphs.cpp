// CUDA graphs on synthetic records of the real CUPTI types: replayed work attributed to the op
// that captured its node (GraphCaptures -> Correlator), a graph launch's own record
// (GRAPH_TRACE), and the node's args written into the trace and read back.
#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cupti_test_util.h"
#include "gpu/cupti_correlator.h"
#include "gpu/cupti_decode.h"
#include "gpu/cupti_graphs.h"
#include "trace/trace_reader.h"

namespace ptprof::detail {
namespace {

using json = nlohmann::json;

constexpr int64_t kUnixOffset = 1700000000000000000;
constexpr int64_t kStart = 1000000000;  // window, monotonic ns
constexpr int64_t kEnd = 2000000000;
constexpr uint32_t kThread = 0xA1;
constexpr int64_t kTid = 100;
constexpr CUpti_CallbackId kGraphLaunch = CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000;

uint64_t at_us(double us) {
  return static_cast<uint64_t>(kStart + static_cast<int64_t>(us * 1000));
}

CUpti_ActivityKernel10 replayed(uint32_t correlation, double start_us, uint32_t graph,
                                uint64_t node) {
  CUpti_ActivityKernel10 k =
      test::kernel_record("_Z4gemmv", correlation, at_us(start_us), at_us(start_us + 5));
  k.graphId = graph;
  k.graphNodeId = node;
  return k;
}

class GraphTest : public ::testing::Test {
 protected:
  GraphTest()
      : dec_(trace_, {test::h100(0)}, [](CUpti_CallbackDomain d, uint32_t c) {
          return real_cupti_api().callback_name(d, c);
        }) {
    trace_.pid = 4242;
    trace_.window_start_ns = kStart + kUnixOffset;
    trace_.window_end_ns = kEnd + kUnixOffset;
    trace_.threads.push_back(ThreadInfo{kTid, 1, "main"});
    trace_.devices.push_back(test::h100(0).props);
  }
  void op(const char* name, uint64_t id, double start_us, double end_us,
          EventKind kind = EventKind::CpuOp) {
    trace_.events.push_back(test::cpu_event(trace_, name, id, 4242, kTid,
                                            static_cast<int64_t>(at_us(start_us)) + kUnixOffset,
                                            static_cast<int64_t>((end_us - start_us) * 1000),
                                            kind));
  }
  template <typename Record>
  void feed(const Record& r) {
    test::feed(dec_, cor_, r);
  }
  // A cudaGraphLaunch at `us`, made inside op `op_id`.
  void graph_launch(uint32_t correlation, double us, uint64_t op_id) {
    feed(test::ext_record(correlation, op_id));
    feed(test::api_record(false, kGraphLaunch, correlation, at_us(us), at_us(us + 2), kThread));
  }
  CorrelationStats finish(const GraphCaptureMap* graphs) {
    CorrelationWindow w;
    w.start_ns = kStart;
    w.end_ns = kEnd;
    w.unix_offset_ns = kUnixOffset;
    w.clock = GpuClock::identity();
    return cor_.finish(w, {{kThread, kTid}}, trace_, graphs);
  }
  const Event* gpu(uint32_t correlation, uint64_t node) const {
    for (const Event& e : trace_.events) {
      if (e.kind == EventKind::Kernel && e.correlation == correlation && e.graph_node >= 0 &&
          trace_.graph_nodes[static_cast<std::size_t>(e.graph_node)].node_id == node)
        return &e;
    }
    return nullptr;
  }

  Trace trace_;
  ActivityDecoder dec_;
  Correlator cor_;
};

// Two nodes captured under different ops, replayed twice by one launch inside
// CUDAGraph::replay: each kernel belongs to its capturing op, and its node's entry is shared by
// its replays.
TEST_F(GraphTest, ReplayedKernelsBelongToTheirCapturingOps) {
  op("train", 1, 0, 900, EventKind::UserAnnotation);
  op("encoder", 2, 10, 40, EventKind::UserAnnotation);
  op("aten::mm", 3, 12, 20);
  op("aten::relu", 4, 22, 30);
  op("CUDAGraph::replay", 9, 100, 300);
  GraphCaptureMap captures;
  GraphCapture mm;
  mm.graph_id = 4;
  mm.ops = {1, 2, 3};
  mm.named = true;
  mm.captured_by = "aten::mm";
  mm.ranges = {"train", "encoder"};
  captures[900] = mm;
  GraphCapture relu;
  relu.graph_id = 4;
  relu.ops = {1, 2, 4};  // named from this trace by GraphCaptures::name_from in the backend
  captures[901] = relu;

  graph_launch(50, 110, 9);
  feed(replayed(50, 120, 4, 900));
  feed(replayed(50, 130, 4, 901));
  graph_launch(51, 200, 9);
  feed(replayed(51, 210, 4, 900));
  feed(replayed(51, 220, 4, 901));
  const CorrelationStats st = finish(&captures);

  EXPECT_EQ(st.graph_work, 4u);
  EXPECT_EQ(st.graph_work_captured, 4u);
  EXPECT_EQ(st.gpu_with_op, 4u);
  EXPECT_EQ(st.gpu_with_launch, 4u);
  for (uint32_t c : {50u, 51u}) {
    const Event* a = gpu(c, 900);
    const Event* b = gpu(c, 901);
    ASSERT_TRUE(a && b) << c;
    EXPECT_EQ(a->external_id, 3u);
    EXPECT_EQ(b->external_id, 4u);
    EXPECT_TRUE(a->flow_end);
  }
  ASSERT_EQ(trace_.graph_nodes.size(), 2u);
  const GraphNodeInfo& g = trace_.graph_nodes[static_cast<std::size_t>(gpu(50, 900)->graph_node)];
  EXPECT_EQ(g.graph_id, 4u);
  EXPECT_EQ(g.captured_by, "aten::mm");
  EXPECT_EQ(g.capture_ranges, (std::vector<std::string_view>{"train", "encoder"}));
  EXPECT_EQ(gpu(51, 900)->graph_node, gpu(50, 900)->graph_node);
  // Unnamed in the map: no names, but the op (which this trace has) still gets the kernel.
  EXPECT_TRUE(trace_.graph_nodes[static_cast<std::size_t>(gpu(50, 901)->graph_node)]
                  .captured_by.empty());
}

// A node whose capture ptprof did not see (captured before it subscribed) or whose capturing
// op is not in the trace: the kernel stays with the launch's op.
TEST_F(GraphTest, UnknownCaptureLeavesTheLaunchsOp) {
  op("CUDAGraph::replay", 9, 100, 300);
  GraphCaptureMap captures;
  GraphCapture elsewhere;
  elsewhere.ops = {77};  // not an op of this trace
  captures[901] = elsewhere;
  graph_launch(60, 110, 9);
  feed(replayed(60, 120, 5, 900));
  feed(replayed(60, 130, 5, 901));
  const CorrelationStats st = finish(&captures);
  EXPECT_EQ(st.graph_work, 2u);
  EXPECT_EQ(st.graph_work_captured, 0u);
  EXPECT_EQ(gpu(60, 900)->external_id, 9u);
  EXPECT_EQ(gpu(60, 901)->external_id, 9u);
  EXPECT_EQ(trace_.graph_nodes[static_cast<std::size_t>(gpu(60, 900)->graph_node)].graph_id, 5u);
}

// Options::cuda_graph_launches_only: CUPTI's one record per graph launch.
TEST_F(GraphTest, AGraphLaunchsOwnRecord) {
  op("CUDAGraph::replay", 9, 100, 300);
  CUpti_ActivityGraphTrace2 g;
  std::memset(&g, 0, sizeof(g));
  g.kind = CUPTI_ACTIVITY_KIND_GRAPH_TRACE;
  g.start = at_us(120);
  g.end = at_us(180);
  g.deviceId = 0;
  g.endDeviceId = 0;
  g.contextId = 1;
  g.endContextId = 1;
  g.streamId = 7;
  g.graphId = 12;
  g.correlationId = 70;
  graph_launch(70, 110, 9);
  feed(g);
  const CorrelationStats st = finish(nullptr);
  EXPECT_EQ(st.graph_work, 1u);
  const Event* e = nullptr;
  for (const Event& x : trace_.events)
    if (x.kind == EventKind::Kernel) e = &x;
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->name, "CUDA graph 12");
  EXPECT_EQ(e->duration_ns, 60000);
  EXPECT_EQ(e->external_id, 9u);
  EXPECT_EQ(e->stream, 7u);
  EXPECT_TRUE(e->flow_end);
  ASSERT_GE(e->graph_node, 0);
  EXPECT_EQ(trace_.graph_nodes[static_cast<std::size_t>(e->graph_node)].graph_id, 12u);
  EXPECT_EQ(trace_.graph_nodes[static_cast<std::size_t>(e->graph_node)].node_id, 0u);
}

// The node's args in the trace (ptprof's, as Kineto writes none for graphs), read back into
// the same GraphNodeInfo; a kernel no graph ran carries none of them.
TEST_F(GraphTest, NodeArgsAreWrittenAndReadBack) {
  op("train", 1, 0, 900, EventKind::UserAnnotation);
  op("aten::mm", 3, 12, 20);
  op("CUDAGraph::replay", 9, 100, 300);
  GraphCaptureMap captures;
  GraphCapture mm;
  mm.ops = {1, 3};
  mm.named = true;
  mm.captured_by = "aten::mm";
  mm.ranges = {"train", "fwd"};
  captures[900] = mm;
  graph_launch(80, 110, 9);
  feed(replayed(80, 120, 4, 900));
  feed(test::ext_record(81, 3));
  feed(test::api_record(false, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 81, at_us(14),
                        at_us(15), kThread));
  feed(test::kernel_record("_Z4plainv", 81, at_us(16), at_us(18)));
  finish(&captures);

  const json doc = json::parse(trace_.to_json());
  json replay, plain;
  for (const json& e : doc.at("traceEvents")) {
    if (e.value("cat", "") != "kernel") continue;
    (e.at("args").at("correlation") == 80 ? replay : plain) = e;
  }
  ASSERT_TRUE(replay.is_object() && plain.is_object());
  const json& a = replay.at("args");
  EXPECT_EQ(a.at("graph id"), 4);
  EXPECT_EQ(a.at("graph node"), 900);
  EXPECT_EQ(a.at("captured by"), "aten::mm");
  EXPECT_EQ(a.at("capture ranges"), "train;fwd");  // joined as "Call stack" joins frames
  EXPECT_EQ(a.at("External id"), 3);
  for (const char* k : {"graph id", "graph node", "captured by", "capture ranges"})
    EXPECT_FALSE(plain.at("args").contains(k)) << k;

  const Trace back = parse_trace(trace_.to_json(), "graph trace");
  const Event* k = nullptr;
  for (const Event& e : back.events)
    if (e.kind == EventKind::Kernel && e.correlation == 80) k = &e;
  ASSERT_NE(k, nullptr);
  ASSERT_GE(k->graph_node, 0);
  const GraphNodeInfo& g = back.graph_nodes[static_cast<std::size_t>(k->graph_node)];
  EXPECT_EQ(g.graph_id, 4u);
  EXPECT_EQ(g.node_id, 900u);
  EXPECT_EQ(g.captured_by, "aten::mm");
  EXPECT_EQ(g.capture_ranges, (std::vector<std::string_view>{"train", "fwd"}));
  EXPECT_EQ(back.graph_nodes.size(), 1u);
  for (const Event& e : back.events)
    if (e.kind == EventKind::Kernel && e.correlation == 81) EXPECT_EQ(e.graph_node, -1);
}

}  // namespace
}  // namespace ptprof::detail
