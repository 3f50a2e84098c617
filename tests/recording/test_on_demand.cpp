// On-demand capture: the trigger file's format, the step a window starts at, and sessions that
// take a window from a file written while they run, from a signal, and from the environment.
#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <regex>
#include <thread>

#include "recording/on_demand.h"
#include "test_util.h"

namespace ptprof {
namespace {

using detail::Trigger;
using test::TempDir;

void add_op() {
  torch::ones({2}).add_(torch::ones({2}));
}

void write_file(const std::string& path, const std::string& text) {
  // A new file each time (new inode): a rewrite within one mtime tick is still a change.
  const std::string tmp = path + ".new";
  {
    std::ofstream f(tmp);
    f << text;
  }
  std::rename(tmp.c_str(), path.c_str());
}

std::vector<std::shared_ptr<Trace>>* collector(Options* o) {
  auto* out = new std::vector<std::shared_ptr<Trace>>();
  o->on_trace_ready = {
      callback_handler([out](const Trace& t) { out->push_back(std::make_shared<Trace>(t)); })};
  return out;
}

// Runs `steps` steps of one op each under a session with `o`; before step k, does
// during[k] (writes the trigger file, raises the signal). Returns the session's status.
Status run(const Options& o, int steps, const std::map<int, std::function<void()>>& during = {}) {
  ProfileSession s(o);
  for (int step = 0; step < steps; ++step) {
    if (auto it = during.find(step); it != during.end()) it->second();
    add_op();
    s.step();
  }
  return s.stop();
}

// Writes `text` into `path` when called.
std::function<void()> writes(const std::string& path, const std::string& text) {
  return [path, text] { write_file(path, text); };
}

// ---- the file ----

TEST(Trigger, ParsesEveryKeyAndKeepsDefaults) {
  const auto parsed = detail::parse_trigger(
      "# capture\nSTEPS=5\n WARMUP = 2 \nROUNDUP=100\n"
      "OUTPUT=/tmp/x y\nRECORD_SHAPES=1\nWITH_STACK=0\nREPORT=true\n");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  const Trigger& t = *parsed;
  EXPECT_FALSE(t.empty);
  EXPECT_EQ(t.steps, 5);
  EXPECT_EQ(t.warmup, 2);
  EXPECT_EQ(t.roundup, 100);
  EXPECT_FALSE(t.start_step.has_value());
  EXPECT_EQ(t.output, "/tmp/x y");
  EXPECT_EQ(t.record_shapes, std::optional<bool>(true));
  EXPECT_EQ(t.with_stack, std::optional<bool>(false));
  EXPECT_EQ(t.report, std::optional<bool>(true));
  EXPECT_FALSE(t.profile_memory.has_value());

  const auto nothing = detail::parse_trigger("# nothing asked\n\n");
  ASSERT_TRUE(nothing.ok());
  const Trigger& d = *nothing;
  EXPECT_TRUE(d.empty);
  EXPECT_EQ(d.steps, 3);
  EXPECT_EQ(d.warmup, 1);
}

TEST(Trigger, ErrorsNameTheLineAndTheKey) {
  // Each a kInvalidArgument whose message names the line and the key.
  auto error = [](std::string_view text) {
    const auto parsed = detail::parse_trigger(text);
    EXPECT_FALSE(parsed.ok()) << text;
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument) << text;
    return parsed.status().message();
  };
  EXPECT_EQ(error("STEPS=3\nSTEPS=abc\n"),
            "line 2: STEPS must be a whole number >= 1 (got \"abc\")");
  EXPECT_EQ(error("STEPS=0"), "line 1: STEPS must be a whole number >= 1 (got \"0\")");
  EXPECT_NE(error("STEP=3").find("line 1: unknown key STEP"), std::string::npos);
  EXPECT_EQ(error("\n\njust words"), "line 3: expected KEY=VALUE, got \"just words\"");
  EXPECT_EQ(error("WITH_FLOPS=yes"), "line 1: WITH_FLOPS must be 0 or 1 (got \"yes\")");
  EXPECT_EQ(error("START_STEP=10\nROUNDUP=5"), "START_STEP and ROUNDUP exclude each other");
}

TEST(Trigger, RanksThatSeeTheFileAtDifferentStepsStartAtTheSameOne) {
  const auto parsed = detail::parse_trigger("ROUNDUP=50\nWARMUP=2\nSTEPS=3");
  ASSERT_TRUE(parsed.ok());
  const Trigger& t = *parsed;
  // Seen at step 3 by one rank and at step 41 by a slower-polling one: both start at 50.
  EXPECT_EQ(detail::first_active_step(t, 3), 50);
  EXPECT_EQ(detail::first_active_step(t, 41), 50);
  EXPECT_EQ(detail::first_active_step(t, 48), 50);   // warmup 48, 49
  EXPECT_EQ(detail::first_active_step(t, 49), 100);  // no room for the warmup
  EXPECT_EQ(detail::demand_action(t, 50, 47), ProfilerAction::NONE);
  EXPECT_EQ(detail::demand_action(t, 50, 48), ProfilerAction::WARMUP);
  EXPECT_EQ(detail::demand_action(t, 50, 50), ProfilerAction::RECORD);
  EXPECT_EQ(detail::demand_action(t, 50, 52), ProfilerAction::RECORD_AND_SAVE);
  EXPECT_EQ(detail::demand_action(t, 50, 53), std::nullopt);  // over
  const auto parsed_abs = detail::parse_trigger("START_STEP=20");
  ASSERT_TRUE(parsed_abs.ok());
  const Trigger& abs = *parsed_abs;
  EXPECT_EQ(detail::first_active_step(abs, 5), 20);
  EXPECT_EQ(detail::first_active_step(abs, 20), 20);            // warmup cut short
  EXPECT_EQ(detail::first_active_step(abs, 21), std::nullopt);  // too late
  EXPECT_EQ(detail::signal_number("SIGUSR1"), SIGUSR1);
  EXPECT_EQ(detail::signal_number("USR2"), SIGUSR2);
  EXPECT_EQ(detail::signal_number("12"), 12);
  EXPECT_EQ(detail::signal_number("SIGNOPE"), 0);
}

// ---- sessions ----

std::vector<int64_t> steps_of(const Trace& t) {
  std::vector<int64_t> s;
  for (const Event& e : t.events)
    if (is_step_name(e.name)) s.push_back(std::stoll(std::string(e.name.substr(13))));
  std::sort(s.begin(), s.end());
  return s;
}

TEST(OnDemand, AFileWrittenWhileTheJobRunsGivesExactlyTheAskedWindow) {
  TempDir dir;
  const std::string trigger = dir.path() + "/trigger";
  const std::string logdir = dir.path() + "/log";
  Options o;
  o.on_demand_only = true;
  o.trigger_file = trigger;
  o.trigger_check_interval_ms = 0;
  std::unique_ptr<std::vector<std::shared_ptr<Trace>>> own(collector(&o));
  const Status status =
      run(o, 40, {{5, writes(trigger, "STEPS=3\nWARMUP=1\nROUNDUP=10\nOUTPUT=" + logdir + "\n")}});
  EXPECT_TRUE(status.ok()) << status.message();
  EXPECT_TRUE(own->empty()) << "OUTPUT replaces the session's handlers for the window";
  std::vector<std::string> files;
  for (const auto& f : std::filesystem::directory_iterator(logdir))
    if (f.path().string().find(".pt.trace.json") != std::string::npos)
      files.push_back(f.path().string());
  ASSERT_EQ(files.size(), 1u);
  const Trace t = Trace::load(files[0]);
  EXPECT_EQ(steps_of(t), (std::vector<int64_t>{10, 11, 12}));
  EXPECT_EQ(test::count_events(t, "aten::add_"), 3);
}

TEST(OnDemand, EachChangeOfTheFileIsOneRequestAndTheOptionsAreTheRequests) {
  TempDir dir;
  const std::string trigger = dir.path() + "/trigger";
  Options o;
  o.on_demand_only = true;
  o.trigger_file = trigger;
  o.trigger_check_interval_ms = 0;
  std::unique_ptr<std::vector<std::shared_ptr<Trace>>> traces(collector(&o));
  const Status status = run(o, 30,
                            {{2, writes(trigger, "STEPS=2\nWARMUP=0\nRECORD_SHAPES=1\n")},
                             {12, writes(trigger, "STEPS=1\nWARMUP=1\n# again, other options\n")}});
  EXPECT_TRUE(status.ok()) << status.message();
  ASSERT_EQ(traces->size(), 2u);
  // Written during step 2, seen when step 3 begins.
  EXPECT_EQ(steps_of(*(*traces)[0]), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ((*traces)[0]->metadata.count("record_shapes"), 1u);
  EXPECT_FALSE((*traces)[0]->op_inputs.empty());
  EXPECT_EQ(steps_of(*(*traces)[1]), (std::vector<int64_t>{14}));  // seen at 13, warmup 13
  EXPECT_EQ((*traces)[1]->metadata.count("record_shapes"), 0u);
}

TEST(OnDemand, ARequestWhileAWindowRecordsIsRefusedWithAWarning) {
  TempDir dir;
  const std::string trigger = dir.path() + "/trigger";
  Options o;
  o.schedule = Schedule{/*wait=*/0, /*warmup=*/0, /*active=*/10, /*repeat=*/1};
  o.trigger_file = trigger;
  o.trigger_check_interval_ms = 0;
  std::unique_ptr<std::vector<std::shared_ptr<Trace>>> traces(collector(&o));
  const Status status =
      run(o, 20, {{3, writes(trigger, "STEPS=2\n")}, {14, writes(trigger, "STEPS=2\nWARMUP=0\n")}});
  ASSERT_EQ(traces->size(), 2u);
  EXPECT_EQ(steps_of(*(*traces)[0]).size(), 10u);
  EXPECT_EQ(steps_of(*(*traces)[1]), (std::vector<int64_t>{15, 16}));
  ASSERT_EQ(status.warnings.size(), 1u) << status.message();
  EXPECT_NE(status.warnings[0].find("at step 4 refused"), std::string::npos) << status.warnings[0];
}

TEST(OnDemand, ABadFileIsReportedAndNothingElseHappens) {
  TempDir dir;
  const std::string trigger = dir.path() + "/trigger";
  write_file(trigger, "STEPS=three\n");
  Options o;
  o.on_demand_only = true;
  o.trigger_file = trigger;
  o.trigger_check_interval_ms = 0;
  std::unique_ptr<std::vector<std::shared_ptr<Trace>>> traces(collector(&o));
  const Status status = run(o, 5);
  EXPECT_TRUE(traces->empty());
  EXPECT_TRUE(status.ok());
  ASSERT_EQ(status.warnings.size(), 1u);
  EXPECT_EQ(status.warnings[0], "trigger file " + trigger +
                                    ": line 1: STEPS must be a whole number >= 1 (got \"three\"); "
                                    "ignored");
}

TEST(OnDemand, TheSignalOnlySetsAFlagAndTheNextStepTakesTheDefaultWindow) {
  Options o;
  o.on_demand_only = true;
  o.trigger_signal = SIGUSR1;
  std::unique_ptr<std::vector<std::shared_ptr<Trace>>> traces(collector(&o));
  const Status status = run(o, 12, {{3, [] { std::raise(SIGUSR1); }}});
  EXPECT_TRUE(status.ok()) << status.message();
  ASSERT_EQ(traces->size(), 1u);
  // Raised during step 3: seen when step 4 begins, warmed up in it, steps 5..7 recorded.
  EXPECT_EQ(steps_of(*(*traces)[0]), (std::vector<int64_t>{5, 6, 7}));
  // The session gave the signal back: its default action would end the test binary.
  struct sigaction now {};
  sigaction(SIGUSR1, nullptr, &now);
  EXPECT_EQ(now.sa_handler, SIG_DFL);
}

struct ScopedEnv {
  std::vector<std::string> names;
  void set(const std::string& k, const std::string& v) {
    setenv(k.c_str(), v.c_str(), 1);
    names.push_back(k);
  }
  ~ScopedEnv() {
    for (const auto& n : names) unsetenv(n.c_str());
  }
};

TEST(OnDemand, TheEnvironmentSwitchesOnABinaryThatDoesNotConfigureIt) {
  TempDir dir;
  const std::string logdir = dir.path() + "/log";
  {
    ScopedEnv env;
    env.set("PTPROF_LOGDIR", logdir);
    env.set("PTPROF_SCHEDULE", "1,1,2,1");
    ProfileSession s;  // Options{} as an unconfigured binary has them
    for (int step = 0; step < 6; ++step) {
      add_op();
      s.step();
    }
    EXPECT_TRUE(s.stop().ok());
  }
  const std::vector<std::string> files = [&] {
    std::vector<std::string> v;
    for (const auto& f : std::filesystem::directory_iterator(logdir)) v.push_back(f.path());
    return v;
  }();
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(steps_of(Trace::load(files[0])), (std::vector<int64_t>{2, 3}));

  // The trigger file and on-demand-only from the environment; Options that set a schedule
  // keep it unless PTPROF_ON_DEMAND_ONLY says otherwise.
  const std::string trigger = dir.path() + "/trigger";
  write_file(trigger, "STEPS=2\nWARMUP=0\n");
  {
    ScopedEnv env;
    env.set("PTPROF_TRIGGER_FILE", trigger);
    env.set("PTPROF_ON_DEMAND_ONLY", "1");
    Options o;
    o.schedule = Schedule{0, 0, 1, 0};  // would record every step
    std::unique_ptr<std::vector<std::shared_ptr<Trace>>> traces(collector(&o));
    ProfileSession s(o);
    for (int step = 0; step < 6; ++step) {
      add_op();
      s.step();
    }
    EXPECT_TRUE(s.stop().ok());
    ASSERT_EQ(traces->size(), 1u);  // the file there at the start is a request at step 0
    EXPECT_EQ(steps_of(*(*traces)[0]), (std::vector<int64_t>{0, 1}));
  }
}

// ---- ranks ----

std::string read_text(const std::string& path) {
  std::ifstream f(path);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

std::vector<std::string> files_in(const std::string& dir) {
  std::vector<std::string> v;
  for (const auto& f : std::filesystem::directory_iterator(dir)) v.push_back(f.path());
  return v;
}

TEST(Ranks, TheLaunchersEnvironmentNamesTheRankInTheTraceAndItsFileName) {
  TempDir dir;
  {
    ScopedEnv env;
    env.set("RANK", "3");  // torchrun's pair comes before SLURM's
    env.set("WORLD_SIZE", "4");
    env.set("SLURM_PROCID", "1");
    env.set("SLURM_NTASKS", "2");
    env.set("PTPROF_LOGDIR", dir.path() + "/a");
    ProfileSession s;
    add_op();
    EXPECT_TRUE(s.stop().ok());
  }
  auto files = files_in(dir.path() + "/a");
  ASSERT_EQ(files.size(), 1u);
  // The worker name carries the rank; HTA's rank regex ("rank":\s+(\d+), first match in the
  // file) needs the space Python's json.dumps writes.
  EXPECT_NE(files[0].find("_rank3."), std::string::npos) << files[0];
  const std::string text = read_text(files[0]);
  EXPECT_NE(text.find("\"distributedInfo\": {\"rank\": 3, \"world_size\": 4}"), std::string::npos);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(text, m, std::regex(R"re("rank":\s+(\d+))re")));
  EXPECT_EQ(m[1], "3");
  EXPECT_EQ(text.find("\"distributedInfo\""), text.rfind("\"distributedInfo\""));
  // Read back into Trace::distributed, which the writer gives back as it was.
  const Trace back = Trace::load(files[0]);
  ASSERT_TRUE(back.distributed.has_value());
  EXPECT_EQ(back.distributed->rank, 3);
  EXPECT_EQ(back.distributed->world_size, 4);
  EXPECT_EQ(back.metadata.count("distributedInfo"), 0u);
  EXPECT_NE(back.to_json().find("\"distributedInfo\": {\"rank\": 3, \"world_size\": 4}"),
            std::string::npos);

  // Options win over the environment, and carry the backend; SLURM's pair alone is read too.
  {
    ScopedEnv env;
    env.set("SLURM_PROCID", "1");
    env.set("SLURM_NTASKS", "2");
    Options o;
    o.on_trace_ready = {tensorboard_trace_handler(dir.path() + "/b")};
    ProfileSession s(o);
    add_op();
    EXPECT_TRUE(s.stop().ok());
    o.on_trace_ready = {tensorboard_trace_handler(dir.path() + "/c")};
    o.distributed = DistributedInfo{"gloo", 0, 2};
    o.worker_name = "trainer";
    ProfileSession t(o);
    add_op();
    EXPECT_TRUE(t.stop().ok());
  }
  files = files_in(dir.path() + "/b");
  ASSERT_EQ(files.size(), 1u);
  EXPECT_NE(files[0].find("_rank1."), std::string::npos) << files[0];
  EXPECT_NE(read_text(files[0]).find("\"distributedInfo\": {\"rank\": 1, \"world_size\": 2}"),
            std::string::npos);
  files = files_in(dir.path() + "/c");
  ASSERT_EQ(files.size(), 1u);
  EXPECT_NE(files[0].find("/trainer."), std::string::npos) << files[0];  // a given name is kept
  EXPECT_NE(read_text(files[0]).find(
                "\"distributedInfo\": {\"backend\": \"gloo\", \"rank\": 0, \"world_size\": 2}"),
            std::string::npos);
}

TEST(Ranks, NoLauncherNoDistributedInfoAndBadValuesAreNamed) {
  TempDir dir;
  {
    ScopedEnv env;
    env.set("RANK", "two");  // not ptprof's variable: a warning, and no distributedInfo
    env.set("WORLD_SIZE", "4");
    env.set("PTPROF_LOGDIR", dir.path());
    ProfileSession s;
    add_op();
    EXPECT_TRUE(s.stop().ok());
  }
  const auto files = files_in(dir.path());
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].find("_rank"), std::string::npos);
  EXPECT_EQ(read_text(files[0]).find("distributedInfo"), std::string::npos);

  Options o;
  o.distributed = DistributedInfo{"nccl", 2, 2};
  try {
    ProfileSession s(o);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Options.distributed"), std::string::npos) << e.what();
  }
}

TEST(OnDemand, BadEnvironmentAndOptionsAreErrorsNamingThem) {
  {
    ScopedEnv env;
    env.set("PTPROF_SCHEDULE", "1,x,3");
    try {
      ProfileSession s;
      FAIL() << "no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("PTPROF_SCHEDULE"), std::string::npos) << e.what();
    }
  }
  {
    ScopedEnv env;
    env.set("PTPROF_TRIGGER_SIGNAL", "SIGNOPE");
    EXPECT_THROW(ProfileSession s, Error);
  }
  Options o;
  o.trigger_signal = SIGSEGV;
  try {
    ProfileSession s(o);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Options.trigger_signal"), std::string::npos);
  }
  Options i;
  i.trigger_check_interval_ms = -1;
  EXPECT_THROW(ProfileSession s(i), Error);
}

}  // namespace
}  // namespace ptprof
