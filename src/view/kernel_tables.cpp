#include <unordered_map>

#include "analysis/names.h"  // is_tb_tensor_core_kernel, is_sm90_tensor_core_kernel
#include "trace/json_writer.h"
#include "view/row_table.h"
#include "view/view_tables.h"

namespace ptprof::view {

namespace {

using detail::JsonWriter;

// Calls and their total, mean, min and max time, as both groupings show them.
void timing(JsonWriter& j, int64_t calls, int64_t total_ns, int64_t min_ns, int64_t max_ns) {
  j.key("calls").value(calls);
  j.key("total_us").value_us(total_ns);
  j.key("mean_us").value_us(calls ? total_ns / calls : 0);
  j.key("min_us").value_us(min_ns);
  j.key("max_us").value_us(max_ns);
}

// TB's Tensor Core rule (its kernel name list), and the sm90+ names ptprof adds beside it,
// worked out once per name: a trace's launches can make hundreds of thousands of rows of a few
// long names.
class TensorCores {
 public:
  void write(JsonWriter& j, std::string_view kernel) {
    auto [it, inserted] = known_.emplace(kernel, std::pair<bool, bool>());
    if (inserted) {
      it->second.first = detail::is_tb_tensor_core_kernel(kernel);
      it->second.second = it->second.first || detail::is_sm90_tensor_core_kernel(kernel);
    }
    j.key("tensor_core").value(it->second.first);
    j.key("tensor_core_sm90").value(it->second.second);
  }

 private:
  std::unordered_map<std::string_view, std::pair<bool, bool>> known_;  // views of the trace's names
};

void optional(JsonWriter& j, const std::optional<double>& v) {
  if (v) {
    j.value(*v);
  } else {
    j.null();
  }
}

std::vector<double> numbers(int64_t calls, int64_t total, int64_t min, int64_t max, double blocks,
                            double occupancy) {
  return {static_cast<double>(calls), total / 1e3, calls ? total / 1e3 / calls : 0, min / 1e3,
          max / 1e3, blocks, occupancy};
}

const std::vector<std::string> kNumbers = {"calls", "total_us", "mean_us", "min_us", "max_us",
                                           "blocks_per_sm", "achieved_occupancy_pct"};

}  // namespace

void write_kernel_tables(const Trace& t, const Report& r,
                         const std::vector<detail::KernelOpRow>& kernels, IndexWriter& w) {
  // Kernel time in Tensor Core kernels, by TB's list and with the sm90+ names.
  int64_t total = 0, tc = 0, tc90 = 0;
  for (const Report::KernelRow& k : r.kernels) {
    total += k.total_ns;
    if (detail::is_tb_tensor_core_kernel(k.name)) tc += k.total_ns;
    if (detail::is_tb_tensor_core_kernel(k.name) || detail::is_sm90_tensor_core_kernel(k.name))
      tc90 += k.total_ns;
  }
  JsonWriter meta;
  meta.begin_object();
  meta.key("kernels").value(static_cast<uint64_t>(r.kernels.size()));
  meta.key("total_us").value_us(total);
  meta.key("tensor_core_us").value_us(tc);
  meta.key("tensor_core_sm90_us").value_us(tc90);
  meta.key("tensor_core_share");
  optional(meta, r.tensor_core_share);
  meta.end_object();

  TensorCores tensor_core;
  RowTableWriter by_name(w, "kernels.name", {"name"}, kNumbers);
  for (const Report::KernelRow& k : r.kernels) {
    JsonWriter j;
    j.begin_object();
    timing(j, k.calls, k.total_ns, k.min_ns, k.max_ns);
    j.key("blocks_per_sm");
    optional(j, k.blocks_per_sm);
    j.key("achieved_occupancy_pct");
    optional(j, k.achieved_occupancy);
    tensor_core.write(j, k.name);
    j.end_object();
    by_name.add({k.name}, numbers(k.calls, k.total_ns, k.min_ns, k.max_ns, k.blocks_per_sm.value_or(0),
                                  k.achieved_occupancy.value_or(0)),
                j.buffer());
  }
  by_name.finish(meta.buffer());

  RowTableWriter by_op(w, "kernels.op", {"name", "op", "kind"}, kNumbers);
  for (const detail::KernelOpRow& k : kernels) {
    JsonWriter j;
    j.begin_object();
    j.key("grid").begin_array().value(k.grid[0]).value(k.grid[1]).value(k.grid[2]).end_array();
    j.key("block").begin_array().value(k.block[0]).value(k.block[1]).value(k.block[2]).end_array();
    j.key("registers_per_thread").value(k.registers_per_thread);
    j.key("shared_memory").value(k.shared_memory);
    timing(j, k.calls, k.total_ns, k.min_ns, k.max_ns);
    j.key("blocks_per_sm").value(k.blocks_per_sm);
    j.key("achieved_occupancy_pct").value(k.occupancy_pct);
    tensor_core.write(j, k.kernel);
    j.end_object();
    by_op.add({k.kernel, k.op, category(k.kind)},
              numbers(k.calls, k.total_ns, k.min_ns, k.max_ns, k.blocks_per_sm, k.occupancy_pct),
              j.buffer());
  }
  by_op.finish(meta.buffer());
}

}  // namespace ptprof::view
