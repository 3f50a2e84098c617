// ptprof/key_averages.h: per-name aggregates of a trace and torch.profiler's table.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ptprof {

struct KeyAverage {
  std::string key;  // op or range name
  std::string input_shapes;  // only when grouped by input shape
  // Only when grouped by stack: the frames grouped by, KeyAverages::stacks[stack]; -1: none.
  int32_t stack = -1;
  int64_t count = 0;
  int64_t self_cpu_time_total_ns = 0;
  int64_t cpu_time_total_ns = 0;
  int64_t self_device_time_total_ns = 0;
  int64_t device_time_total_ns = 0;
  bool is_user_annotation = false;
  bool is_device_activity = false;  // a kernel, copy or memset row
  // profile_memory: bytes allocated minus freed inside the op (self) / with its children.
  int64_t cpu_memory_usage = 0;
  int64_t self_cpu_memory_usage = 0;
  int64_t device_memory_usage = 0;
  int64_t self_device_memory_usage = 0;
  uint64_t flops = 0;  // with_flops: estimated total

  int64_t cpu_time_avg_ns() const { return count ? cpu_time_total_ns / count : 0; }
  int64_t device_time_avg_ns() const { return count ? device_time_total_ns / count : 0; }
};

// What a table is sorted by (descending), with torch.profiler's names in table(sort_by=...).
enum class SortBy {
  None,                  // order of first appearance
  SelfCpuTimeTotal,      // "self_cpu_time_total"
  CpuTimeTotal,          // "cpu_time_total"
  CpuTime,               // "cpu_time" (average)
  SelfDeviceTimeTotal,   // "self_cuda_time_total", "self_device_time_total"
  DeviceTimeTotal,       // "cuda_time_total", "device_time_total"
  DeviceTime,            // "cuda_time", "device_time"
  Count,                 // "count"
  CpuMemoryUsage,        // "cpu_memory_usage"
  SelfCpuMemoryUsage,    // "self_cpu_memory_usage"
  DeviceMemoryUsage,     // "cuda_memory_usage", "device_memory_usage"
  SelfDeviceMemoryUsage, // "self_cuda_memory_usage", "self_device_memory_usage"
  Flops,                 // "flops"
};

// Parses torch.profiler's sort_by names; throws ptprof::Error listing the valid ones.
SortBy parse_sort_by(const std::string& name);

class KeyAverages {
 public:
  std::vector<KeyAverage> rows;
  bool has_device_time = false;
  bool has_input_shapes = false;
  bool has_stacks = false;  // grouped by stack
  // Grouped by stack: each distinct stack the rows were grouped by (its innermost
  // group_by_stack_n frames, outermost first), once, however many rows share it.
  std::vector<std::vector<std::string>> stacks;
  bool has_memory = false;
  bool has_device_memory = false;
  bool has_flops = false;

  const KeyAverage* find(const std::string& key) const;
  void sort(SortBy by);

  // The table torch.profiler's key_averages().table() prints, same columns and formats.
  std::string table(SortBy sort_by = SortBy::None, int row_limit = 100) const;
  std::string table(const std::string& sort_by, int row_limit = 100) const;
};

// Per-kernel-name statistics of a trace's GPU kernels.
struct KernelStat {
  std::string name;
  int64_t count = 0;
  int64_t total_ns = 0;
  int64_t min_ns = 0;
  int64_t max_ns = 0;
  int64_t avg_ns() const { return count ? total_ns / count : 0; }
};

class KernelTable {
 public:
  std::vector<KernelStat> rows;  // by total time, largest first
  // Name, # of Calls, Total, Average, Min, Max; times as in torch.profiler's tables.
  std::string table(int row_limit = 100) const;
};

}  // namespace ptprof
