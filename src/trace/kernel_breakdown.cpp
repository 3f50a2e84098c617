#include "trace/kernel_breakdown.h"

#include <algorithm>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ptprof/trace.h"

namespace ptprof::detail {

std::vector<KernelOpRow> kernels_by_op(const Trace& t) {
  // The op a kernel belongs to: the host op (not a user range) with its External id, as
  // TensorBoard ties each kernel to the op that launched it: the last op of that id, else the
  // first user range. Sorted (External id, event) pairs, 16 bytes an op where a hash map took
  // about 56 (a large trace has millions of ops).
  std::vector<std::pair<uint64_t, int64_t>> ops;
  for (int64_t i = 0; i < static_cast<int64_t>(t.events.size()); ++i) {
    const Event& e = t.events[i];
    if (e.external_id != 0 && (e.kind == EventKind::CpuOp || e.kind == EventKind::UserAnnotation))
      ops.emplace_back(e.external_id, i);
  }
  std::sort(ops.begin(), ops.end());  // by id, then in event order
  std::size_t kept = 0;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (kept > 0 && ops[kept - 1].first == ops[i].first) {
      if (t.events[ops[i].second].kind == EventKind::CpuOp) ops[kept - 1].second = ops[i].second;
    } else {
      ops[kept++] = ops[i];
    }
  }
  ops.resize(kept);
  ops.shrink_to_fit();
  auto op_name_of = [&](uint64_t external_id) {
    auto it = std::lower_bound(ops.begin(), ops.end(), std::make_pair(external_id, int64_t{-1}));
    return it != ops.end() && it->first == external_id ? t.events[it->second].name
                                                       : std::string_view();
  };
  struct Key {
    std::string_view op;
    EventKind kind;
    std::string_view name;
    int32_t geometry[8];  // grid, block, registers, shared memory
    bool operator==(const Key& o) const {
      return kind == o.kind && op == o.op && name == o.name &&
             std::equal(geometry, geometry + 8, o.geometry);
    }
  };
  struct KeyHash {
    std::size_t operator()(const Key& k) const {
      std::size_t h = std::hash<std::string_view>()(k.name) ^
                      (std::hash<std::string_view>()(k.op) * 0x9E3779B97F4A7C15ULL);
      for (int32_t g : k.geometry) h = h * 31 + static_cast<std::size_t>(static_cast<uint32_t>(g));
      return h + static_cast<std::size_t>(k.kind);
    }
  };
  std::unordered_map<Key, std::size_t, KeyHash> row_of;
  std::vector<KernelOpRow> rows;
  std::vector<double> weighted_blocks, weighted_occupancy;
  for (const Event& e : t.events) {
    if (e.kind != EventKind::Kernel && e.kind != EventKind::Memcpy && e.kind != EventKind::Memset)
      continue;
    const std::string_view op_name = op_name_of(e.external_id);
    const KernelInfo& k = e.kernel;
    const Key key{op_name, e.kind, e.name,
                  {k.grid[0], k.grid[1], k.grid[2], k.block[0], k.block[1], k.block[2],
                   k.registers_per_thread, k.shared_memory}};
    auto [it, inserted] = row_of.emplace(key, rows.size());
    if (inserted) {
      KernelOpRow r;
      r.kind = e.kind;
      r.op = op_name;
      r.kernel = e.name;
      for (int i = 0; i < 3; ++i) {
        r.grid[i] = k.grid[i];
        r.block[i] = k.block[i];
      }
      r.registers_per_thread = k.registers_per_thread;
      r.shared_memory = k.shared_memory;
      r.min_ns = r.max_ns = e.duration_ns;
      rows.push_back(std::move(r));
      weighted_blocks.push_back(0);
      weighted_occupancy.push_back(0);
    }
    KernelOpRow& r = rows[it->second];
    ++r.calls;
    r.total_ns += e.duration_ns;
    r.min_ns = std::min(r.min_ns, e.duration_ns);
    r.max_ns = std::max(r.max_ns, e.duration_ns);
    const double d = static_cast<double>(e.duration_ns);
    weighted_blocks[it->second] += d * static_cast<double>(k.blocks_per_sm);
    weighted_occupancy[it->second] += d * static_cast<double>(k.occupancy_pct);
  }
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].total_ns <= 0) continue;
    rows[i].blocks_per_sm = weighted_blocks[i] / static_cast<double>(rows[i].total_ns);
    rows[i].occupancy_pct = weighted_occupancy[i] / static_cast<double>(rows[i].total_ns);
  }
  std::stable_sort(rows.begin(), rows.end(), [](const KernelOpRow& a, const KernelOpRow& b) {
    return a.total_ns > b.total_ns;
  });
  return rows;
}

}  // namespace ptprof::detail
