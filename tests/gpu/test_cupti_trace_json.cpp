// CPU ops + decoded, correlated GPU events written by Trace::to_json() and read back: the
// kernel args, flows and External ids PyTorch's profiler writes.
#include <gtest/gtest.h>

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "trace/clock.h"
#include "cupti_test_util.h"
#include "gpu/cupti_correlator.h"
#include "gpu/cupti_decode.h"
#include "ptprof/trace_handler.h"

namespace ptprof::detail {
namespace {

using json = nlohmann::json;

constexpr int64_t kPid = 4242;
constexpr int64_t kTid = 100;
constexpr uint32_t kCuptiThread = 0xA1;

class TraceJsonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    unix_offset_ = measure_unix_offset_ns();
    start_ = now_ns();
    trace_.pid = kPid;
    trace_.process_name = "train";
    trace_.worker_name = "host_4242";
    trace_.window_start_ns = start_ + unix_offset_;
    trace_.window_end_ns = start_ + 10000000 + unix_offset_;
    trace_.threads.push_back(ThreadInfo{kTid, 1, "main"});
    for (const test::GpuDeviceInfo& d : {test::h100(0)}) trace_.devices.push_back(d.props);
    trace_.metadata["cupti_version"] = "130001";
    op("ProfilerStep#1", 1, 0, 9000, EventKind::UserAnnotation);
    op("train", 5, 50, 8000, EventKind::UserAnnotation);
    op("aten::linear", 2, 100, 400);
    op("aten::addmm", 3, 110, 390);
    op("aten::copy_", 4, 500, 700);

    ActivityDecoder dec(trace_, {test::h100(0)}, [](CUpti_CallbackDomain d, uint32_t c) {
      return real_cupti_api().callback_name(d, c);
    });
    Correlator cor;
    auto feed = [&](const auto& r) { test::feed(dec, cor, r); };
    feed(test::ext_record(10, 3));
    feed(test::api_record(false, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 10, t(120),
                          t(126), kCuptiThread, kPid));
    feed(test::kernel_record("_Z4gemmPKfS0_Pf", 10, t(200), t(260)));
    feed(test::ext_record(11, 4));
    feed(test::api_record(false, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, 11, t(510), t(520),
                          kCuptiThread, kPid));
    feed(test::memcpy_record(CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, CUPTI_ACTIVITY_MEMORY_KIND_PINNED,
                             CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 1000000, 11, t(530), t(580)));
    feed(test::ext_record(12, 4));
    feed(test::api_record(false, CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020, 12, t(600), t(605),
                          kCuptiThread, kPid));
    feed(test::memset_record(4096, 12, t(610), t(611)));
    CorrelationWindow w;
    w.start_ns = start_;
    w.end_ns = start_ + 10000000;
    w.unix_offset_ns = unix_offset_;
    cor.finish(w, {{kCuptiThread, kTid}}, trace_);
    trace_.rebuild_tree();
    doc_ = json::parse(trace_.to_json());
    base_ = doc_.at("baseTimeNanoseconds").get<int64_t>();
  }

  uint64_t t(int64_t us) const { return static_cast<uint64_t>(start_ + us * 1000); }
  void op(const char* name, uint64_t id, int64_t start_us, int64_t end_us,
          EventKind kind = EventKind::CpuOp) {
    Event e;
    e.kind = kind;
    e.name = trace_.intern(name);
    e.start_ns = start_ + start_us * 1000 + unix_offset_;
    e.duration_ns = (end_us - start_us) * 1000;
    e.pid = kPid;
    e.tid = kTid;
    e.external_id = id;
    trace_.events.push_back(e);
  }
  // The trace's ts of monotonic window-relative microseconds.
  double ts(int64_t us) const {
    return static_cast<double>(start_ + us * 1000 + unix_offset_ - base_) / 1000.0;
  }
  std::vector<json> events(const std::string& cat) const {
    std::vector<json> out;
    for (const json& e : doc_.at("traceEvents")) {
      if (e.value("cat", "") == cat) out.push_back(e);
    }
    return out;
  }
  json one(const std::string& cat, const std::string& name) const {
    std::vector<json> found;
    for (const json& e : events(cat)) {
      if (e.at("name") == name) found.push_back(e);
    }
    EXPECT_EQ(found.size(), 1u) << cat << " " << name;
    return found.empty() ? json() : found[0];
  }

  Trace trace_;
  int64_t unix_offset_ = 0;
  int64_t start_ = 0;
  int64_t base_ = 0;
  json doc_;
};

