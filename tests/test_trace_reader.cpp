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

TEST(TraceReader, TimesAreTheExactDecimalOfTheText) {
  // ns from the µs text itself, never through a double: more than three decimals round half
  // away from zero, exponents shift the digits.
  auto start_of = [](const std::string& ts, const std::string& base = "0") {
    const Trace t = detail::parse_trace(
        R"({"baseTimeNanoseconds": )" + base +
            R"(, "traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "ts": )" + ts +
            R"(, "dur": 0.0015}]})",
        "input");
    EXPECT_EQ(t.events.at(0).duration_ns, 2);
    return t.events.at(0).start_ns;
  };
  EXPECT_EQ(start_of("1"), 1000);
  EXPECT_EQ(start_of("1.5"), 1500);
  EXPECT_EQ(start_of("4458676416788.066"), 4458676416788066);
  EXPECT_EQ(start_of("4458676416788.0665"), 4458676416788067);
  EXPECT_EQ(start_of("0.0005"), 1);
  EXPECT_EQ(start_of("0.00049999"), 0);
  EXPECT_EQ(start_of("-0.0005"), -1);
  EXPECT_EQ(start_of("-1.2344999"), -1234);
  EXPECT_EQ(start_of("-0.0"), 0);
  EXPECT_EQ(start_of("1.5e3"), 1500000);
  EXPECT_EQ(start_of("15E-4"), 2);
  EXPECT_EQ(start_of("1e-7"), 0);
  EXPECT_EQ(start_of("0.000001e+6"), 1000);
  // An offset beyond INT64_MAX ns is fine where the time itself fits.
  EXPECT_EQ(start_of("12000000000000000.000", "-9000000000000000000"), 3000000000000000000);
  EXPECT_THROW(start_of("12000000000000000.000"), Error);
  EXPECT_THROW(start_of("1e400"), Error);
}

TEST(TraceReader, ATraceSpanningTheWholeInt64RangeRoundTrips) {
  // The writer's base is the trace's earliest time floored to Kineto's period; offsets from it
  // can exceed INT64_MAX and must still read back exactly.
  Trace t;
  for (int64_t start : {int64_t{-9000000000000000001}, int64_t{0}, int64_t{9000000000000000001}}) {
    Event e;
    e.name = t.intern("op");
    e.start_ns = start;
    e.duration_ns = 7;
    e.tid = 1;
    t.events.push_back(e);
    MemoryEvent m;
    m.time_ns = start + 3;
    m.bytes = 16;
    t.memory_events.push_back(m);
  }
  t.window_start_ns = t.events.front().start_ns;
  t.window_end_ns = t.events.back().start_ns + 7;
  const Trace back = detail::parse_trace(t.to_json(), "round trip");
  ASSERT_EQ(back.events.size(), t.events.size());
  ASSERT_EQ(back.memory_events.size(), t.memory_events.size());
  for (std::size_t i = 0; i < t.events.size(); ++i) {
    EXPECT_EQ(back.events[i].start_ns, t.events[i].start_ns);
    EXPECT_EQ(back.events[i].duration_ns, 7);
    EXPECT_EQ(back.memory_events[i].time_ns, t.memory_events[i].time_ns);
  }
  EXPECT_EQ(back.window_start_ns, t.window_start_ns);
  EXPECT_EQ(back.window_end_ns, t.window_end_ns);
}

}  // namespace
}  // namespace ptprof
