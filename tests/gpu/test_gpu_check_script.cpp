// scripts/gpu-check's parts that need no GPU: argument handling and the verification of a
// trace, on synthetic ptprof traces (CPU ops + correlated GPU events) and Kineto-like ones.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "trace/clock.h"
#include "cupti_test_util.h"
#include "gpu/cupti_correlator.h"
#include "gpu/cupti_decode.h"

namespace ptprof::detail {
namespace {

using json = nlohmann::json;

const std::string kScript = std::string(PTPROF_SOURCE_DIR) + "/scripts/gpu-check";

int run(const std::string& args) {
  const std::string cmd = "bash " + kScript + " " + args + " > /dev/null 2>&1";
  const int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

json read_json(const std::string& path) {
  std::ifstream f(path);
  return json::parse(f);
}

void write_json(const std::string& path, const json& j) {
  std::ofstream(path) << j.dump(1);
}

class GpuCheckScript : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "gpu_check_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::system(("rm -rf '" + dir_ + "' && mkdir -p '" + dir_ + "'").c_str());
  }

  // A window of two steps: ops launching a kernel each, through the real decoder/correlator.
  // `skew_us` moves the second kernel's start relative to its launch.
  json ptprof_trace(int64_t skew_us = 100) {
    Trace t;
    const int64_t offset = measure_unix_offset_ns();
    const int64_t start = now_ns();
    auto at = [&](int64_t us) { return static_cast<uint64_t>(start + us * 1000); };
    t.pid = 4242;
    t.process_name = "train";
    t.window_start_ns = start + offset;
    t.window_end_ns = start + 5000000 + offset;
    t.devices.push_back(test::h100(0).props);
    t.metadata["cupti_version"] = "130001";
    t.metadata["cuda_runtime_version"] = "13000";
    t.metadata["cuda_driver_version"] = "13010";
    t.metadata["ptprof_gpu_clock"] = "\"cupti_timestamp_callback\"";
    auto op = [&](const char* name, uint64_t id, int64_t s, int64_t e, EventKind k) {
      Event ev;
      ev.kind = k;
      ev.name = t.intern(name);
      ev.start_ns = start + s * 1000 + offset;
      ev.duration_ns = (e - s) * 1000;
      ev.pid = 4242;
      ev.tid = 100;
      ev.external_id = id;
      t.events.push_back(ev);
    };
    op("ProfilerStep#1", 1, 0, 1000, EventKind::UserAnnotation);
    op("forward", 6, 5, 500, EventKind::UserAnnotation);
    op("aten::mm", 2, 10, 100, EventKind::CpuOp);
    op("aten::relu", 3, 200, 300, EventKind::CpuOp);
    op("ProfilerStep#2", 4, 1000, 2000, EventKind::UserAnnotation);
    op("aten::mm", 5, 1010, 1100, EventKind::CpuOp);
    ActivityDecoder dec(t, {test::h100(0)}, [](CUpti_CallbackDomain d, uint32_t c) {
      return real_cupti_api().callback_name(d, c);
    });
    Correlator cor;
    auto feed = [&](const auto& r) { test::feed(dec, cor, r); };
    const CUpti_CallbackId launch = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
    const struct {
      uint32_t corr;
      uint64_t op;
      int64_t launch_us;
      const char* kernel;
    } launches[] = {{10, 2, 20, "_Z4gemmv"}, {11, 3, 210, "_Z4reluv"}, {12, 5, 1020, "_Z4gemmv"}};
    for (const auto& l : launches) {
      feed(test::ext_record(l.corr, l.op));
      feed(test::api_record(false, launch, l.corr, at(l.launch_us), at(l.launch_us + 5), 0xA1));
      const int64_t k = l.launch_us + (l.corr == 11 ? skew_us : 100);
      feed(test::kernel_record(l.kernel, l.corr, at(k), at(k + 30)));
    }
    CorrelationWindow w;
    w.start_ns = start;
    w.end_ns = start + 5000000;
    w.unix_offset_ns = offset;
    cor.finish(w, {{0xA1, 100}}, t);
    t.rebuild_tree();
    return json::parse(t.to_json());
  }

