// The `ptprof` command's trace reader: reads ptprof's own traces back exactly, and rejects
// malformed input with an error naming what is wrong.
#include <gtest/gtest.h>

#include "cli/trace_reader.h"
#include "test_util.h"

namespace ptprof {
namespace {

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

TEST(TraceReader, MalformedInputIsRejectedWithAReason) {
  auto error_of = [](const std::string& text) {
    try {
      detail::parse_trace(text, "input");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(error_of("{").find("not valid JSON"), std::string::npos);
  EXPECT_NE(error_of("[]").find("top level is not a JSON object"), std::string::npos);
  EXPECT_NE(error_of("{}").find("traceEvents"), std::string::npos);
  EXPECT_NE(error_of(R"({"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 1}]})")
                .find("\"cat\""),
            std::string::npos);
  EXPECT_NE(error_of(R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "ts": 1, "dur": 1}]})")
                .find("\"name\""),
            std::string::npos);
  EXPECT_NE(error_of(R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "ts": 1,
                         "dur": -5}]})")
                .find("negative"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a",
                         "ts": 1e300, "dur": 1}]})")
                .find("out of range"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"traceEvents": [1]})").find("traceEvents[0]"), std::string::npos);
  EXPECT_EQ(error_of(R"({"traceEvents": [{"ph": "M", "name": "process_name"}]})"), "");
}

}  // namespace
}  // namespace ptprof
