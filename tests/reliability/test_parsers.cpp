// Regression tests of ptprof's parsers on hostile input: each case is an input that the fuzz
// targets of tests/fuzz found to break a parser (or a precision bound the tests rely on),
// fed to the parser the way the `ptprof` command or the session feeds it.
#include <gtest/gtest.h>

#include <string>

#include "clock.h"
#include "details.h"
#include "flops.h"
#include "reliability_util.h"

namespace ptprof {
namespace {

// What the fuzz targets require of a parser: it accepts, or rejects with ptprof::Error.
std::string parse_error(const std::string& text) {
  try {
    detail::parse_trace(text, "input");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Parsers, ReaderKeepsNanosecondsLateInTheBasePeriod) {
  // Trace times are µs with three decimals relative to a base that moves every ~91 days
  // (Kineto's), so they reach 7.9e12 µs, where a double is only ~1 ns apart: parsing the
  // number as a double and multiplying by 1000 is off by 1 ns for some times. The reader must
  // give back exactly the ns that were written.
  const int64_t base = detail::trace_base_time_ns();
  constexpr int64_t kPeriodNs = int64_t{7889238} * 1000000000;
  Trace t;
  t.window_start_ns = base + kPeriodNs - 1000000000;
  t.window_end_ns = base + kPeriodNs - 1;
  for (int i = 0; i < 2000; ++i) {
    Event e;
    e.name = t.intern("op");
    e.start_ns = t.window_start_ns + 1000 + i * 333331;  // a spread of sub-µs remainders
    e.duration_ns = 1 + i * 7;
    e.tid = 1;
    t.events.push_back(e);
  }
  const Trace back = detail::parse_trace(t.to_json(), "round trip");
  ASSERT_EQ(back.events.size(), t.events.size());
  int off = 0;
  for (std::size_t i = 0; i < t.events.size(); ++i) {
    if (back.events[i].start_ns != t.events[i].start_ns ||
        back.events[i].duration_ns != t.events[i].duration_ns) {
      if (++off <= 3)
        ADD_FAILURE() << "event " << i << ": start " << back.events[i].start_ns - t.events[i].start_ns
                      << " ns off, duration "
                      << back.events[i].duration_ns - t.events[i].duration_ns << " ns off";
    }
  }
  EXPECT_EQ(off, 0) << "of " << t.events.size() << " events";
}

}  // namespace
}  // namespace ptprof
