#include "ptprof/key_averages.h"

#include <algorithm>
#include <cstdio>
#include <string_view>
#include <unordered_map>

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

}  // namespace

KeyAverages Trace::key_averages(bool group_by_input_shape) const {
  // Device time of each CPU op: the GPU activities launched under its External id (self),
  // plus what its children launched (total).
  std::unordered_map<uint64_t, int64_t> device_by_external;
  bool any_device = false;
  for (const Event& e : events) {
    if (device_activity(e.kind)) {
      any_device = true;
      if (e.external_id != 0) device_by_external[e.external_id] += e.duration_ns;
    }
  }
  std::vector<int64_t> device_total(events.size(), 0);
  if (any_device) {
    // Children come after parents on a thread only in start order, so accumulate by depth.
    std::vector<int64_t> order;
    for (int64_t i = 0; i < static_cast<int64_t>(events.size()); ++i)
      if (!is_gpu(events[i].kind)) order.push_back(i);
    std::sort(order.begin(), order.end(),
              [&](int64_t a, int64_t b) { return events[a].depth > events[b].depth; });
    for (int64_t i : order) {
      const Event& e = events[i];
      if (e.external_id != 0) {
        auto it = device_by_external.find(e.external_id);
        if (it != device_by_external.end()) device_total[i] += it->second;
      }
      if (e.parent >= 0) device_total[e.parent] += device_total[i];
    }
  }

  // torch.profiler's EventList._remove_dup_nodes: an op whose parent has the same name and no
  // other child is folded into the parent (e.g. a redispatched aten::copy_), so it is counted
  // once; the parent takes over its self time. Deepest first, so chains fold completely.
  std::vector<int64_t> self(events.size());
  std::vector<int32_t> children(events.size(), 0);
  std::vector<int64_t> only_child(events.size(), -1);
  for (std::size_t i = 0; i < events.size(); ++i) {
    self[i] = events[i].self_ns;
    if (events[i].parent >= 0) {
      only_child[events[i].parent] = ++children[events[i].parent] == 1 ? i : -1;
    }
  }
  std::vector<bool> folded(events.size(), false);
  {
    std::vector<int64_t> order;
    for (int64_t i = 0; i < static_cast<int64_t>(events.size()); ++i)
      if (events[i].parent >= 0) order.push_back(i);
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return events[a].depth > events[b].depth; });
    for (int64_t i : order) {
      const Event& e = events[i];
      if (children[e.parent] == 1 && events[e.parent].name == e.name) {
        folded[i] = true;
        self[e.parent] += self[i];
      }
    }
  }

  KeyAverages out;
  out.has_device_time = any_device;
  out.has_input_shapes = group_by_input_shape;
  std::unordered_map<std::string, std::size_t> row_of;
  for (std::size_t i = 0; i < events.size(); ++i) {
    const Event& e = events[i];
    if (e.kind == EventKind::CudaRuntime || e.kind == EventKind::CudaDriver ||
        e.kind == EventKind::CudaSync || e.kind == EventKind::GpuUserAnnotation ||
        e.kind == EventKind::Overhead)
      continue;
    if (filtered(e.name) || folded[i]) continue;
    std::string key(e.name);
    auto [it, inserted] = row_of.emplace(key, out.rows.size());
    if (inserted) {
      KeyAverage row;
      row.key = key;
      row.is_user_annotation = e.kind == EventKind::UserAnnotation;
      row.is_device_activity = device_activity(e.kind);
      out.rows.push_back(std::move(row));
    }
    KeyAverage& row = out.rows[it->second];
    ++row.count;
    if (device_activity(e.kind)) {
      row.self_device_time_total_ns += e.duration_ns;
      row.device_time_total_ns += e.duration_ns;
    } else {
      row.self_cpu_time_total_ns += self[i];
      row.cpu_time_total_ns += e.duration_ns;
      // Device time launched by this op itself, or by a folded same-named child.
      for (int64_t k = static_cast<int64_t>(i);;) {
        if (events[k].external_id != 0) {
          auto d = device_by_external.find(events[k].external_id);
          if (d != device_by_external.end()) row.self_device_time_total_ns += d->second;
        }
        const int64_t next = only_child[k];
        if (next < 0 || !folded[next]) break;
        k = next;
      }
      row.device_time_total_ns += device_total[i];
    }
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
std::string format_time(int64_t ns) {
  const double us = static_cast<double>(ns) / 1000.0;
  char buf[64];
  if (us >= 1e6)
    std::snprintf(buf, sizeof(buf), "%.3fs", us / 1e6);
  else if (us >= 1e3)
    std::snprintf(buf, sizeof(buf), "%.3fms", us / 1e3);
  else
    std::snprintf(buf, sizeof(buf), "%.3fus", us);
  return buf;
}

std::string format_share(int64_t part, int64_t total) {
  if (total == 0) return "NaN";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f%%", static_cast<double>(part) * 100.0 /
                                                static_cast<double>(total));
  return buf;
}

void pad_right_aligned(std::string& line, const std::string& cell, std::size_t width) {
  if (cell.size() < width) line.append(width - cell.size(), ' ');
  line += cell;
  line += "  ";
}

}  // namespace

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
  headers.push_back("# of Calls");
  if (has_input_shapes) headers.push_back("Input Shapes");

  auto width_of = [&](std::size_t col) {
    if (col == 0) return name_width;
    if (has_input_shapes && col == headers.size() - 1) return shapes_width;
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
    cells.push_back(std::to_string(r.count));
    if (has_input_shapes) cells.push_back(r.input_shapes);
    out += row_line(cells) + "\n";
  }
  out += sep + "\n";
  out += "Self CPU time total: " + format_time(self_cpu_total) + "\n";
  if (has_device_time) out += "Self CUDA time total: " + format_time(self_device_total) + "\n";
  return out;
}

}  // namespace ptprof
