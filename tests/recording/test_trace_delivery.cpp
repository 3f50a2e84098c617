// Trace delivery (handlers on the background writer, failures as coded errors), the report as
// an ordinary handler, and the trigger poller: session stages tested alone.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>

#include "recording/session_log.h"
#include "recording/trace_delivery.h"
#include "recording/trigger_poller.h"
#include "test_util.h"
#include "trace/handlers.h"

namespace ptprof {
namespace {

using test::TempDir;

std::shared_ptr<const Trace> small_trace(const std::string& worker) {
  auto t = std::make_shared<Trace>();
  t->worker_name = worker;
  t->window_start_ns = 1700000000000000000;
  t->window_end_ns = t->window_start_ns + 1000000;
  Event e;
  e.name = t->intern("aten::mm");
  e.start_ns = t->window_start_ns + 1000;
  e.duration_ns = 5000;
  t->events.push_back(e);
  return t;
}

TEST(TraceDelivery, HandlersRunInOrderAndAFailureIsAnAbortedErrorNamingIt) {
  for (const bool background : {false, true}) {
    detail::SessionLog log(nullptr);
    std::vector<std::string> ran;
    std::thread::id on;
    {
      detail::TraceDelivery delivery(background, log);
      auto first = callback_handler([&](const Trace& t) {
        ran.push_back("first " + t.worker_name);
        on = std::this_thread::get_id();
      });
      auto broken = callback_handler([](const Trace&) { throw std::runtime_error("disk full"); });
      auto last = callback_handler([&](const Trace&) { ran.push_back("last"); });
      delivery.wait_for_room();
      delivery.deliver(small_trace("w"), {first, broken, last});
      delivery.finish();
    }
    EXPECT_EQ(ran, (std::vector<std::string>{"first w", "last"}));
    EXPECT_EQ(on != std::this_thread::get_id(), background);
    const Status st = log.status();
    ASSERT_EQ(st.errors.size(), 1u);
    EXPECT_EQ(st.errors[0], "trace handler 1 failed: disk full");
    EXPECT_EQ(st.error_codes[0], StatusCode::kAborted);
  }
}

TEST(TraceDelivery, TheWriterHoldsOneTraceWhileTheNextIsBuilt) {
  detail::SessionLog log(nullptr);
  detail::TraceDelivery delivery(true, log);
  std::atomic<bool> release{false};
  std::atomic<int> written{0};
  auto slow = callback_handler([&](const Trace&) {
    while (!release) std::this_thread::yield();
    ++written;
  });
  delivery.wait_for_room();
  delivery.deliver(small_trace("a"), {slow});
  delivery.wait_for_room();  // the writer took "a": room for one more
  delivery.deliver(small_trace("b"), {slow});
  std::atomic<bool> had_room{false};
  std::thread third([&] {
    delivery.wait_for_room();  // blocks until "b" is taken
    had_room = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(had_room);
  release = true;
  third.join();
  delivery.finish();
  EXPECT_EQ(written, 2);
}

std::vector<std::string> files_in(const std::string& dir) {
  std::vector<std::string> out;
  if (!std::filesystem::is_directory(dir)) return out;
  for (auto& e : std::filesystem::directory_iterator(dir))
    out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

// The report beside each trace file the handlers before it wrote, as Options::report puts it.
TEST(ReportHandler, BesideEachTraceFileTheHandlersBeforeItWrote) {
  TempDir dir;
  std::filesystem::create_directory(dir.path() + "/one");
  std::string summary;
  detail::SessionLog log(nullptr);
  detail::TraceDelivery delivery(false, log);
  delivery.deliver(small_trace("w"), {tensorboard_trace_handler(dir.path() + "/run"),
                                      chrome_trace_handler(dir.path() + "/one/trace.json"),
                                      report_handler("", [&](LogLevel level, const std::string& s) {
                                        EXPECT_EQ(level, LogLevel::kInfo);
                                        summary += s;
                                      })});
  EXPECT_TRUE(log.status().ok()) << log.status().message();
  const auto run = files_in(dir.path() + "/run");
  ASSERT_EQ(run.size(), 2u);  // the reports folder, and the trace
  EXPECT_EQ(run[0], "reports");
  EXPECT_EQ(files_in(dir.path() + "/run/reports"),
            (std::vector<std::string>{run[1] + ".report.html", run[1] + ".report.json"}));
  EXPECT_EQ(files_in(dir.path() + "/one/reports"),
            (std::vector<std::string>{"trace.json.report.html", "trace.json.report.json"}));
  EXPECT_NE(summary.find("ptprof report"), std::string::npos) << summary;
  const auto j = test::read_json_file(dir.path() + "/one/reports/trace.json.report.json");
  EXPECT_EQ(j.at("schema"), "ptprof.report/1");
}

TEST(ReportHandler, IntoItsOwnDirectoryNamedAfterTheWorker) {
  TempDir dir;
  const auto t = small_trace("host_7");
  report_handler(dir.path() + "/reports/run")->handle(*t);
  const auto files = files_in(dir.path() + "/reports/run");
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0].rfind("host_7.", 0), 0u) << files[0];
  EXPECT_NE(files[1].find(".report.json"), std::string::npos) << files[1];
}

// Files another trace's handlers wrote are not this one's.
TEST(ReportHandler, OnlyTheFilesOfItsOwnTrace) {
  TempDir dir;
  const auto a = small_trace("a");
  const auto b = small_trace("b");
  chrome_trace_handler(dir.path() + "/a.json")->handle(*a);
  EXPECT_EQ(detail::trace_files_of(*a), std::vector<std::string>{dir.path() + "/a.json"});
  EXPECT_TRUE(detail::trace_files_of(*b).empty());
  report_handler()->handle(*b);
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/reports"));
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

TEST(TriggerPoller, AChangedFileIsOneRequestAndABadOneAWarning) {
  TempDir dir;
  const std::string file = dir.path() + "/trigger";
  detail::TriggerPoller poller(file, /*check_interval_ms=*/0, /*signal=*/0);
  std::vector<detail::Status> warnings;
  EXPECT_FALSE(poller.poll(&warnings).has_value());  // no file: nothing asked
  write_file(file, "STEPS=2\n");
  auto r = poller.poll(&warnings);
  ASSERT_TRUE(r.has_value());
  EXPECT_STREQ(r->source, "trigger file");
  EXPECT_EQ(r->trigger.steps, 2);
  EXPECT_FALSE(poller.poll(&warnings).has_value());  // unchanged: not read again
  write_file(file, "STEPS=two\n");
  EXPECT_FALSE(poller.poll(&warnings).has_value());
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0].code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(warnings[0].message(), "trigger file " + file +
                                       ": line 1: STEPS must be a whole number >= 1 (got "
                                       "\"two\"); ignored");
  std::filesystem::remove(file);
  EXPECT_FALSE(poller.poll(&warnings).has_value());
  write_file(file, "STEPS=2\n");  // the same text again, but a new file: a new request
  EXPECT_TRUE(poller.poll(&warnings).has_value());
}

TEST(TriggerPoller, TheSignalAsksForTheDefaultWindowAndIsGivenBack) {
  struct sigaction before {};
  ::sigaction(SIGUSR2, nullptr, &before);
  {
    detail::TriggerPoller poller("", 0, SIGUSR2);
    std::vector<detail::Status> warnings;
    EXPECT_FALSE(poller.poll(&warnings).has_value());
    ::raise(SIGUSR2);
    auto r = poller.poll(&warnings);
    ASSERT_TRUE(r.has_value());
    EXPECT_STREQ(r->source, "signal");
    EXPECT_EQ(r->trigger.steps, 3);
    EXPECT_EQ(r->trigger.warmup, 1);
  }
  struct sigaction after {};
  ::sigaction(SIGUSR2, nullptr, &after);
  EXPECT_EQ(after.sa_handler, before.sa_handler);
}

}  // namespace
}  // namespace ptprof
