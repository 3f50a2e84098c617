// Helpers of the view's tests: a scratch directory per test, traces written into it, and
// JSON parsed back (nlohmann, for the tests only).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "ptprof/trace.h"
#include "trace_builder.h"

namespace ptprof::test {

class ScratchDir {
 public:
  ScratchDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::temp_directory_path() /
            ("ptprof_view_" + std::to_string(::getpid()) + "_" + info->test_suite_name() + "_" +
             info->name());
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::permissions(path_, std::filesystem::perms::owner_all,
                                 std::filesystem::perm_options::add, ec);
    std::filesystem::remove_all(path_, ec);
  }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }
  std::string str() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

inline void write_text(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

// A training trace with GPU work, launch flows, memory events, stacks and input shapes.
inline Trace rich_trace(int steps = 4) {
  Trace t = training_trace(steps, 1000, true, "aten::mul", 50);
  for (Event& e : t.events) {
    if (e.kind == EventKind::CudaRuntime) e.flow_start = true;
    if (e.kind == EventKind::Kernel) e.flow_end = true;
  }
  t.stacks = {{"main", "train", "forward"}, {"main", "train", "backward"}};
  t.op_inputs = {{OpInput{OpInput::Kind::Tensor, "float", {8, 16}, {16, 1}, {}, "", 0}}};
  int i = 0;
  for (Event& e : t.events)
    if (e.kind == EventKind::CpuOp) {
      e.stack = i % 2;
      e.inputs = 0;
      ++i;
    }
  int64_t total = 0;
  for (const Event& e : t.events) {
    if (e.kind != EventKind::CpuOp) continue;
    MemoryEvent m;
    m.time_ns = e.start_ns + 1;
    m.pid = e.pid;
    m.tid = e.tid;
    m.address = 0x1000 + static_cast<uint64_t>(total);
    m.bytes = 4096;
    total += m.bytes;
    m.total_allocated = total;
    m.total_reserved = 1 << 20;
    m.device_type = 1;
    m.device_index = 0;
    t.memory_events.push_back(m);
  }
  t.attribute_memory();
  return t;
}

inline nlohmann::json parse(const std::string& text) { return nlohmann::json::parse(text); }

}  // namespace ptprof::test