  json run_json(bool conflict_named = true) {
    return json{{"steps", 2},
                {"baseline_step_ms", 10.0},
                {"ptprof_step_ms", 10.5},
                {"kineto_step_ms", 11.0},
                {"ptprof_errors", json::array()},
                {"ptprof_warnings", json::array()},
                {"conflict_warnings",
                 {conflict_named ? "CUDA activity could not be enabled: CUPTI is in use by "
                                   "libtorch's own profiler (...); recording CPU activity only"
                                 : "something else"}},
                {"conflict_cpu_events", 40},
                {"conflict_gpu_events", 0},
                {"after_kineto_warnings", json::array()},
                {"after_kineto_kernels", 3}};
  }

  std::string dir_;
};

TEST_F(GpuCheckScript, UsageErrors) {
  EXPECT_EQ(run(""), 2);
  EXPECT_EQ(run("--help"), 0);
  EXPECT_EQ(run("--bogus " + dir_), 2);
  EXPECT_EQ(run("a b"), 2);
  EXPECT_EQ(run("--verify-only"), 2);
  EXPECT_EQ(run("--verify-only " + dir_ + "/missing.json " + dir_), 2);
  write_json(dir_ + "/t.json", ptprof_trace());
  EXPECT_EQ(run("--verify-only " + dir_ + "/t.json"), 2);                   // no OUTDIR
  EXPECT_EQ(run("--verify-only " + dir_ + "/t.json --kineto " + dir_), 2);  // no OUTDIR after it
  write_json(dir_ + "/array.json", json::array());
  EXPECT_EQ(run("--verify-only " + dir_ + "/array.json " + dir_), 2);  // not a trace object
}

TEST_F(GpuCheckScript, VerifiesACorrelatedTraceAgainstKineto) {
  const json trace = ptprof_trace();
  write_json(dir_ + "/ptprof.json", trace);
  // libtorch's profiler's view of the same steps: same kernels under the same op names (its
  // own ids: here shifted).
  json kineto = trace;
  for (json& e : kineto["traceEvents"]) {
    if (e.contains("args") && e["args"].contains("External id"))
      e["args"]["External id"] = e["args"]["External id"].get<int64_t>() + 1000;
  }
  write_json(dir_ + "/kineto.json", kineto);
  write_json(dir_ + "/run.json", run_json());
  ASSERT_EQ(run("--verify-only " + dir_ + "/ptprof.json --kineto " + dir_ + "/kineto.json --run " +
                dir_ + "/run.json " + dir_ + "/out"),
            0);
  const json f = read_json(dir_ + "/out/gpu-check.json");
  EXPECT_EQ(f["passed"], true);
  EXPECT_EQ(f["kernels_seen"], 3);
  EXPECT_EQ(f["kineto_kernels_seen"], 3);
  EXPECT_EQ(f["kernels_correlated_pct"], 100.0);
  EXPECT_EQ(f["kernels_with_launch_pct"], 100.0);
  EXPECT_EQ(f["kernels_with_op_pct"], 100.0);
  EXPECT_EQ(f["kernels_before_launch"], 0);
  EXPECT_EQ(f["calls_outside_their_op"], 0);
  EXPECT_EQ(f["per_op_kernel_counts"], (json{{"aten::mm", 2}, {"aten::relu", 1}}));
  EXPECT_TRUE(f["per_op_mismatches"].empty());
  EXPECT_EQ(f["gpu_user_annotations"], 3);  // "forward" and the two steps
  EXPECT_EQ(f["devices"], json::array({"NVIDIA H100 80GB HBM3"}));
  EXPECT_EQ(f["cupti_version"], 130001);
  EXPECT_DOUBLE_EQ(f["ptprof_overhead_pct"].get<double>(), 5.0);
  EXPECT_DOUBLE_EQ(f["kineto_overhead_pct"].get<double>(), 10.0);
  EXPECT_TRUE(f["failures"].empty());
}

// The cases gpu_train_check runs besides training: CUPTI held by a second subscriber, no GPU
// visible, libtorch's profiler keeping CUPTI.
TEST_F(GpuCheckScript, FlagsSubscriberFallbackAndTeardownProblems) {
  write_json(dir_ + "/ptprof.json", ptprof_trace());
  json doc = run_json();
  doc["subscriber_tested"] = true;
  doc["subscriber_warnings"] = json::array();  // no warning, and GPU events anyway
  doc["subscriber_cpu_events"] = 40;
  doc["subscriber_gpu_events"] = 5;
  doc["released_kernels"] = 3;
  doc["after_kineto_kernels"] = 0;  // lost CUPTI to libtorch's profiler...
  doc["after_kineto_warnings"] = {"CUPTI is already in use"};  // ...without naming the cure
  write_json(dir_ + "/run.json", doc);
  write_json(dir_ + "/fallback.json", json{{"trace", "fallback.json"},
                                           {"errors", json::array()},
                                           {"warnings", json::array()},
                                           {"cpu_events", 10},
                                           {"gpu_events", 0}});
  write_json(dir_ + "/teardown.json", json{{"after_kineto_kernels", 0}});
  EXPECT_EQ(run("--verify-only " + dir_ + "/ptprof.json --run " + dir_ + "/run.json --fallback " +
                dir_ + "/fallback.json --teardown " + dir_ + "/teardown.json " + dir_ + "/out"),
            1);
  const json f = read_json(dir_ + "/out/gpu-check.json");
  std::multiset<std::string> checks;
  for (const json& x : f["failures"]) checks.insert(x["check"]);
  // One warning expected, the trace does not say why (it is no trace at all here).
  EXPECT_EQ(checks.count("no_gpu_fallback"), 2u) << f["failures"].dump();
  EXPECT_EQ(checks.count("second_subscriber"), 2u) << f["failures"].dump();
  EXPECT_EQ(checks.count("kineto_teardown"), 2u) << f["failures"].dump();
  EXPECT_EQ(checks.size(), 6u) << f["failures"].dump();
}

TEST_F(GpuCheckScript, FlagsAKernelBeforeItsLaunch) {
  write_json(dir_ + "/ptprof.json", ptprof_trace(/*skew_us=*/-3));
  EXPECT_EQ(run("--verify-only " + dir_ + "/ptprof.json " + dir_), 1);
  const json f = read_json(dir_ + "/gpu-check.json");
  EXPECT_EQ(f["passed"], false);
  EXPECT_EQ(f["kernels_before_launch"], 1);
  ASSERT_EQ(f["failures"].size(), 1u);
  EXPECT_EQ(f["failures"][0]["check"], "kernel_after_launch");
}

TEST_F(GpuCheckScript, FlagsKernelsWithoutLaunchOrOp) {
  json trace = ptprof_trace();
  for (json& e : trace["traceEvents"]) {
    if (e.value("cat", "") == "kernel" && e["args"]["correlation"] == 11) {
      e["args"].erase("External id");
      e["args"]["correlation"] = 999;
    }
  }
  write_json(dir_ + "/ptprof.json", trace);
  EXPECT_EQ(run("--verify-only " + dir_ + "/ptprof.json " + dir_), 1);
  const json f = read_json(dir_ + "/gpu-check.json");
  std::set<std::string> checks;
  for (const json& x : f["failures"]) checks.insert(x["check"]);
  EXPECT_EQ(checks, (std::set<std::string>{"kernel_launch", "kernel_op"}));
  EXPECT_NEAR(f["kernels_correlated_pct"].get<double>(), 66.667, 0.001);
}

TEST_F(GpuCheckScript, FlagsCountsThatDifferFromKineto) {
  const json trace = ptprof_trace();
  write_json(dir_ + "/ptprof.json", trace);
  json kineto = trace;
  json& events = kineto["traceEvents"];
  for (auto it = events.begin(); it != events.end(); ++it) {
    if (it->value("cat", "") == "kernel" && (*it)["args"]["correlation"] == 12) {
      events.erase(it);
      break;
    }
  }
  write_json(dir_ + "/kineto.json", kineto);
  EXPECT_EQ(run("--verify-only " + dir_ + "/ptprof.json --kineto " + dir_ + "/kineto.json " + dir_),
            1);
  const json f = read_json(dir_ + "/gpu-check.json");
  EXPECT_EQ(f["per_op_mismatches"], (json{{"aten::mm", {{"kineto", 1}, {"ptprof", 2}}}}));
  std::set<std::string> checks;
  for (const json& x : f["failures"]) checks.insert(x["check"]);
  EXPECT_EQ(checks, (std::set<std::string>{"kineto_kernel_count", "kineto_per_op"}));
}

TEST_F(GpuCheckScript, FlagsAMissingConflictWarning) {
  write_json(dir_ + "/ptprof.json", ptprof_trace());
  write_json(dir_ + "/run.json", run_json(/*conflict_named=*/false));
  EXPECT_EQ(run("--verify-only " + dir_ + "/ptprof.json --run " + dir_ + "/run.json " + dir_), 1);
  const json f = read_json(dir_ + "/gpu-check.json");
  ASSERT_EQ(f["failures"].size(), 1u);
  EXPECT_EQ(f["failures"][0]["check"], "conflict_warning");
}

// gpu_launch_layers' figures: copied into gpu-check.json; a ptprof mode that missed kernels
// in its launch rounds, or a callbacks layer that saw no call, fails the check.
TEST_F(GpuCheckScript, ReportsLaunchLayersAndFlagsMissedKernels) {
  write_json(dir_ + "/ptprof.json", ptprof_trace());
  json layers = {{"launches_per_round", 20000},
                 {"rounds", 5},
                 {"callbacks_seen", 100000},
                 {"ptprof_lean_kernels_min", 20000},
                 {"ptprof_classic_kernels_min", 20000},
                 {"baseline_us_per_launch", 4.1},
                 {"added_us_per_launch",
                  {{"activity", 0.2}, {"callbacks", 0.3}, {"runtime_api", 1.1},
                   {"driver_api", 1.6}, {"external", 1.9}, {"ptprof_lean", 0.45},
                   {"ptprof_classic", 2.5}, {"kineto", 3.1}}}};
  write_json(dir_ + "/layers.json", layers);
  ASSERT_EQ(run("--verify-only " + dir_ + "/ptprof.json --layers " + dir_ + "/layers.json " +
                dir_),
            0);
  const json fig = read_json(dir_ + "/gpu-check.json");
  EXPECT_EQ(fig.at("launch_layers_us").at("ptprof_lean"), 0.45);
  EXPECT_EQ(fig.at("launch_layers_us").at("kineto"), 3.1);
  EXPECT_EQ(fig.at("launch_layers_baseline_us"), 4.1);

  layers["ptprof_lean_kernels_min"] = 19000;
  write_json(dir_ + "/layers.json", layers);
  EXPECT_EQ(run("--verify-only " + dir_ + "/ptprof.json --layers " + dir_ + "/layers.json " +
                dir_),
            1);
  layers["ptprof_lean_kernels_min"] = 20000;
  layers["callbacks_seen"] = 0;
  write_json(dir_ + "/layers.json", layers);
  EXPECT_EQ(run("--verify-only " + dir_ + "/ptprof.json --layers " + dir_ + "/layers.json " +
                dir_),
            1);
}

// gpu_graph_check's counts: every replayed kernel must name and be attributed to its
// capturing op, and graph_launches_only must give one event per replay.
TEST_F(GpuCheckScript, FlagsGraphReplaysWithoutTheirCapturingOp) {
  write_json(dir_ + "/ptprof.json", ptprof_trace());
  json graph = {{"replays", 5},
                {"lean", {{"kernels", 80}, {"graph_kernels", 60}, {"captured", 60},
                          {"attributed", 60}, {"graph_launches", 0}}},
                {"graph_launches_only", {{"kernels", 5}, {"graph_kernels", 0},
                                         {"captured", 0}, {"attributed", 0},
                                         {"graph_launches", 5}}}};
  const std::string args =
      "--verify-only " + dir_ + "/ptprof.json --graph " + dir_ + "/graph.json " + dir_;
  write_json(dir_ + "/graph.json", graph);
  ASSERT_EQ(run(args), 0);
  EXPECT_EQ(read_json(dir_ + "/gpu-check.json").at("graph").at("lean").at("attributed"), 60);
  graph["lean"]["attributed"] = 48;  // 12 left with the replay's range
  write_json(dir_ + "/graph.json", graph);
  EXPECT_EQ(run(args), 1);
  graph["lean"]["attributed"] = 60;
  graph["graph_launches_only"]["graph_launches"] = 4;
  write_json(dir_ + "/graph.json", graph);
  EXPECT_EQ(run(args), 1);
}

TEST_F(GpuCheckScript, FullRunWithoutAGpuSaysSo) {
  void* driver = ::dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (driver != nullptr) {
    ::dlclose(driver);
    GTEST_SKIP() << "a CUDA driver is here: the full check is scripts/gpu-check's own run";
  }
  // python3 without torch, or torch without a CUDA device: exit 3, nothing built.
  EXPECT_EQ(run(dir_ + "/full"), 3);
}

// gpu_memory_snapshot_check's memory.json: a window's snapshot read back with trace entries
// and stack frames, and an OOM snapshot holding the failed request; anything less fails.
TEST_F(GpuCheckScript, FlagsMissingOrEmptyCudaMemorySnapshots) {
  write_json(dir_ + "/ptprof.json", ptprof_trace());
  json memory = {{"steps", 6},
                 {"baseline_step_ms", 1.0},
                 {"history_step_ms", 1.2},
                 {"oom_bytes", 1000},
                 {"oom_thrown", true},
                 {"traces", 1},
                 {"window_snapshots",
                  {{{"path", "w.memory_snapshot.pickle"}, {"bytes", 90000}, {"segments", 4},
                    {"trace_entries", 300}, {"stacks", 20}, {"frames", 400},
                    {"peak_bytes", 1 << 24}, {"ooms", 0}, {"oom_requested", 0}}}},
                 {"oom_snapshots",
                  {{{"path", "w.oom.memory_snapshot.pickle"}, {"bytes", 91000}, {"segments", 4},
                    {"trace_entries", 310}, {"stacks", 21}, {"frames", 410},
                    {"peak_bytes", 1 << 24}, {"ooms", 1}, {"oom_requested", 1024}}}},
                 {"messages", json::array()}};
  const std::string args =
      "--verify-only " + dir_ + "/ptprof.json --memory " + dir_ + "/memory.json " + dir_;
  write_json(dir_ + "/memory.json", memory);
  ASSERT_EQ(run(args), 0);
  EXPECT_EQ(read_json(dir_ + "/gpu-check.json").at("memory").at("history_step_ms"), 1.2);
  json bad = memory;
  bad["oom_snapshots"] = json::array();  // the observer wrote nothing
  write_json(dir_ + "/memory.json", bad);
  EXPECT_EQ(run(args), 1);
  bad = memory;
  bad["window_snapshots"][0]["frames"] = 0;  // no C++ stacks
  write_json(dir_ + "/memory.json", bad);
  EXPECT_EQ(run(args), 1);
  bad = memory;
  bad["window_snapshots"][0] = {{"path", "w.memory_snapshot.pickle"}, {"read_error", "bad pickle"}};
  write_json(dir_ + "/memory.json", bad);
  EXPECT_EQ(run(args), 1);
}

}  // namespace
}  // namespace ptprof::detail