TEST_F(TraceJsonTest, KernelArgs) {
  const json k = one("kernel", "gemm(float const*, float const*, float*)");
  EXPECT_EQ(k.at("ph"), "X");
  EXPECT_EQ(k.at("pid"), 0);
  EXPECT_EQ(k.at("tid"), 7);
  EXPECT_NEAR(k.at("ts").get<double>(), ts(200), 0.0011);
  EXPECT_NEAR(k.at("dur").get<double>(), 60.0, 0.0011);
  const json& a = k.at("args");
  EXPECT_EQ(a.at("External id"), 3);
  EXPECT_EQ(a.at("correlation"), 10);
  EXPECT_EQ(a.at("device"), 0);
  EXPECT_EQ(a.at("stream"), 7);
  EXPECT_EQ(a.at("context"), 1);
  EXPECT_EQ(a.at("queued"), 0);
  EXPECT_EQ(a.at("registers per thread"), 32);
  EXPECT_EQ(a.at("shared memory"), 0);
  EXPECT_DOUBLE_EQ(a.at("blocks per SM").get<double>(), 4.0);
  EXPECT_DOUBLE_EQ(a.at("warps per SM").get<double>(), 32.0);
  EXPECT_EQ(a.at("grid"), json::array({528, 1, 1}));
  EXPECT_EQ(a.at("block"), json::array({256, 1, 1}));
  EXPECT_EQ(a.at("est. achieved occupancy %"), 50);
}

TEST_F(TraceJsonTest, CopiesCarryBytesAndBandwidth) {
  const json m = one("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)");
  EXPECT_EQ(m.at("args").at("External id"), 4);
  EXPECT_EQ(m.at("args").at("bytes"), 1000000);
  EXPECT_EQ(m.at("args").at("correlation"), 11);
  EXPECT_EQ(m.at("args").at("stream"), 7);
  // 1e6 bytes in 50 us: 20 GB/s (bytes per ns).
  EXPECT_DOUBLE_EQ(m.at("args").at("memory bandwidth (GB/s)").get<double>(), 20.0);
  const json s = one("gpu_memset", "Memset (Device)");
  EXPECT_EQ(s.at("args").at("bytes"), 4096);
  EXPECT_EQ(s.at("args").at("External id"), 4);
}

TEST_F(TraceJsonTest, RuntimeCallsAndOpsShareExternalIds) {
  const json rt = one("cuda_runtime", "cudaLaunchKernel");
  EXPECT_EQ(rt.at("pid"), kPid);
  EXPECT_EQ(rt.at("tid"), kTid);
  EXPECT_EQ(rt.at("args").at("External id"), 3);
  EXPECT_EQ(rt.at("args").at("cbid"), 211);
  EXPECT_EQ(rt.at("args").at("correlation"), 10);
  EXPECT_EQ(one("cpu_op", "aten::addmm").at("args").at("External id"), 3);
  EXPECT_EQ(one("cuda_runtime", "cudaMemcpyAsync").at("args").at("External id"), 4);
  EXPECT_EQ(one("cpu_op", "aten::copy_").at("args").at("External id"), 4);
  EXPECT_FALSE(one("kernel", "gemm(float const*, float const*, float*)")
                   .at("args")
                   .contains("Record function id"));
  EXPECT_FALSE(rt.at("args").contains("stream"));  // HTA tells CPU from GPU by it
}

TEST_F(TraceJsonTest, FlowsFromEachLaunchToItsGpuWork) {
  std::map<int64_t, json> starts, ends;
  for (const json& e : doc_.at("traceEvents")) {
    if (e.value("cat", "") != "ac2g") continue;
    EXPECT_EQ(e.at("name"), "ac2g");
    const int64_t id = e.at("id").get<int64_t>();
    if (e.at("ph") == "s") {
      EXPECT_TRUE(starts.emplace(id, e).second) << id;
    } else {
      ASSERT_EQ(e.at("ph"), "f");
      EXPECT_EQ(e.at("bp"), "e");
      EXPECT_TRUE(ends.emplace(id, e).second) << id;
    }
  }
  ASSERT_EQ(starts.size(), 3u);
  ASSERT_EQ(ends.size(), 3u);
  for (int64_t id : {10, 11, 12}) {
    SCOPED_TRACE(id);
    ASSERT_TRUE(starts.count(id) && ends.count(id));
    EXPECT_EQ(starts[id].at("pid"), kPid);
    EXPECT_EQ(starts[id].at("tid"), kTid);
    EXPECT_EQ(ends[id].at("pid"), 0);
    EXPECT_EQ(ends[id].at("tid"), 7);
    EXPECT_LE(starts[id].at("ts").get<double>(), ends[id].at("ts").get<double>());
  }
  EXPECT_NEAR(starts[10].at("ts").get<double>(), ts(120), 0.0011);
  EXPECT_NEAR(ends[10].at("ts").get<double>(), ts(200), 0.0011);
}

