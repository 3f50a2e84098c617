// One error model: each warning and error of a session reaches Options::log and the Status,
// with a code a caller can act on without reading the text; ptprof prints nothing itself.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "recording/session_log.h"
#include "test_util.h"

namespace ptprof {
namespace {

struct Logged {
  LogLevel level;
  std::string message;
};

LogSink into(std::vector<Logged>* out) {
  return [out](LogLevel level, const std::string& message) { out->push_back({level, message}); };
}

TEST(SessionLog, EachWarningAndErrorReachesTheSinkAndTheStatusWithItsCode) {
  std::vector<Logged> logged;
  detail::SessionLog log(into(&logged));
  log.warning(detail::Status(StatusCode::kUnavailable, "no GPU"));
  log.info("a note");
  log.error(detail::Status(StatusCode::kAborted, "handler 0 failed"));
  ASSERT_EQ(logged.size(), 3u);
  EXPECT_EQ(logged[0].level, LogLevel::kWarning);
  EXPECT_EQ(logged[0].message, "no GPU");
  EXPECT_EQ(logged[1].level, LogLevel::kInfo);
  EXPECT_EQ(logged[2].level, LogLevel::kError);
  const Status st = log.status();
  EXPECT_EQ(st.warnings, std::vector<std::string>{"no GPU"});
  EXPECT_EQ(st.warning_codes, std::vector<StatusCode>{StatusCode::kUnavailable});
  EXPECT_EQ(st.errors, std::vector<std::string>{"handler 0 failed"});
  EXPECT_EQ(st.error_codes, std::vector<StatusCode>{StatusCode::kAborted});
  EXPECT_FALSE(st.ok());
  EXPECT_TRUE(st.has(StatusCode::kUnavailable));
  EXPECT_FALSE(st.has(StatusCode::kDataLoss));
  EXPECT_EQ(st.message(), "error: handler 0 failed\nwarning: no GPU");
}

TEST(SessionLog, ASinkThatThrowsLosesOnlyItsMessage) {
  detail::SessionLog log([](LogLevel, const std::string&) { throw std::runtime_error("sink"); });
  log.warning(detail::Status(StatusCode::kDataLoss, "lost"));
  EXPECT_EQ(log.status().warnings.size(), 1u);
}

TEST(LogToStderr, OneLinePerMessageWithItsLevel) {
  testing::internal::CaptureStderr();
  log_to_stderr(LogLevel::kWarning, "w");
  log_to_stderr(LogLevel::kError, "e\n");
  log_to_stderr(LogLevel::kInfo, "two\nlines");
  EXPECT_EQ(testing::internal::GetCapturedStderr(),
            "[ptprof] warning: w\n[ptprof] error: e\n[ptprof] two\nlines\n");
}

TEST(StatusCode, EachHasAName) {
  EXPECT_STREQ(status_code_name(StatusCode::kOk), "ok");
  EXPECT_STREQ(status_code_name(StatusCode::kInvalidArgument), "invalid_argument");
  EXPECT_STREQ(status_code_name(StatusCode::kAborted), "aborted");
}

// The launcher's variables used to reach stderr only; now they are a warning like any other.
TEST(Session, ALauncherRankThatIsNoNumberIsAWarningInTheStatus) {
  ::setenv("RANK", "first", 1);
  ::setenv("WORLD_SIZE", "2", 1);
  std::vector<Logged> logged;
  Options o;
  o.log = into(&logged);
  testing::internal::CaptureStderr();
  Status st;
  {
    ProfileSession s(o);
    st = s.stop();
  }
  ::unsetenv("RANK");
  ::unsetenv("WORLD_SIZE");
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");  // all through the sink
  ASSERT_EQ(st.warnings.size(), 1u) << st.message();
  EXPECT_EQ(st.warning_codes[0], StatusCode::kInvalidArgument);
  EXPECT_NE(st.warnings[0].find("RANK=\"first\""), std::string::npos) << st.warnings[0];
  ASSERT_EQ(logged.size(), 1u);
  EXPECT_EQ(logged[0].level, LogLevel::kWarning);
  EXPECT_EQ(logged[0].message, st.warnings[0]);
}

// GPU unavailability and a handler's failure are told apart by code, not by their text.
TEST(Session, HandlerFailureAndMissingGpuHaveTheirOwnCodes) {
  Options o;
  o.log = nullptr;  // nothing printed, everything kept
  o.activities = {Activity::CPU, Activity::CUDA};
  o.on_trace_ready = {callback_handler([](const Trace&) { throw std::runtime_error("full"); })};
  testing::internal::CaptureStderr();
  Status st;
  {
    ProfileSession s(o);
    torch::ones({2}).add_(torch::ones({2}));
    st = s.stop();
  }
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(st.error_codes, std::vector<StatusCode>{StatusCode::kAborted}) << st.message();
  EXPECT_NE(st.errors.at(0).find("full"), std::string::npos);
  // Without a usable GPU (these machines), the one warning says so, as kUnavailable.
  for (std::size_t i = 0; i < st.warnings.size(); ++i) {
    if (st.warnings[i].find("CUDA activity") != std::string::npos)
      EXPECT_EQ(st.warning_codes[i], StatusCode::kUnavailable) << st.warnings[i];
  }
  EXPECT_EQ(st.warnings.size(), st.warning_codes.size());
}

}  // namespace
}  // namespace ptprof
