// A recorded trace under a host program's decimal-comma locale: the recorder's own text (op
// inputs decoded when the window closes) keeps its decimal point. The writers' half of this is
// tests/core/trace/test_locale.cpp.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "comma_locale.h"
#include "test_util.h"

namespace ptprof {
namespace {

using test::CommaLocale;
using test::HostLocale;

// record_shapes under the host's locale: a float scalar input ("Concrete Inputs") is decoded
// to text when the window closes, and must read 0.5, not 0,5.
TEST_F(CommaLocale, RecordedScalarInputsKeepTheirDecimalPoint) {
  HostLocale host;
  ASSERT_TRUE(host.ok());
  Options o;
  o.record_shapes = true;
  ProfileSession s(o);
  torch::Tensor x = torch::ones({4});
  torch::add(x, x, /*alpha=*/0.5);
  s.stop();
  const nlohmann::json j = nlohmann::json::parse(s.last_trace()->to_json());
  bool seen = false;
  for (const nlohmann::json& e : j.at("traceEvents")) {
    if (e.value("name", "") != "aten::add" || !e.contains("args")) continue;
    const nlohmann::json& concrete = e.at("args").at("Concrete Inputs");
    ASSERT_EQ(concrete.size(), 3u) << e.dump();
    EXPECT_EQ(concrete[2], "0.5") << e.dump();
    seen = true;
  }
  EXPECT_TRUE(seen) << "no aten::add in the trace";
}

}  // namespace
}  // namespace ptprof