TEST_F(TraceJsonTest, UserRangeOnTheGpu) {
  EXPECT_EQ(events("gpu_user_annotation").size(), 2u);  // train and ProfilerStep#1
  EXPECT_EQ(one("gpu_user_annotation", "ProfilerStep#1").at("args").at("External id"), 1);
  const json g = one("gpu_user_annotation", "train");
  EXPECT_EQ(g.at("pid"), 0);
  EXPECT_EQ(g.at("tid"), 7);
  EXPECT_EQ(g.at("args").at("External id"), 5);
  EXPECT_EQ(g.at("args").size(), 1u);
  // From the gemm's start to the memset's end, 1 ns wider each side.
  EXPECT_NEAR(g.at("ts").get<double>(), ts(200) - 0.001, 0.0011);
  EXPECT_NEAR(g.at("dur").get<double>(), 411.002, 0.0011);
}

// TensorBoard's files (Trace::SaveOptions::tensorboard): runtime calls as "Runtime", no GPU spans
// of the steps (the user ranges' stay); exact_schema writes PyTorch's categories.
TEST_F(TraceJsonTest, TensorBoardFilesAreWhatThePluginReads) {
  const std::string dir =
      ::testing::TempDir() + "/ptprof_tb_flavour_" + std::to_string(::getpid());
  auto written = [&](bool exact) {
    const std::string sub = dir + (exact ? "/exact" : "/default");
    tensorboard_trace_handler(sub, "w", false, exact)->handle(trace_);
    DIR* d = ::opendir(sub.c_str());
    EXPECT_NE(d, nullptr);
    std::vector<std::string> names;
    while (const dirent* ent = d ? ::readdir(d) : nullptr)
      if (ent->d_name[0] != '.') names.push_back(sub + "/" + ent->d_name);
    if (d) ::closedir(d);
    EXPECT_EQ(names.size(), 1u);
    std::ifstream f(names.at(0));
    const json doc = json::parse(f);
    std::remove(names.at(0).c_str());
    ::rmdir(sub.c_str());
    std::map<std::string, std::vector<std::string>> by_cat;
    for (const json& e : doc.at("traceEvents"))
      if (e.value("ph", "") == "X") by_cat[e.at("cat")].push_back(e.at("name"));
    for (auto& [cat, names] : by_cat) std::sort(names.begin(), names.end());
    return by_cat;
  };
  auto tb = written(false);
  EXPECT_EQ(tb["gpu_user_annotation"], std::vector<std::string>{"train"});
  EXPECT_EQ(tb["Runtime"],
            (std::vector<std::string>{"cudaLaunchKernel", "cudaMemcpyAsync", "cudaMemsetAsync"}));
  EXPECT_EQ(tb.count("cuda_runtime"), 0u);
  auto exact = written(true);
  EXPECT_EQ(exact["gpu_user_annotation"], (std::vector<std::string>{"ProfilerStep#1", "train"}));
  EXPECT_EQ(exact["cuda_runtime"].size(), 3u);
  EXPECT_EQ(exact.count("Runtime"), 0u);
  ::rmdir(dir.c_str());
}

TEST_F(TraceJsonTest, DevicesStreamsAndVersions) {
  const json& d = doc_.at("deviceProperties");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].at("id"), 0);
  EXPECT_EQ(d[0].at("name"), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(d[0].at("numSms"), 132);
  EXPECT_EQ(d[0].at("computeMajor"), 9);
  EXPECT_EQ(doc_.at("cupti_version"), 130001);
  bool stream_named = false, gpu_labeled = false;
  for (const json& e : doc_.at("traceEvents")) {
    if (e.at("ph") != "M") continue;
    if (e.at("name") == "thread_name" && e.at("pid") == 0 && e.at("tid") == 7)
      stream_named = e.at("args").at("name") == "stream 7 ";
    if (e.at("name") == "process_labels" && e.at("pid") == 0)
      gpu_labeled = e.at("args").at("labels") == "GPU 0";
  }
  EXPECT_TRUE(stream_named);
  EXPECT_TRUE(gpu_labeled);
}

}  // namespace
}  // namespace ptprof::detail
