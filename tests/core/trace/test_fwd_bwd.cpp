// Forward/backward links and the evaluate_function ops' sequence numbers, as PyTorch's
// profiler writes them (issue 28 section 3): on libtorch's own trace of the H200 fixtures, and
// on traces built here rule by rule.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "test_support.h"
#include "trace/fwd_bwd.h"
#include "trace/trace_reader.h"
#include "trace_builder.h"

namespace ptprof {
namespace {

using nlohmann::json;
using test::TraceBuilder;
using Links = std::set<std::pair<uint64_t, uint64_t>>;  // (forward op, backward op) External ids

// The fwdbwd flows of a trace's JSON, by the External ids of the ops they follow (Kineto and
// ptprof write each flow right after its op); every start paired with one finish.
Links links_in(const std::string& text, int* flow_events = nullptr) {
  const json doc = json::parse(text);
  const json& ev = doc["traceEvents"];
  std::map<uint64_t, uint64_t> start, finish;  // flow id -> External id
  int n = 0;
  for (std::size_t i = 1; i < ev.size(); ++i) {
    if (ev[i].value("cat", "") != "fwdbwd") continue;
    ++n;
    const json& op = ev[i - 1];
    EXPECT_EQ(op["ph"], "X");
    EXPECT_EQ(op["tid"], ev[i]["tid"]);
    EXPECT_EQ(op["ts"], ev[i]["ts"]);
    EXPECT_EQ(ev[i]["name"], "fwdbwd");
    auto& side = ev[i]["ph"] == "s" ? start : finish;
    const uint64_t id = ev[i]["id"].get<uint64_t>();
    EXPECT_TRUE(side.emplace(id, op["args"]["External id"].get<uint64_t>()).second) << id;
    if (ev[i]["ph"] == "f") EXPECT_EQ(ev[i]["bp"], "e");
  }
  Links out;
  for (const auto& [id, fwd] : start) {
    auto it = finish.find(id);
    EXPECT_NE(it, finish.end()) << "flow " << id << " never finishes";
    if (it != finish.end()) out.emplace(fwd, it->second);
  }
  EXPECT_EQ(start.size(), finish.size());
  if (flow_events) *flow_events = n;
  return out;
}

std::string fixture_text(const std::string& name) {
  return detail::read_trace_file(std::string(PTPROF_SOURCE_DIR) + "/tests/gpu/fixtures/h200/" +
                                 name);
}

// libtorch's profiler's trace, read and written by ptprof: the same 55 links between the same
// ops (ptprof draws them again from the ops' sequence numbers and the threads the links imply).
TEST(FwdBwd, LibtorchsOwnLinksAreDrawnAgainTheSame) {
  const std::string text = fixture_text("kineto.pt.trace.json.gz");
  int theirs_n = 0, ours_n = 0;
  const Links theirs = links_in(text, &theirs_n);
  const Trace t = detail::parse_trace(text, "kineto.pt.trace.json.gz");
  const Links ours = links_in(t.to_json(), &ours_n);
  EXPECT_EQ(theirs_n, 110);
  EXPECT_EQ(ours_n, 110);
  EXPECT_EQ(ours, theirs);
  // And once more: what ptprof wrote reads back to the same links.
  EXPECT_EQ(links_in(detail::parse_trace(t.to_json(), "again").to_json()), theirs);
}

// Each backward node (a forward thread id) links to the latest-started op of its forward
// thread with its sequence number; evaluate_function ops and ops with no thread take no part.
TEST(FwdBwd, TheLatestStartedForwardOpOfTheThreadLinks) {
  TraceBuilder b;
  auto seq = [&](uint64_t ext, int64_t nr, uint64_t thread, uint64_t fwd_thread = 0) {
    for (Event& e : b.t.events)
      if (e.external_id == ext) {
        e.sequence_nr = nr;
        e.thread_id = thread;
        e.fwd_thread_id = fwd_thread;
      }
  };
  const uint64_t linear = b.op("aten::linear", 0, 50);
  const uint64_t addmm = b.op("aten::addmm", 10, 40);  // same sequence number, started later
  seq(linear, 7, 1);
  seq(addmm, 7, 1);
  const uint64_t other = b.op("aten::relu", 60, 70);
  seq(other, 8, 1);
  b.tid = 12;  // the backward thread
  const uint64_t eval = b.op("autograd::engine::evaluate_function: AddmmBackward0", 100, 200);
  const uint64_t node = b.op("AddmmBackward0", 101, 199);
  seq(eval, 7, 2, 1);  // as numbered: it links not, its node does
  seq(node, 7, 2, 1);
  const uint64_t orphan = b.op("ReluBackward0", 210, 220);
  seq(orphan, 8, 2, 3);  // a forward thread with no such op
  b.t.rebuild_tree();

  const Links links = links_in(b.t.to_json());
  EXPECT_EQ(links, (Links{{addmm, node}}));
  // Without logical thread ids (a trace read with no links in it) nothing is linked.
  for (Event& e : b.t.events) e.thread_id = 0;
  EXPECT_TRUE(detail::fwd_bwd_links(b.t.events).empty());
}

// evaluate_function takes its backward node's sequence number and forward thread; one whose
// first child is no backward node keeps none.
TEST(FwdBwd, EvaluateFunctionTakesItsNodesSequenceNumber) {
  TraceBuilder b;
  b.op("autograd::engine::evaluate_function: MulBackward0", 0, 100);
  b.op("MulBackward0", 1, 99);
  b.op("aten::mul", 2, 50);
  b.op("autograd::engine::evaluate_function: torch::autograd::AccumulateGrad", 110, 200);
  b.op("aten::add_", 111, 150);  // AccumulateGrad's node ran unrecorded: no backward node
  b.t.events[1].sequence_nr = 42;
  b.t.events[1].fwd_thread_id = 1;
  b.t.events[4].sequence_nr = 3;  // a forward op's number is not a node's
  b.t.rebuild_tree();
  detail::number_evaluate_functions(b.t.events);
  EXPECT_EQ(b.t.events[0].sequence_nr, 42);
  EXPECT_EQ(b.t.events[0].fwd_thread_id, 1u);
  EXPECT_EQ(b.t.events[2].sequence_nr, -1);  // not an evaluate_function op
  EXPECT_EQ(b.t.events[3].sequence_nr, -1);
  EXPECT_EQ(b.t.events[3].fwd_thread_id, 0u);
  // Written as libtorch writes them.
  const json doc = json::parse(b.t.to_json());
  int numbered = 0;
  for (const json& e : doc["traceEvents"])
    if (e.value("name", "") == "autograd::engine::evaluate_function: MulBackward0") {
      EXPECT_EQ(e["args"]["Sequence number"], 42);
      EXPECT_EQ(e["args"]["Fwd thread id"], 1);
      ++numbered;
    }
  EXPECT_EQ(numbered, 1);
}

}  // namespace
}  // namespace ptprof
