#include <climits>
#include <map>
#include <set>
#include <unordered_map>

#include "analysis/names.h"  // is_tb_tensor_core_op, is_tb_tensor_core_kernel
#include "trace/json_writer.h"
#include "view/row_table.h"
#include "view/view_tables.h"

namespace ptprof::view {

namespace {

using detail::JsonWriter;

// What the operator tables add to each row besides key_averages' numbers.
struct OpExtras {
  int64_t tc_self_ns = 0;  // kernels it launched itself with Tensor Core names (TB's TC Self)
  bool has_stack = false;
};

struct Row {
  std::string_view name, shapes, frame;
  int32_t stack = -1;  // Trace::stacks (the timeline's "stacks" table)
  int64_t calls = 0, self_cpu = 0, cpu_total = 0, self_device = 0, device_total = 0;
};

void add_row(RowTableWriter& table, const Row& r, const std::map<std::string, OpExtras, std::less<>>& x) {
  auto it = x.find(r.name);
  const int64_t tc = it == x.end() ? 0 : it->second.tc_self_ns;
  const double tc_share = r.self_device > 0 ? static_cast<double>(tc) / static_cast<double>(r.self_device) : 0;
  JsonWriter j;
  j.begin_object();
  if (!r.frame.empty()) j.key("stack").value(static_cast<int64_t>(r.stack));
  j.key("calls").value(r.calls);
  j.key("self_cpu_us").value_us(r.self_cpu);
  j.key("cpu_total_us").value_us(r.cpu_total);
  j.key("self_device_us").value_us(r.self_device);
  j.key("device_total_us").value_us(r.device_total);
  j.key("tc_eligible").value(detail::is_tb_tensor_core_op(r.name));
  j.key("tc_self_us").value_us(tc);
  j.key("tc_self_share").value(tc_share);
  j.key("has_stack").value(it != x.end() && it->second.has_stack);
  j.end_object();
  // Texts: the name, and the input shapes or the innermost frame (see the tables' columns).
  table.add({r.name, !r.frame.empty() ? r.frame : r.shapes},
            {static_cast<double>(r.calls), r.self_cpu / 1e3, r.cpu_total / 1e3, r.self_device / 1e3,
             r.device_total / 1e3, tc_share},
            j.buffer());
}

}  // namespace

void write_operator_tables(const Trace& t, const Report& r,
                           const std::vector<detail::KernelOpRow>& kernels, IndexWriter& w) {
  std::map<std::string, OpExtras, std::less<>> x;
  for (const detail::KernelOpRow& k : kernels)
    if (k.kind == EventKind::Kernel && detail::is_tb_tensor_core_kernel(k.kernel))
      x[std::string(k.op)].tc_self_ns += k.total_ns;
  std::set<std::string_view> with_stack;
  if (!t.stacks.empty())
    for (const Event& e : t.events)
      if (e.stack >= 0) with_stack.insert(e.name);
  for (std::string_view n : with_stack) x[std::string(n)].has_stack = true;
  bool device = false;
  for (const Event& e : t.events)
    device |= e.kind == EventKind::Kernel || e.kind == EventKind::Memcpy || e.kind == EventKind::Memset;
  const std::vector<std::string> numbers = {"calls", "self_cpu_us", "cpu_total_us", "self_device_us",
                                            "device_total_us", "tc_self_share"};
  auto meta = [&](const char* group) {
    JsonWriter j;
    j.begin_object();
    j.key("group_by").value(group);
    j.key("has_device").value(device);
    j.key("has_inputs").value(!t.op_inputs.empty());
    j.key("has_stacks").value(!t.stacks.empty());
    j.end_object();
    return j.take();
  };

  {  // by name: the Report's rows (user ranges and steps left out, as the report leaves them)
    RowTableWriter table(w, "operators.name", {"name"}, numbers);
    for (const Report::OpRow& o : r.operators)
      add_row(table, {o.name, "", "", -1, o.calls, o.self_cpu_ns, o.cpu_total_ns, o.self_device_ns,
                      o.device_total_ns}, x);
    table.finish(meta("name"));
  }
  // by input shape and by stack: key_averages' groupings, the same rows left out.
  for (const bool by_stack : {false, true}) {
    if (by_stack ? t.stacks.empty() : t.op_inputs.empty()) continue;
    const KeyAverages avg = t.key_averages(!by_stack, by_stack ? INT_MAX : 0);
    // A row's frames are one of the trace's stacks: named by its index, which the page asks
    // for when it shows them (the frames are the bulk of a stack row).
    std::unordered_map<std::string, int32_t> stack_index;
    if (by_stack)
      for (std::size_t i = 0; i < t.stacks.size(); ++i) {
        std::string joined;
        for (const std::string& f : t.stacks[i]) joined.append(f).push_back('\0');
        stack_index.emplace(std::move(joined), static_cast<int32_t>(i));
      }
    // The trace's index of each of key_averages' stacks (the same frames: grouped by all).
    std::vector<int32_t> stack_of_key;
    for (const auto& frames : avg.stacks) {
      std::string joined;
      for (const std::string& f : frames) joined.append(f).push_back('\0');
      auto it = stack_index.find(joined);
      stack_of_key.push_back(it == stack_index.end() ? -1 : it->second);
    }
    RowTableWriter table(w, by_stack ? "operators.stack" : "operators.shape",
                         {"name", by_stack ? "frame" : "input_shapes"}, numbers);
    for (const KeyAverage& a : avg.rows) {
      if (a.is_user_annotation || a.is_device_activity || is_step_name(a.key)) continue;
      Row row{a.key, "", "", -1, a.count, a.self_cpu_time_total_ns, a.cpu_time_total_ns,
              a.self_device_time_total_ns, a.device_time_total_ns};
      if (by_stack) {
        if (a.stack >= 0) {
          row.stack = stack_of_key[static_cast<std::size_t>(a.stack)];
          const auto& frames = avg.stacks[static_cast<std::size_t>(a.stack)];
          row.frame = frames.empty() ? std::string_view("(empty stack)") : std::string_view(frames.back());
        } else {
          row.frame = "(no stack)";
        }
      } else {
        row.shapes = a.input_shapes;
      }
      add_row(table, row, x);
    }
    table.finish(meta(by_stack ? "stack" : "shape"));
  }
}

}  // namespace ptprof::view
