#include "recording/trace_assembly.h"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <utility>

#include <ATen/record_function.h>

#include "recording/details.h"
#include "trace/collectives.h"
#include "trace/flops.h"
#include "trace/fwd_bwd.h"
#include "trace/json_writer.h"

namespace ptprof::detail {

namespace {

// Details of a trace. Stacks: each distinct address list once, each address symbolized
// once. Inputs: each distinct recorded inputs section (the same shapes and scalars, byte
// for byte) decoded once, its entry of Trace::op_inputs shared by the ops that had them,
// and its FLOPs estimated once per op name.
struct DetailTables {
  std::map<std::vector<uint64_t>, int32_t> stacks;  // Trace::stacks
  Symbolizer& symbolizer;  // the session's: loading symbol tables is paid once
  struct Inputs {
    int32_t index = -1;                                        // Trace::op_inputs
    std::vector<std::pair<std::string_view, uint64_t>> flops;  // by op name
  };
  std::unordered_map<std::string_view, Inputs> inputs;  // keys view the Collected bytes
};

void add_details(std::string_view bytes, const WindowOptions& w, Event& e, Trace& t,
                 DetailTables& tables) {
  DecodedDetails d = decode_details(bytes, /*keep_inputs=*/false);
  if (d.has_inputs) {
    auto [it, inserted] = tables.inputs.try_emplace(bytes.substr(0, d.inputs_bytes));
    DetailTables::Inputs& in = it->second;
    if (inserted) {
      in.index = static_cast<int32_t>(t.op_inputs.size());
      t.op_inputs.push_back(decode_details(it->first).inputs);
    }
    if (w.record_shapes) e.inputs = in.index;
    if (w.with_flops) {
      auto f = std::find_if(in.flops.begin(), in.flops.end(),
                            [&](const auto& p) { return p.first == e.name; });
      if (f == in.flops.end()) {
        in.flops.emplace_back(e.name, estimate_flops(e.name, t.op_inputs[in.index]));
        f = in.flops.end() - 1;
      }
      e.flops = f->second;
    }
  }
  if (!d.stack.empty()) {
    if (d.stack_truncated) d.stack.push_back(0);  // marks the cut (outermost side)
    // The innermost frames are libtorch's RecordFunction machinery calling ptprof: they are
    // the same on every op and only hide the caller.
    while (d.stack.size() > 1) {
      const std::string& f = tables.symbolizer.frame(d.stack.front());
      if (f.rfind("at::RecordFunction::", 0) != 0 &&
          f.rfind("c10::Dispatcher::runRecordFunction", 0) != 0)
        break;
      d.stack.erase(d.stack.begin());
    }
    auto [it, inserted] = tables.stacks.emplace(d.stack, static_cast<int32_t>(t.stacks.size()));
    if (inserted) {
      std::vector<std::string> frames;
      frames.reserve(d.stack.size());
      // Outermost first, as PyTorch writes stacks.
      for (auto a = d.stack.rbegin(); a != d.stack.rend(); ++a)
        frames.push_back(*a == 0 ? std::string("<truncated>") : tables.symbolizer.frame(*a));
      t.stacks.push_back(std::move(frames));
    }
    e.stack = it->second;
  }
}

}  // namespace

std::optional<DistributedInfo> window_distributed_info(
    const std::optional<DistributedInfo>& given, const std::vector<CollectiveInfo>& collectives) {
  if (collectives.empty() || (given && !given->groups.empty())) return given;
  std::vector<ProcessGroupInfo> seen;
  const CollectiveInfo* world = nullptr;
  bool nccl = false;
  for (const CollectiveInfo& c : collectives) {
    // NCCL's record_param_comms names its global ranks; c10d ops of other backends do not.
    nccl |= c.global_rank_stride >= 0;
    if (c.pg_name.empty() || std::any_of(seen.begin(), seen.end(), [&](const ProcessGroupInfo& g) {
          return g.name == c.pg_name;
        }))
      continue;
    ProcessGroupInfo g;
    g.name = c.pg_name;
    g.desc = c.pg_desc;
    g.size = c.group_size;
    for (const char* p = c.pg_ranks.c_str(); *p != '\0';) {
      char* end = nullptr;
      const long long r = std::strtoll(p, &end, 10);
      if (end == p) {
        ++p;
        continue;
      }
      g.ranks.push_back(r);
      p = end;
    }
    seen.push_back(std::move(g));
    if (c.pg_desc == "default_pg" && world == nullptr) world = &c;
  }
  if (seen.empty()) return given;
  DistributedInfo d;
  if (given) {
    d = *given;
  } else if (world != nullptr && world->rank >= 0 && world->group_size > 0) {
    d.rank = world->rank;
    d.world_size = world->group_size;
  } else {
    return given;
  }
  if (nccl) {
    if (d.backend.empty()) d.backend = "nccl";
    for (ProcessGroupInfo& g : seen) g.backend_config = "cuda:nccl";
  }
  d.groups = std::move(seen);
  return d;
}

void assemble_trace(const Collected& c, const WindowInfo& w, Symbolizer& symbolizer, Trace& t) {
  const int64_t end = w.end_ns;
  t.pid = w.pid;
  t.process_name = w.process_name;
  t.worker_name = w.worker_name;
  t.window_start_ns = w.start_ns + w.unix_offset_ns;
  t.window_end_ns = w.end_ns + w.unix_offset_ns;
  t.window_index = w.index;
  t.steps = w.steps;
  t.dropped_events = c.dropped + c.dropped_memory;
  if (t.dropped_events > 0) {
    t.dropped_by_kind = {{"cpu_op", c.dropped}, {"memory", c.dropped_memory}};
    t.metadata["ptprof_dropped_events"] = "{\"cpu_op\": " + std::to_string(c.dropped) +
                                          ", \"memory\": " + std::to_string(c.dropped_memory) + "}";
  }
  if (w.gpu_unavailable) {
    t.gpu_unavailable_reason = *w.gpu_unavailable;
    std::string quoted;
    JsonWriter::escape_into(quoted, *w.gpu_unavailable);
    t.metadata["ptprof_gpu_unavailable"] = quoted;
  }
  if (w.options.record_shapes) t.metadata["record_shapes"] = "1";
  if (w.options.profile_memory) t.metadata["profile_memory"] = "1";
  if (w.options.with_stack) t.metadata["with_stack"] = "1";
  if (w.options.with_flops) t.metadata["with_flops"] = "1";
  // Collectives' arguments, found by their record's correlation.
  std::unordered_map<uint64_t, int32_t> collective_of;
  for (const auto& [correlation, info] : c.collectives) {
    collective_of.emplace(correlation, static_cast<int32_t>(t.collectives.size()));
    t.collectives.push_back(info);
  }
  t.distributed = window_distributed_info(w.distributed, t.collectives);
  DetailTables tables{{}, symbolizer, {}};
  std::vector<std::string_view> name_views(c.names.size());
  std::vector<bool> interned(c.names.size(), false);
  std::size_t total = 0;
  for (const auto& th : c.threads) total += th.records.size();
  t.events.reserve(total);
  for (const auto& th : c.threads) {
    t.threads.push_back(ThreadInfo{th.os_tid, th.logical_tid, th.name});
    for (const RawRecord& r : th.records) {
      const int64_t start = c.clock.to_ns(r.start);
      // Something that starts at the very end has no time in the window (and, cut to zero
      // length there, would not even nest in its own parent, which is cut at the same point).
      if (start < w.start_ns || start >= end) continue;
      if (r.scope == kScopeMemory) {
        MemoryEvent m;
        m.time_ns = start + w.unix_offset_ns;
        m.pid = w.pid;
        m.tid = th.os_tid;
        m.address = r.correlation;
        m.bytes = static_cast<int64_t>(r.bytes);
        m.total_allocated = r.seq_nr;
        m.total_reserved = static_cast<int64_t>(r.fwd_tid);
        const MemoryDevice device = unpack_memory_device(r.name_id);
        m.device_type = device.type;
        m.device_index = device.index;
        t.memory_events.push_back(m);
        continue;
      }
      const bool step_range = r.name_id == kStepNameId;
      if (!step_range && !interned[r.name_id]) {
        name_views[r.name_id] = t.intern(c.names[r.name_id]);
        interned[r.name_id] = true;
      }
      Event e;
      e.kind = r.scope == static_cast<uint8_t>(at::RecordScope::USER_SCOPE)
                   ? EventKind::UserAnnotation
                   : EventKind::CpuOp;
      e.name =
          step_range ? t.intern("ProfilerStep#" + std::to_string(r.seq_nr)) : name_views[r.name_id];
      e.start_ns = start + w.unix_offset_ns;
      // An op still running when the window closed (or that ended while it was being
      // collected) is cut at the window's end and marked unfinished, as Kineto does.
      const int64_t stop_ns = r.end != 0 ? c.clock.to_ns(r.end) : end;
      e.finished = r.end != 0 && stop_ns <= end;
      e.duration_ns = std::max<int64_t>(0, std::min(stop_ns, end) - start);
      e.pid = w.pid;
      e.tid = th.os_tid;
      e.external_id = r.correlation;
      // Unique per op in the process, as RecordFunction's handle is; asking libtorch for its
      // handles (needsIds) would add a shared atomic increment to every op of every thread.
      e.record_function_id = r.correlation;
      e.sequence_nr = step_range ? -1 : r.seq_nr;
      e.fwd_thread_id = r.fwd_tid;
      e.thread_id = th.logical_tid;
      e.is_async = (r.flags & kFlagAsync) != 0;
      if (!collective_of.empty()) {
        auto it = collective_of.find(r.correlation);
        if (it != collective_of.end()) e.collective = it->second;
      }
      if (r.details != kNoDetails && r.details < th.details.size())
        add_details(std::string_view(th.details).substr(r.details, r.details_len), w.options, e, t,
                    tables);
      t.events.push_back(e);
    }
  }
  // Inputs decoded only for FLOPs are not the trace's to keep.
  if (!w.options.record_shapes) std::vector<std::vector<OpInput>>().swap(t.op_inputs);
}

void finish_trace(Trace& t) {
  t.rebuild_tree();
  number_evaluate_functions(t.events);
  t.attribute_memory();
  share_collectives_with_kernels(t);
}

}  // namespace ptprof::detail
