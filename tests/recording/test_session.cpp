// ProfileSession on real libtorch models: what is captured, the schedule's windows, handlers,
// bad options.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "test_util.h"

namespace ptprof {
namespace {

using test::count_events;
using test::TempDir;

// One op per call (the Scalar overloads of add_/mul_ redispatch to a second, nested op).
void add_op() {
  torch::ones({2}).add_(torch::ones({2}));
}

Options with_traces(std::vector<std::shared_ptr<Trace>>* out) {
  Options o;
  o.on_trace_ready = {
      callback_handler([out](const Trace& t) { out->push_back(std::make_shared<Trace>(t)); })};
  return o;
}

TEST(Session, CapturesForwardAndBackwardOpsOfAKnownModel) {
  torch::manual_seed(0);
  test::Mlp model;
  std::vector<std::shared_ptr<Trace>> traces;
  {
    ProfileSession s(with_traces(&traces));
    test::train_step(model);
  }
  ASSERT_EQ(traces.size(), 1u);
  const auto counts = test::event_counts(*traces[0]);
  // Forward: libtorch's C++ Linear is addmm(bias, x, w.t()) for 2-d input.
  EXPECT_EQ(counts.at("aten::addmm"), 2);
  EXPECT_EQ(counts.at("aten::relu"), 1);
  EXPECT_EQ(counts.at("aten::threshold_backward"), 1);
  EXPECT_EQ(counts.at("autograd::engine::evaluate_function: AddmmBackward0"), 2);
  EXPECT_EQ(counts.at("AddmmBackward0"), 2);
  EXPECT_EQ(counts.at("autograd::engine::evaluate_function: ReluBackward0"), 1);
  EXPECT_EQ(counts.at("autograd::engine::evaluate_function: SumBackward0"), 1);
  EXPECT_EQ(counts.at("autograd::engine::evaluate_function: torch::autograd::AccumulateGrad"), 4);
  // Backward nodes carry their forward op's sequence number.
  std::set<int64_t> fwd_seq, bwd_seq;
  for (const Event& e : traces[0]->events) {
    if (e.name == "aten::addmm" && e.depth == 0) fwd_seq.insert(e.sequence_nr);
    if (e.name == "AddmmBackward0") bwd_seq.insert(e.sequence_nr);
  }
  EXPECT_EQ(fwd_seq, bwd_seq);
  EXPECT_EQ(fwd_seq.size(), 2u);
}

TEST(Session, OpCountsEqualLibtorchsOwnProfiler) {
  // The same step under libtorch's built-in profiler (Kineto) and under ptprof: both observe
  // the same RecordFunction stream, so every name must have the same count.
  torch::manual_seed(0);
  test::Mlp model;
  test::train_step(model);  // warm up lazy initialization outside both profilers
  const auto reference = test::libtorch_profiler_counts([&] { test::train_step(model); });
  std::vector<std::shared_ptr<Trace>> traces;
  {
    ProfileSession s(with_traces(&traces));
    test::train_step(model);
  }
  ASSERT_EQ(traces.size(), 1u);
  auto ours = test::event_counts(*traces[0]);
  ASSERT_FALSE(reference.empty());
  EXPECT_EQ(ours, reference);
}

// A trace's autograd links by name: the (forward op, backward node) pairs of its "fwdbwd"
// flows (each written right after its op), and per name the ops with a sequence number.
struct AutogradLinks {
  std::multiset<std::pair<std::string, std::string>> links;
  std::map<std::string, int> numbered;
};
AutogradLinks autograd_links(const std::string& text) {
  const nlohmann::json doc = nlohmann::json::parse(text);
  const nlohmann::json& ev = doc["traceEvents"];
  AutogradLinks out;
  std::map<uint64_t, std::string> start, finish;
  for (std::size_t i = 0; i < ev.size(); ++i) {
    const nlohmann::json& e = ev[i];
    if (e.value("ph", "") == "X" && e.contains("args") && e["args"].contains("Sequence number"))
      ++out.numbered[e["name"]];
    if (i == 0 || e.value("cat", "") != "fwdbwd") continue;
    (e["ph"] == "s" ? start : finish)[e["id"].get<uint64_t>()] = ev[i - 1]["name"];
  }
  for (const auto& [id, fwd] : start)
    if (finish.count(id)) out.links.emplace(fwd, finish[id]);
  return out;
}

TEST(Session, AutogradLinksAndSequenceNumbersAreLibtorchsOwn) {
  // libtorch's profiler links each forward op to the backward node autograd ran for it and
  // gives evaluate_function ops their node's sequence number: ptprof's trace of the same step
  // has the same links and numbers.
  torch::manual_seed(0);
  test::Mlp model;
  test::train_step(model);
  TempDir dir;
  const AutogradLinks theirs = autograd_links(
      test::libtorch_profiler_trace([&] { test::train_step(model); }, dir.path() + "/kineto.json"));
  std::vector<std::shared_ptr<Trace>> traces;
  {
    ProfileSession s(with_traces(&traces));
    test::train_step(model);
  }
  ASSERT_EQ(traces.size(), 1u);
  const AutogradLinks ours = autograd_links(traces[0]->to_json());
  EXPECT_EQ(ours.links, theirs.links);
  EXPECT_EQ(ours.numbered, theirs.numbered);
  // Two Linear layers: an addmm linked to each AddmmBackward0, their evaluate_function ops
  // numbered.
  EXPECT_EQ(theirs.links.count({"aten::addmm", "AddmmBackward0"}), 2u);
  EXPECT_EQ(theirs.numbered.count("autograd::engine::evaluate_function: AddmmBackward0"), 1u);
}

TEST(Session, NestingIsExactAndSelfTimeIsTotalMinusChildren) {
  test::Mlp model;
  std::vector<std::shared_ptr<Trace>> traces;
  {
    ProfileSession s(with_traces(&traces));
    PTPROF_RANGE("outer");
    test::train_step(model);
  }
  ASSERT_EQ(traces.size(), 1u);
  const Trace& t = *traces[0];
  std::vector<int64_t> child_sum(t.events.size(), 0);
  for (std::size_t i = 0; i < t.events.size(); ++i) {
    const Event& e = t.events[i];
    ASSERT_GE(e.duration_ns, 0);
    if (e.parent < 0) continue;
    const Event& p = t.events[e.parent];
    EXPECT_EQ(p.tid, e.tid);
    EXPECT_LE(p.start_ns, e.start_ns) << e.name << " in " << p.name;
    EXPECT_LE(e.start_ns + e.duration_ns, p.start_ns + p.duration_ns) << e.name;
    EXPECT_EQ(e.depth, p.depth + 1);
    child_sum[e.parent] += e.duration_ns;
  }
  for (std::size_t i = 0; i < t.events.size(); ++i) {
    EXPECT_EQ(t.events[i].self_ns, t.events[i].duration_ns - child_sum[i]);
    EXPECT_GE(t.events[i].self_ns, 0);
  }
  // Forward ops sit directly in the user range; their children inside them.
  for (const Event& e : t.events) {
    if (e.name == "aten::relu") EXPECT_EQ(t.events[e.parent].name, "outer");
    if (e.name == "aten::clamp_min") EXPECT_EQ(t.events[e.parent].name, "aten::relu");
  }
  const auto outer = std::find_if(t.events.begin(), t.events.end(),
                                  [](const Event& e) { return e.name == "outer"; });
  ASSERT_NE(outer, t.events.end());
  EXPECT_EQ(outer->kind, EventKind::UserAnnotation);
  EXPECT_EQ(outer->parent, -1);
}

TEST(Session, UserRangesAndRecordUserScopeAreUserAnnotations) {
  std::vector<std::shared_ptr<Trace>> traces;
  {
    ProfileSession s(with_traces(&traces));
    {
      Range r("my range");
      add_op();
    }
    {
      RECORD_USER_SCOPE("libtorch scope");
      torch::ones({2}).mul_(torch::ones({2}));
    }
    { DataLoaderRange fetch; }
  }
  ASSERT_EQ(traces.size(), 1u);
  std::map<std::string, EventKind> kind;
  for (const Event& e : traces[0]->events) kind[std::string(e.name)] = e.kind;
  EXPECT_EQ(kind.at("my range"), EventKind::UserAnnotation);
  EXPECT_EQ(kind.at("libtorch scope"), EventKind::UserAnnotation);
  EXPECT_EQ(kind.at("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"),
            EventKind::UserAnnotation);
  EXPECT_EQ(kind.at("aten::add_"), EventKind::CpuOp);
  for (const Event& e : traces[0]->events) {
    if (e.name == "aten::add_") EXPECT_EQ(traces[0]->events[e.parent].name, "my range");
    if (e.name == "aten::mul_") EXPECT_EQ(traces[0]->events[e.parent].name, "libtorch scope");
  }
}

TEST(Session, ScheduleSavesActiveStepsOfEachWindowAndNothingElse) {
  std::vector<std::shared_ptr<Trace>> traces;
  Options o = with_traces(&traces);
  o.schedule = Schedule{/*wait=*/1, /*warmup=*/1, /*active=*/3, /*repeat=*/2};
  {
    ProfileSession s(o);
    for (int step = 0; step < 14; ++step) {
      Range marker("work of step " + std::to_string(step));
      add_op();
      s.step();
    }
  }
  ASSERT_EQ(traces.size(), 2u);  // repeat = 2
  const std::vector<std::vector<int>> expected_steps = {{2, 3, 4}, {7, 8, 9}};
  for (std::size_t w = 0; w < traces.size(); ++w) {
    const Trace& t = *traces[w];
    EXPECT_EQ(t.window_index, static_cast<int64_t>(w));
    std::vector<int> steps;
    for (const Event& e : t.events) {
      const std::string name(e.name);
      if (name.rfind("ProfilerStep#", 0) == 0) {
        steps.push_back(std::stoi(name.substr(13)));
        EXPECT_EQ(e.kind, EventKind::UserAnnotation);
      }
    }
    std::sort(steps.begin(), steps.end());
    EXPECT_EQ(steps, expected_steps[w]);
    EXPECT_EQ(std::vector<int64_t>(t.steps.begin(), t.steps.end()),
              std::vector<int64_t>(expected_steps[w].begin(), expected_steps[w].end()));
    // Exactly the active steps' work: nothing from wait or warmup steps.
    std::set<std::string> markers;
    for (const Event& e : t.events)
      if (e.name.rfind("work of step", 0) == 0) markers.insert(std::string(e.name));
    std::set<std::string> want;
    for (int st : expected_steps[w]) want.insert("work of step " + std::to_string(st));
    EXPECT_EQ(markers, want);
    EXPECT_EQ(count_events(t, "aten::add_"), 3);
  }
}

TEST(Session, StopDuringAnActiveWindowSavesIt) {
  std::vector<std::shared_ptr<Trace>> traces;
  Options o = with_traces(&traces);
  o.schedule = Schedule{0, 1, 5, 1};
  ProfileSession s(o);
  for (int i = 0; i < 3; ++i) {  // step 0 warmup, steps 1-3 recorded, then stop mid-window
    add_op();
    s.step();
  }
  add_op();
  EXPECT_EQ(s.current_action(), ProfilerAction::RECORD);
  Status st = s.stop();
  EXPECT_TRUE(st.ok()) << st.message();
  ASSERT_EQ(traces.size(), 1u);
  EXPECT_EQ(count_events(*traces[0], "aten::add_"), 3);
  EXPECT_EQ(count_events(*traces[0], "ProfilerStep#0"), 0);
  EXPECT_EQ(count_events(*traces[0], "ProfilerStep#1"), 1);
  EXPECT_EQ(count_events(*traces[0], "ProfilerStep#2"), 1);
  EXPECT_EQ(count_events(*traces[0], "ProfilerStep#3"), 1);
  EXPECT_FALSE(s.active());
  EXPECT_TRUE(s.stop().ok());  // idempotent
}

TEST(Session, StepNamesKeepTheirNumbersAndLookalikeRangesTheirNames) {
  // ProfilerStep#N is stored as a number, not an interned name; ranges that only look like
  // one (leading zero, suffix, no digits, too many digits) are ordinary names.
  std::vector<std::shared_ptr<Trace>> traces;
  Options o = with_traces(&traces);
  o.schedule = Schedule{0, 0, 2, 1};
  const std::vector<std::string> lookalikes = {"ProfilerStep#07", "ProfilerStep#5x",
                                               "ProfilerStep#", "ProfilerStep#1234567890123456789",
                                               "ProfilerStep"};
  {
    ProfileSession s(o);
    for (int i = 0; i < 2; ++i) {
      for (const auto& n : lookalikes) Range r(n);
      s.step();
    }
  }
  ASSERT_EQ(traces.size(), 1u);
  EXPECT_EQ(count_events(*traces[0], "ProfilerStep#0"), 1);
  EXPECT_EQ(count_events(*traces[0], "ProfilerStep#1"), 1);
  for (const auto& n : lookalikes) EXPECT_EQ(count_events(*traces[0], n), 2) << n;
  for (const Event& e : traces[0]->events)
    if (e.name.rfind("ProfilerStep#", 0) == 0) EXPECT_EQ(e.sequence_nr, -1) << e.name;
}

TEST(Session, StopDuringWarmupSavesNothing) {
  // The same schedule run past its active step saves one window: the session records.
  std::vector<std::shared_ptr<Trace>> control;
  {
    Options o = with_traces(&control);
    o.schedule = Schedule{0, 3, 1, 1};
    ProfileSession s(o);
    for (int i = 0; i < 4; ++i) {
      add_op();
      s.step();
    }
  }
  ASSERT_EQ(control.size(), 1u);
  EXPECT_EQ(count_events(*control[0], "aten::add_"), 1);

  // Stopped in warmup: what warmup recorded is dropped, and nothing is saved.
  std::vector<std::shared_ptr<Trace>> traces;
  Options o = with_traces(&traces);
  o.schedule = Schedule{0, 3, 1, 1};
  {
    ProfileSession s(o);
    add_op();
    s.step();
    add_op();  // step 1, in warmup: the session stops before the active step
  }
  EXPECT_TRUE(traces.empty());
}

TEST(Session, WithoutScheduleOneTraceAndNoStepRanges) {
  std::vector<std::shared_ptr<Trace>> traces;
  {
    ProfileSession s(with_traces(&traces));
    for (int i = 0; i < 4; ++i) {
      add_op();
      s.step();
    }
    EXPECT_EQ(s.step_num(), 4);
  }
  ASSERT_EQ(traces.size(), 1u);
  EXPECT_EQ(count_events(*traces[0], "aten::add_"), 4);
  for (const Event& e : traces[0]->events) EXPECT_NE(e.name.rfind("ProfilerStep#", 0), 0u);
}

TEST(Session, NothingIsRecordedOutsideTheSession) {
  std::vector<std::shared_ptr<Trace>> traces;
  torch::ones({1}).sub_(torch::ones({1}));
  {
    ProfileSession s(with_traces(&traces));
    add_op();
  }
  torch::ones({1}).mul_(torch::ones({1}));
  ASSERT_EQ(traces.size(), 1u);
  EXPECT_EQ(count_events(*traces[0], "aten::add_"), 1);
  EXPECT_EQ(count_events(*traces[0], "aten::sub_"), 0);
  EXPECT_EQ(count_events(*traces[0], "aten::mul_"), 0);
}

TEST(Session, OnlyOneSessionAtATime) {
  ProfileSession first;
  try {
    ProfileSession second;
    FAIL() << "a second session started";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("already active"), std::string::npos);
  }
  first.stop();
  ProfileSession third;  // fine once the first has stopped
  EXPECT_TRUE(third.active());
}

TEST(Session, IsMoveOnly) {
  static_assert(!std::is_copy_constructible_v<ProfileSession>);
  static_assert(std::is_nothrow_move_constructible_v<ProfileSession>);
  std::vector<std::shared_ptr<Trace>> traces;
  ProfileSession a(with_traces(&traces));
  ProfileSession b(std::move(a));
  add_op();
  EXPECT_FALSE(a.active());
  EXPECT_TRUE(b.active());
  b.stop();
  ASSERT_EQ(traces.size(), 1u);
  EXPECT_EQ(count_events(*traces[0], "aten::add_"), 1);
}

TEST(Session, BadOptionsFailNamingTheField) {
  auto error_of = [](Options o) {
    try {
      ProfileSession s(std::move(o));
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  Options o;
  o.schedule = Schedule{1, 1, 0, 1};
  EXPECT_NE(error_of(o).find("Options.schedule.active must be > 0 (got 0)"), std::string::npos);
  o.schedule = Schedule{-1, 1, 1, 1};
  EXPECT_NE(error_of(o).find("Options.schedule.wait must be >= 0 (got -1)"), std::string::npos);
  o = Options{};
  o.activities.clear();
  EXPECT_NE(error_of(o).find("Options.activities"), std::string::npos);
  o = Options{};
  o.on_trace_ready = {nullptr};
  EXPECT_NE(error_of(o).find("Options.on_trace_ready[0] is null"), std::string::npos);
  o = Options{};
  o.max_event_memory_bytes = 10;
  EXPECT_NE(error_of(o).find("Options.max_event_memory_bytes"), std::string::npos);
  // A failed construction leaves no session behind.
  ProfileSession ok;
  EXPECT_TRUE(ok.active());
}

TEST(Session, ExceptionInsideAProfiledScopeStillLeavesAValidTrace) {
  TempDir dir;
  Options o;
  o.on_trace_ready = {tensorboard_trace_handler(dir.path(), "worker")};
  try {
    ProfileSession s(o);
    Range r("doomed");
    add_op();
    throw std::runtime_error("training failed");
  } catch (const std::runtime_error&) {
  }
  const auto files = dir.files();
  ASSERT_EQ(files.size(), 1u);
  const auto j = test::read_json_file(files[0]);
  EXPECT_EQ(count_events(j, "doomed"), 1);
  EXPECT_EQ(count_events(j, "aten::add_"), 1);
}

TEST(Session, TensorBoardHandlerNamesFilesAsTorchProfiler) {
  TempDir dir;
  Options o;
  o.schedule = Schedule{0, 1, 1, 2};
  o.on_trace_ready = {tensorboard_trace_handler(dir.path() + "/run", "myworker"),
                      tensorboard_trace_handler(dir.path() + "/gz", "", /*use_gzip=*/true)};
  o.worker_name = "opts_worker";
  {
    ProfileSession s(o);
    for (int i = 0; i < 5; ++i) s.step();
  }
  std::vector<std::string> run, gz;
  for (auto& e : std::filesystem::directory_iterator(dir.path() + "/run"))
    run.push_back(e.path().filename().string());
  for (auto& e : std::filesystem::directory_iterator(dir.path() + "/gz"))
    gz.push_back(e.path().filename().string());
  ASSERT_EQ(run.size(), 2u);
  ASSERT_EQ(gz.size(), 2u);
  const std::regex plain(R"(myworker\.\d{19}\.pt\.trace\.json)");
  const std::regex gzipped(R"(opts_worker\.\d{19}\.pt\.trace\.json\.gz)");
  for (auto& f : run) EXPECT_TRUE(std::regex_match(f, plain)) << f;
  for (auto& f : gz) EXPECT_TRUE(std::regex_match(f, gzipped)) << f;
  // TensorBoard's plugin pattern.
  const std::regex tb(R"(^(.*?)(\.\d+)?\.pt\.trace\.json(?:\.gz)?$)");
  for (auto& f : gz) EXPECT_TRUE(std::regex_match(f, tb));
  auto j = test::read_json_file(dir.path() + "/gz/" + gz[0]);
  EXPECT_EQ(j["schemaVersion"], 1);
}

// Options::report: each saved window's report summary logged (never printed to stdout), and
// the report saved in "reports" beside each trace file (not in the run directory, where HTA
// takes every .json for a trace).
TEST(Session, ReportIsLoggedAndSavedBesideEachTraceFile) {
  TempDir dir;
  test::Mlp model;
  Options o;
  o.schedule = Schedule{0, 0, 2, 1};
  o.report = true;
  std::string logged;
  o.log = [&logged](LogLevel level, const std::string& message) {
    if (level == LogLevel::kInfo) logged += message;
  };
  std::filesystem::create_directory(dir.path() + "/one");
  o.on_trace_ready = {tensorboard_trace_handler(dir.path() + "/run", "w"),
                      chrome_trace_handler(dir.path() + "/one/trace.json")};
  testing::internal::CaptureStdout();
  {
    ProfileSession s(o);
    for (int i = 0; i < 3; ++i) {
      test::train_step(model);
      s.step();
    }
    EXPECT_TRUE(s.stop().ok());
  }
  EXPECT_EQ(testing::internal::GetCapturedStdout(), "");
  EXPECT_NE(logged.find("ptprof report: 2 steps"), std::string::npos) << logged;
  std::vector<std::string> run;
  for (auto& e : std::filesystem::directory_iterator(dir.path() + "/run"))
    if (e.is_regular_file()) run.push_back(e.path().filename().string());
  ASSERT_EQ(run.size(), 1u);  // the trace alone: no .json beside it but the trace
  for (const std::string& base :
       {dir.path() + "/run/reports/" + run[0], dir.path() + "/one/reports/trace.json"}) {
    const nlohmann::json j = test::read_json_file(base + ".report.json");
    EXPECT_EQ(j.at("schema"), "ptprof.report/1") << base;
    EXPECT_EQ(j.at("steps").at("per_step").size(), 2u) << base;
    std::ifstream html(base + ".report.html");
    std::stringstream text;
    text << html.rdbuf();
    EXPECT_NE(text.str().find("<html"), std::string::npos) << base;
  }
}

TEST(Session, FailingHandlerIsReportedWithPathAndTheRunGoesOn) {
  TempDir dir;
  const std::string blocked = dir.path() + "/not_a_dir";
  { std::ofstream(blocked) << "x"; }  // a file where the handler wants a directory
  std::vector<std::shared_ptr<Trace>> traces;
  Options o = with_traces(&traces);
  o.on_trace_ready.insert(o.on_trace_ready.begin(), tensorboard_trace_handler(blocked + "/run"));
  o.on_trace_ready.push_back(
      callback_handler([](const Trace&) { throw std::runtime_error("handler exploded"); }));
  ProfileSession s(o);
  add_op();
  Status st = s.stop();
  ASSERT_EQ(st.errors.size(), 2u) << st.message();
  EXPECT_NE(st.errors[0].find(blocked), std::string::npos) << st.errors[0];
  EXPECT_NE(st.errors[1].find("handler exploded"), std::string::npos);
  EXPECT_EQ(traces.size(), 1u);  // the handler after the failing one still ran
}

TEST(Session, KeyAveragesTableHasTorchProfilersColumns) {
  test::Mlp model;
  ProfileSession s;
  test::train_step(model);
  s.stop();
  const KeyAverages avg = s.key_averages();
  const KeyAverage* addmm = avg.find("aten::addmm");
  ASSERT_NE(addmm, nullptr);
  EXPECT_EQ(addmm->count, 2);
  EXPECT_GT(addmm->cpu_time_total_ns, 0);
  EXPECT_LE(addmm->self_cpu_time_total_ns, addmm->cpu_time_total_ns);
  const std::string table = avg.table("cpu_time_total", 10);
  for (const char* col : {"Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total",
                          "CPU time avg", "# of Calls", "Self CPU time total:"}) {
    EXPECT_NE(table.find(col), std::string::npos) << col << "\n" << table;
  }
}

TEST(Session, CudaRequestedWithoutGpuWarnsAndStillWritesTheCpuTrace) {
  std::vector<std::shared_ptr<Trace>> traces;
  Options o = with_traces(&traces);
  o.activities = {Activity::CPU, Activity::CUDA};
  ProfileSession s(o);
  add_op();
  Status st = s.stop();
  EXPECT_TRUE(st.ok());
  ASSERT_FALSE(st.warnings.empty());
  EXPECT_NE(st.warnings[0].find("CUDA activity requested but not available"), std::string::npos);
  ASSERT_EQ(traces.size(), 1u);
  EXPECT_EQ(count_events(*traces[0], "aten::add_"), 1);
  EXPECT_FALSE(traces[0]->gpu_unavailable_reason.empty());
  EXPECT_EQ(traces[0]->metadata.count("ptprof_gpu_unavailable"), 1u);
}

}  // namespace
}  // namespace ptprof
