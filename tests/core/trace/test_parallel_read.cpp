// A large plain trace read by two threads (trace_reader.h's ParallelRead): the Trace, and any
// error, are those of one thread, wherever the second thread starts.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>

#include "ptprof/error.h"
#include "ptprof/trace.h"
#include "test_support.h"
#include "trace/trace_reader.h"

namespace ptprof {
namespace {

using detail::ParallelRead;
using detail::read_trace;

const std::string kFixtures = std::string(PTPROF_SOURCE_DIR) + "/tests/gpu/fixtures/h200/";

Trace read_alone(const std::string& path) { return read_trace(path, ParallelRead{UINT64_MAX, 0}); }
Trace read_split_at(const std::string& path, uint64_t at, bool* taken = nullptr) {
  return read_trace(path, ParallelRead{0, at, taken});
}

void expect_same(const Trace& a, const Trace& b, const std::string& where) {
  EXPECT_EQ(a.events.size(), b.events.size()) << where;
  // Shared tables hold each distinct entry once, in the order one reader met them.
  EXPECT_EQ(a.op_inputs.size(), b.op_inputs.size()) << where;
  EXPECT_EQ(a.stacks.size(), b.stacks.size()) << where;
  EXPECT_EQ(a.collectives.size(), b.collectives.size()) << where;
  EXPECT_EQ(a.graph_nodes.size(), b.graph_nodes.size()) << where;
  for (std::size_t i = 0; i < a.events.size() && i < b.events.size(); ++i) {
    const Event& x = a.events[i];
    const Event& y = b.events[i];
    if (x.name != y.name || x.parent != y.parent || x.inputs != y.inputs || x.stack != y.stack ||
        x.flow_start != y.flow_start || x.flow_end != y.flow_end || x.thread_id != y.thread_id) {
      ADD_FAILURE() << where << ": event " << i << " (" << x.name << ") differs";
      break;
    }
  }
  EXPECT_EQ(a.to_json(), b.to_json()) << where;
}

// Every fixture, a Kineto trace and ptprof's (flows right after their events, forward/
// backward links, CUDA graphs, inputs and stacks shared), split at 64 places.
TEST(ParallelRead, TheTraceIsOneReadersWhereverTheSecondStarts) {
  test::TempDir dir;
  for (const char* name : {"kineto.pt.trace.json.gz", "ptprof_all.pt.trace.json.gz",
                           "ptprof.pt.trace.json.gz", "fallback.pt.trace.json.gz"}) {
    const std::string text = detail::read_trace_file(kFixtures + name);
    const std::string path = dir.path() + "/plain.json";
    test::write_file(path, text);
    const Trace alone = read_alone(path);
    ASSERT_GT(alone.events.size(), 100u) << name;
    int taken = 0;
    for (int k = 1; k < 64; ++k) {
      const uint64_t at = text.size() * k / 64;
      bool split = false;
      expect_same(alone, read_split_at(path, at, &split),
                  std::string(name) + " split at " + std::to_string(at));
      taken += split;
    }
    // Where the second thread's guess was an event's start, its part was used: most places.
    EXPECT_GT(taken, 48) << name;
  }
}

// A name ending in what looks like the start of an event (its closing quote taken for the
// first key's): the second reader starts there, the first never arrives there at an event,
// and reads on itself.
TEST(ParallelRead, ABoundaryInsideAStringIsNotTaken) {
  test::TempDir dir;
  std::string text = "{\"traceEvents\": [\n";
  for (int i = 0; i < 200; ++i) {
    const std::string name = i == 100 ? "op}, {" : "op" + std::to_string(i);
    text += std::string(i ? ",\n" : "") + "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"" + name +
            "\", \"pid\": 1, \"tid\": 1, \"ts\": " + std::to_string(10 * i) + ", \"dur\": 5}";
  }
  text += "\n]}";
  const std::string path = dir.path() + "/t.json";
  test::write_file(path, text);
  const Trace alone = read_alone(path);
  ASSERT_EQ(alone.events.size(), 200u);
  const uint64_t inside = text.find("op}, {") + 1;
  bool taken = true;
  expect_same(alone, read_split_at(path, inside, &taken), "inside a name");
  EXPECT_FALSE(taken);
  // And from just before the next event on, it is used.
  expect_same(alone, read_split_at(path, text.find("op101") - 40, &taken), "between events");
  EXPECT_TRUE(taken);
}

// A malformed event after the split: the error one reader gives, event index and offset.
TEST(ParallelRead, AnErrorAfterTheSplitIsOneReadersError) {
  test::TempDir dir;
  std::string text = "{\"traceEvents\": [\n";
  for (int i = 0; i < 200; ++i)
    text += std::string(i ? ",\n" : "") + "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"op\", " +
            "\"pid\": 1, \"tid\": 1, \"ts\": " + (i == 150 ? std::string("\"x\"") : std::to_string(10 * i)) +
            ", \"dur\": 5}";
  text += "\n]}";
  const std::string path = dir.path() + "/t.json";
  test::write_file(path, text);
  auto error_of = [](const std::function<void()>& read) {
    try {
      read();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string alone = error_of([&] { read_alone(path); });
  EXPECT_NE(alone.find("traceEvents[150]"), std::string::npos) << alone;
  EXPECT_EQ(error_of([&] { read_split_at(path, text.size() / 2); }), alone);
}

}  // namespace
}  // namespace ptprof
