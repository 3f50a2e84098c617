#include "ptprof/key_averages.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string_view>
#include <unordered_map>

#include "trace/json_writer.h"  // format_fixed
#include "ptprof/error.h"
#include "ptprof/trace.h"

namespace ptprof {

namespace {

// Names torch.profiler leaves out of its tables.
bool filtered(std::string_view name) {
  return name == "[memory]" || name == "[OutOfMemory]" || name == "aten::is_leaf" ||
         name == "aten::output_nr" || name == "aten::_version" ||
         name.rfind("profiler::_record_function_", 0) == 0;
}

bool device_activity(EventKind k) {
  return k == EventKind::Kernel || k == EventKind::Memcpy || k == EventKind::Memset;
}

// PyTorch's str(input_shapes): "[[8, 16], [16, 32], []]".
std::string input_shapes_text(const std::vector<OpInput>* inputs) {
  std::string s = "[";
  if (inputs) {
    for (std::size_t i = 0; i < inputs->size(); ++i) {
      const OpInput& in = (*inputs)[i];
      if (i) s += ", ";
      s += '[';
      if (in.kind == OpInput::Kind::Tensor) {
        for (std::size_t d = 0; d < in.sizes.size(); ++d)
          s += (d ? ", " : "") + std::to_string(in.sizes[d]);
      } else if (in.kind == OpInput::Kind::TensorList) {
        for (std::size_t k = 0; k < in.list_sizes.size(); ++k) {
          s += k ? ", [" : "[";
          for (std::size_t d = 0; d < in.list_sizes[k].size(); ++d)
            s += (d ? ", " : "") + std::to_string(in.list_sizes[k][d]);
          s += ']';
        }
      }
      s += ']';
    }
  }
  return s + "]";
}

}  // namespace

KeyAverages Trace::key_averages(bool group_by_input_shape, int group_by_stack_n) const {
  // Device time of each CPU op: the GPU activities launched under its External id (self),
  // plus what its children launched (total: summed into the rows of the op's ancestors
  // below).
  std::unordered_map<uint64_t, int64_t> device_by_external;
  bool any_device = false;
  for (const Event& e : events) {
    if (device_activity(e.kind)) {
      any_device = true;
      if (e.external_id != 0) device_by_external[e.external_id] += e.duration_ns;
    }
  }
  // torch.profiler's EventList._remove_dup_nodes: an op whose parent has the same name and no
  // other child is folded into the parent (e.g. a redispatched aten::copy_), so it is counted
  // once; the parent takes over its self time (summed down the chain below). An event's only
  // child, kMany where it has several: one array, where a large trace has millions of events.
  constexpr int64_t kMany = -2;
  std::vector<int64_t> only_child(events.size(), -1);
  for (std::size_t i = 0; i < events.size(); ++i) {
    const int64_t p = events[i].parent;
    if (p >= 0) only_child[p] = only_child[p] == -1 ? static_cast<int64_t>(i) : kMany;
  }
  std::vector<bool> folded(events.size(), false);
  for (std::size_t i = 0; i < events.size(); ++i) {
    const Event& e = events[i];
    if (e.parent >= 0 && only_child[e.parent] >= 0 && events[e.parent].name == e.name)
      folded[i] = true;
  }

  KeyAverages out;
  out.has_device_time = any_device;
  out.has_input_shapes = group_by_input_shape;
  out.has_memory = !memory_events.empty();
  for (const MemoryEvent& m : memory_events) out.has_device_memory |= m.device_type != 0;
  out.has_stacks = group_by_stack_n > 0;
  // Rows by (name, input shapes, stack). Op input lists and stacks are shared by index, so
  // each one's text is made once and equal texts get one id.
  auto ids_of = [](std::size_t n) { return std::vector<int32_t>(n, -2); };  // -2: not yet
  std::vector<int32_t> shape_id = ids_of(group_by_input_shape ? op_inputs.size() : 0);
  std::vector<int32_t> stack_id = ids_of(group_by_stack_n > 0 ? stacks.size() : 0);
  std::vector<std::string> shape_texts;
  std::vector<std::vector<std::string>>& stack_frames = out.stacks;
  std::unordered_map<std::string, int32_t> shape_of_text, stack_of_text;
  auto shapes_of = [&](int32_t inputs) -> int32_t {
    const bool known = inputs >= 0 && static_cast<std::size_t>(inputs) < op_inputs.size();
    int32_t* memo = known ? &shape_id[inputs] : nullptr;
    if (memo && *memo != -2) return *memo;
    std::string text = input_shapes_text(known ? &op_inputs[inputs] : nullptr);
    auto [it, inserted] = shape_of_text.emplace(text, static_cast<int32_t>(shape_texts.size()));
    if (inserted) shape_texts.push_back(std::move(text));
    if (memo) *memo = it->second;
    return it->second;
  };
  auto stack_of = [&](int32_t stack) -> int32_t {
    if (stack < 0 || static_cast<std::size_t>(stack) >= stacks.size()) return -1;
    int32_t& memo = stack_id[stack];
    if (memo != -2) return memo;
    const std::vector<std::string>& all = stacks[stack];
    const std::size_t n = std::min(all.size(), static_cast<std::size_t>(group_by_stack_n));
    std::vector<std::string> frames(all.end() - static_cast<std::ptrdiff_t>(n), all.end());
    std::string joined;
    for (const std::string& f : frames) joined.append(f).push_back('\0');
    auto [it, inserted] = stack_of_text.emplace(joined, static_cast<int32_t>(stack_frames.size()));
    if (inserted) stack_frames.push_back(std::move(frames));
    memo = it->second;
    return memo;
  };
  struct RowKey {
    std::string_view name;
    int32_t shapes, stack;
    bool operator==(const RowKey& o) const {
      return name == o.name && shapes == o.shapes && stack == o.stack;
    }
  };
  struct RowKeyHash {
    std::size_t operator()(const RowKey& k) const {
      return std::hash<std::string_view>()(k.name) ^
             (static_cast<std::size_t>(static_cast<uint32_t>(k.shapes)) * 0x9E3779B97F4A7C15ULL) ^
             (static_cast<std::size_t>(static_cast<uint32_t>(k.stack)) * 0xC2B2AE3D27D4EB4FULL);
    }
  };
  std::unordered_map<RowKey, std::size_t, RowKeyHash> row_of;
  // Each event's row, -1 where it is in none: device time and profile_memory's bytes are
  // summed into the rows of an event's ancestors by it below, rather than held per event.
  std::vector<int32_t> row_of_event(any_device || !memory_events.empty() ? events.size() : 0, -1);
  for (std::size_t i = 0; i < events.size(); ++i) {
    const Event& e = events[i];
    if (e.kind == EventKind::CudaRuntime || e.kind == EventKind::CudaDriver ||
        e.kind == EventKind::CudaSync || e.kind == EventKind::GpuUserAnnotation ||
        e.kind == EventKind::Overhead)
      continue;
    if (filtered(e.name) || folded[i]) continue;
    const RowKey key{e.name, group_by_input_shape ? shapes_of(e.inputs) : -1,
                     group_by_stack_n > 0 ? stack_of(e.stack) : -1};
    auto [it, inserted] = row_of.emplace(key, out.rows.size());
    if (inserted) {
      KeyAverage row;
      row.key = std::string(e.name);
      if (key.shapes >= 0) row.input_shapes = shape_texts[key.shapes];
      row.stack = key.stack;
      row.is_user_annotation = e.kind == EventKind::UserAnnotation;
      row.is_device_activity = device_activity(e.kind);
      out.rows.push_back(std::move(row));
    }
    KeyAverage& row = out.rows[it->second];
    if (!row_of_event.empty()) row_of_event[i] = static_cast<int32_t>(it->second);
    ++row.count;
    row.flops += e.flops;
    out.has_flops |= e.flops != 0;
    if (device_activity(e.kind)) {
      row.self_device_time_total_ns += e.duration_ns;
      row.device_time_total_ns += e.duration_ns;
    } else {
      row.cpu_time_total_ns += e.duration_ns;
      // Self time and device time of this op itself and of its folded same-named children.
      for (int64_t k = static_cast<int64_t>(i);;) {
        row.self_cpu_time_total_ns += events[k].self_ns;
        if (events[k].external_id != 0) {
          auto d = device_by_external.find(events[k].external_id);
          if (d != device_by_external.end()) row.self_device_time_total_ns += d->second;
        }
        const int64_t next = only_child[k];
        if (next < 0 || !folded[next]) break;
        k = next;
      }
    }
  }
  // Device time launched under a CPU event's External id counts in the total of the event
  // and of each enclosing one, up the chain of CPU events.
  if (any_device) {
    for (std::size_t i = 0; i < events.size(); ++i) {
      const Event& e = events[i];
      if (is_gpu(e.kind) || e.external_id == 0) continue;
      auto d = device_by_external.find(e.external_id);
      if (d == device_by_external.end()) continue;
      for (int64_t k = static_cast<int64_t>(i); k >= 0 && !is_gpu(events[k].kind);
           k = events[k].parent)
        if (const int32_t r = row_of_event[k]; r >= 0 && !device_activity(events[k].kind))
          out.rows[r].device_time_total_ns += d->second;
    }
  }
  // profile_memory: each event's bytes go to its innermost op (self) and to every op
  // enclosing it (total), in the rows those ops are in.
  for (const MemoryEvent& m : memory_events) {
    if (m.op < 0 || m.op >= static_cast<int64_t>(events.size())) continue;
    const bool cpu = m.device_type == 0;
    if (const int32_t r = row_of_event[m.op]; r >= 0)
      (cpu ? out.rows[r].self_cpu_memory_usage : out.rows[r].self_device_memory_usage) += m.bytes;
    for (int64_t k = m.op; k >= 0; k = events[k].parent)
      if (const int32_t r = row_of_event[k]; r >= 0)
        (cpu ? out.rows[r].cpu_memory_usage : out.rows[r].device_memory_usage) += m.bytes;
  }
  return out;
}

const KeyAverage* KeyAverages::find(const std::string& key) const {
  for (const KeyAverage& r : rows)
    if (r.key == key) return &r;
  return nullptr;
}

SortBy parse_sort_by(const std::string& name) {
  static const std::pair<const char*, SortBy> kNames[] = {
      {"self_cpu_time_total", SortBy::SelfCpuTimeTotal},
      {"cpu_time_total", SortBy::CpuTimeTotal},
      {"cpu_time", SortBy::CpuTime},
      {"self_cuda_time_total", SortBy::SelfDeviceTimeTotal},
      {"self_device_time_total", SortBy::SelfDeviceTimeTotal},
      {"cuda_time_total", SortBy::DeviceTimeTotal},
      {"device_time_total", SortBy::DeviceTimeTotal},
      {"cuda_time", SortBy::DeviceTime},
      {"device_time", SortBy::DeviceTime},
      {"count", SortBy::Count},
      {"cpu_memory_usage", SortBy::CpuMemoryUsage},
      {"self_cpu_memory_usage", SortBy::SelfCpuMemoryUsage},
      {"cuda_memory_usage", SortBy::DeviceMemoryUsage},
      {"device_memory_usage", SortBy::DeviceMemoryUsage},
      {"self_cuda_memory_usage", SortBy::SelfDeviceMemoryUsage},
      {"self_device_memory_usage", SortBy::SelfDeviceMemoryUsage},
      {"flops", SortBy::Flops},
  };
  if (name.empty()) return SortBy::None;
  std::string valid;
  for (const auto& [n, v] : kNames) {
    if (name == n) return v;
    valid += std::string(valid.empty() ? "" : ", ") + n;
  }
  throw Error("ptprof: unknown sort_by \"" + name + "\" (valid: " + valid + ")");
}

void KeyAverages::sort(SortBy by) {
  auto metric = [by](const KeyAverage& r) -> int64_t {
    switch (by) {
      case SortBy::SelfCpuTimeTotal: return r.self_cpu_time_total_ns;
      case SortBy::CpuTimeTotal: return r.cpu_time_total_ns;
      case SortBy::CpuTime: return r.cpu_time_avg_ns();
      case SortBy::SelfDeviceTimeTotal: return r.self_device_time_total_ns;
      case SortBy::DeviceTimeTotal: return r.device_time_total_ns;
      case SortBy::DeviceTime: return r.device_time_avg_ns();
      case SortBy::Count: return r.count;
      case SortBy::CpuMemoryUsage: return r.cpu_memory_usage;
      case SortBy::SelfCpuMemoryUsage: return r.self_cpu_memory_usage;
      case SortBy::DeviceMemoryUsage: return r.device_memory_usage;
      case SortBy::SelfDeviceMemoryUsage: return r.self_device_memory_usage;
      case SortBy::Flops: return static_cast<int64_t>(r.flops);
      case SortBy::None: return 0;
    }
    return 0;
  };
  if (by == SortBy::None) return;
  std::stable_sort(rows.begin(), rows.end(),
                   [&](const KeyAverage& a, const KeyAverage& b) { return metric(a) > metric(b); });
}

namespace {

// torch.profiler's _format_time: microseconds with three decimals, unit chosen by size.
// Numbers through format_fixed, not printf: a host program's locale must not change a table.
std::string format_time(int64_t ns) {
  const double us = static_cast<double>(ns) / 1000.0;
  if (us >= 1e6) return detail::format_fixed(us / 1e6, 3) + "s";
  if (us >= 1e3) return detail::format_fixed(us / 1e3, 3) + "ms";
  return detail::format_fixed(us, 3) + "us";
}

std::string format_share(int64_t part, int64_t total) {
  if (total == 0) return "NaN";
  return detail::format_fixed(static_cast<double>(part) * 100.0 / static_cast<double>(total), 2) +
         "%";
}

// torch.profiler's _format_memory.
std::string format_memory(int64_t bytes) {
  const double kb = 1024.0, mb = kb * 1024, gb = mb * 1024;
  const double b = static_cast<double>(bytes);
  if (std::abs(b) >= gb) return detail::format_fixed(b / gb, 2) + " Gb";
  if (std::abs(b) >= mb) return detail::format_fixed(b / mb, 2) + " Mb";
  if (std::abs(b) >= kb) return detail::format_fixed(b / kb, 2) + " Kb";
  return std::to_string(bytes) + " b";
}

void pad_right_aligned(std::string& line, const std::string& cell, std::size_t width) {
  if (cell.size() < width) line.append(width - cell.size(), ' ');
  line += cell;
  line += "  ";
}

}  // namespace

KernelTable Trace::kernel_table() const {
  KernelTable out;
  std::unordered_map<std::string_view, std::size_t> row_of;
  for (const Event& e : events) {
    if (e.kind != EventKind::Kernel) continue;
    auto [it, inserted] = row_of.emplace(e.name, out.rows.size());
    if (inserted) {
      KernelStat st;
      st.name = std::string(e.name);
      st.min_ns = e.duration_ns;
      st.max_ns = e.duration_ns;
      out.rows.push_back(std::move(st));
    }
    KernelStat& st = out.rows[it->second];
    ++st.count;
    st.total_ns += e.duration_ns;
    st.min_ns = std::min(st.min_ns, e.duration_ns);
    st.max_ns = std::max(st.max_ns, e.duration_ns);
  }
  std::stable_sort(out.rows.begin(), out.rows.end(),
                   [](const KernelStat& a, const KernelStat& b) { return a.total_ns > b.total_ns; });
  return out;
}

std::string KernelTable::table(int row_limit) const {
  constexpr std::size_t kMaxName = 80;
  std::size_t name_width = 10;
  for (const KernelStat& r : rows) name_width = std::max(name_width, r.name.size() + 4);
  name_width = std::min(name_width, kMaxName);
  const std::vector<std::string> headers = {"Kernel", "# of Calls", "Total", "Average", "Min",
                                            "Max"};
  auto width_of = [&](std::size_t c) { return c == 0 ? name_width : std::size_t{12}; };
  std::string sep;
  for (std::size_t c = 0; c < headers.size(); ++c) sep += std::string(width_of(c), '-') + "  ";
  auto line = [&](const std::vector<std::string>& cells) {
    std::string l;
    for (std::size_t c = 0; c < cells.size(); ++c) pad_right_aligned(l, cells[c], width_of(c));
    return l + "\n";
  };
  std::string out = sep + "\n" + line(headers) + sep + "\n";
  int shown = 0;
  int64_t total = 0;
  for (const KernelStat& r : rows) total += r.total_ns;
  for (const KernelStat& r : rows) {
    if (row_limit >= 0 && shown++ == row_limit) break;
    std::string name = r.name;
    if (name.size() >= kMaxName - 3) name = name.substr(0, kMaxName - 3) + "...";
    out += line({name, std::to_string(r.count), format_time(r.total_ns), format_time(r.avg_ns()),
                 format_time(r.min_ns), format_time(r.max_ns)});
  }
  out += sep + "\nKernel time total: " + format_time(total) + "\n";
  return out;
}

std::string KeyAverages::table(const std::string& sort_by, int row_limit) const {
  return table(parse_sort_by(sort_by), row_limit);
}

std::string KeyAverages::table(SortBy sort_by, int row_limit) const {
  KeyAverages sorted = *this;
  sorted.sort(sort_by);
  constexpr std::size_t kMaxName = 55;
  constexpr std::size_t kColumn = 12;
  std::size_t name_width = 4;
  for (const KeyAverage& r : sorted.rows) name_width = std::max(name_width, r.key.size() + 4);
  name_width = std::min(name_width, kMaxName);
  std::size_t shapes_width = 12;
  if (has_input_shapes) {
    for (const KeyAverage& r : sorted.rows)
      shapes_width = std::max(shapes_width, r.input_shapes.size() + 4);
    shapes_width = std::min<std::size_t>(shapes_width, 80);
  }

  std::vector<std::string> headers = {"Name", "Self CPU %", "Self CPU", "CPU total %",
                                      "CPU total", "CPU time avg"};
  if (has_device_time) {
    for (const char* h : {"Self CUDA", "Self CUDA %", "CUDA total", "CUDA time avg"})
      headers.push_back(h);
  }
  if (has_memory) {
    headers.push_back("CPU Mem");
    headers.push_back("Self CPU Mem");
    if (has_device_memory) {
      headers.push_back("CUDA Mem");
      headers.push_back("Self CUDA Mem");
    }
  }
  headers.push_back("# of Calls");
  // torch.profiler's auto_scale_flops: one unit for the column, from the largest value.
  uint64_t max_flops = 0;
  for (const KeyAverage& r : sorted.rows) max_flops = std::max(max_flops, r.flops);
  int flops_scale = 0;
  for (uint64_t v = max_flops; v >= 1000 && flops_scale < 5; v /= 1000) ++flops_scale;
  static const char* kFlopUnits[] = {"", "K", "M", "G", "T", "P"};
  if (has_flops) {
    headers.push_back(std::string("Total ") + kFlopUnits[flops_scale] + "FLOPs");
    headers.push_back("FLOP/s");
  }
  if (has_input_shapes) headers.push_back("Input Shapes");

  auto width_of = [&](std::size_t col) {
    if (col == 0) return name_width;
    if (has_input_shapes && col == headers.size() - 1) return shapes_width;
    if (headers[col] == "FLOP/s") return std::size_t{18};
    return kColumn;
  };
  std::string sep;
  for (std::size_t c = 0; c < headers.size(); ++c) sep += std::string(width_of(c), '-') + "  ";
  auto row_line = [&](const std::vector<std::string>& cells) {
    std::string line;
    for (std::size_t c = 0; c < cells.size(); ++c) pad_right_aligned(line, cells[c], width_of(c));
    return line;
  };

  int64_t self_cpu_total = 0;
  int64_t self_device_total = 0;
  for (const KeyAverage& r : sorted.rows) {
    self_cpu_total += r.self_cpu_time_total_ns;
    // As torch: device time is summed over the device's own rows, not again over the CPU ops
    // that launched it.
    if (r.is_device_activity) self_device_total += r.self_device_time_total_ns;
  }

  std::string out;
  out += sep + "\n" + row_line(headers) + "\n" + sep + "\n";
  int shown = 0;
  for (const KeyAverage& r : sorted.rows) {
    if (row_limit >= 0 && shown == row_limit) break;
    ++shown;
    std::string name = r.key;
    if (name.size() >= kMaxName - 3) name = name.substr(0, kMaxName - 3) + "...";
    std::vector<std::string> cells = {name,
                                      format_share(r.self_cpu_time_total_ns, self_cpu_total),
                                      format_time(r.self_cpu_time_total_ns),
                                      format_share(r.cpu_time_total_ns, self_cpu_total),
                                      format_time(r.cpu_time_total_ns),
                                      format_time(r.cpu_time_avg_ns())};
    if (has_device_time) {
      cells.push_back(format_time(r.self_device_time_total_ns));
      cells.push_back(format_share(r.self_device_time_total_ns, self_device_total));
      cells.push_back(format_time(r.device_time_total_ns));
      cells.push_back(format_time(r.device_time_avg_ns()));
    }
    if (has_memory) {
      cells.push_back(format_memory(r.cpu_memory_usage));
      cells.push_back(format_memory(r.self_cpu_memory_usage));
      if (has_device_memory) {
        cells.push_back(format_memory(r.device_memory_usage));
        cells.push_back(format_memory(r.self_device_memory_usage));
      }
    }
    cells.push_back(std::to_string(r.count));
    if (has_flops) {
      cells.push_back(r.flops ? detail::format_fixed(
                                    static_cast<double>(r.flops) / std::pow(1000.0, flops_scale), 3)
                              : "--");
      if (r.flops && r.cpu_time_total_ns > 0) {
        double rate = static_cast<double>(r.flops) * 1e9 / static_cast<double>(r.cpu_time_total_ns);
        int k = 0;
        while (rate >= 1000 && k < 5) {
          rate /= 1000;
          ++k;
        }
        cells.push_back(detail::format_fixed(rate, 3) + " " + kFlopUnits[k] + "FLOP/s");
      } else {
        cells.push_back("--");
      }
    }
    if (has_input_shapes) cells.push_back(r.input_shapes);
    out += row_line(cells) + "\n";
  }
  out += sep + "\n";
  out += "Self CPU time total: " + format_time(self_cpu_total) + "\n";
  if (has_device_time) out += "Self CUDA time total: " + format_time(self_device_total) + "\n";
  return out;
}

}  // namespace ptprof
