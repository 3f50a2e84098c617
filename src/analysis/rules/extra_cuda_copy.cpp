// torch.profiler's ExtraCUDACopyPattern: a tensor filled on the CPU, then copied to the GPU.
//
// torch's matcher (kept exactly): an aten::to whose last child is aten::_to_copy, whose last
// child is aten::copy_ with its first two inputs of one dtype; then the call before aten::to's
// parent (in Python, the call before "built-in method to"), followed down its last children,
// is or passes through aten::fill_, zero_, normal_ or uniform_. Where aten::to has no Python
// parent (a C++ program), the call before aten::to itself. ptprof adds what torch leaves to its
// TODO: with GPU data, the copy must be a host-to-device one (a memcpy HtoD the copy_ launched),
// and without GPU data nothing is a CUDA copy.
#include <optional>
#include <string_view>
#include <unordered_set>

#include "analysis/names.h"
#include "analysis/rules/registry.h"
#include "analysis/rules/torch_patterns.h"

namespace ptprof::detail {

namespace {

bool is_init_op(std::string_view n) {
  return n == "aten::fill_" || n == "aten::zero_" || n == "aten::normal_" || n == "aten::uniform_";
}

// The init op the matcher finds going down `n`'s last children, or -1.
int32_t filled_by(const HostTree& tree, int32_t n) {
  while (!tree.children(n).empty()) {
    n = tree.children(n).back();
    if (is_init_op(tree.name(n))) return n;
  }
  return is_init_op(tree.name(n)) ? n : -1;
}

// The External ids of the ops that launched a host-to-device copy.
std::unordered_set<uint64_t> host_to_device_copies(const RuleContext& c) {
  std::unordered_set<uint64_t> out;
  for (int64_t i : c.index.activities) {
    const Event& a = c.t.events[static_cast<std::size_t>(i)];
    if (a.kind != EventKind::Memcpy || a.external_id == 0) continue;
    const uint8_t kind =
        a.transfer.copy_kind ? a.transfer.copy_kind : copy_kinds_from_name(a.name).copy;
    if (kind == kCopyHtoD) out.insert(a.external_id);
  }
  return out;
}

void evaluate(const RuleContext& c, RuleOutput& out) {
  if (!c.r.has_gpu_data) return;
  bool any_candidate = false, candidate_without_inputs = false;
  std::optional<std::unordered_set<uint64_t>> htod;  // built for the first match
  MatchedEvidence matched;
  for (std::size_t i = 0; i < c.t.events.size(); ++i) {
    const Event& e = c.t.events[i];
    if (e.kind != EventKind::CpuOp || e.name != "aten::to") continue;
    const HostTree& tree = c.host_tree();
    const int32_t to = tree.node_of_event(static_cast<int64_t>(i));
    if (tree.children(to).empty()) continue;
    const int32_t to_copy = tree.children(to).back();
    if (tree.name(to_copy) != "aten::_to_copy" || tree.children(to_copy).empty()) continue;
    const int32_t copy = tree.children(to_copy).back();
    if (tree.name(copy) != "aten::copy_") continue;
    any_candidate = true;
    const Event& copy_event = c.t.events[static_cast<std::size_t>(tree.event(copy))];
    const auto dtypes = input_dtypes(c.t, copy_event);
    if (!has_inputs(copy_event)) candidate_without_inputs = true;
    if (dtypes.size() < 2 || !dtypes[0] || dtypes[0] != dtypes[1]) continue;
    const int32_t parent = tree.parent(to);
    const int32_t before =
        parent >= 0 && tree.is_python(parent) ? tree.prev_sibling(parent) : tree.prev_sibling(to);
    if (before < 0) continue;
    const int32_t init = filled_by(tree, before);
    if (init < 0) continue;
    if (!htod) htod = host_to_device_copies(c);
    if (copy_event.external_id == 0 || !htod->count(copy_event.external_id)) continue;
    matched.add(c, op_with_inputs(c.t, e) + ", filled by " + std::string(tree.name(init)), to);
  }
  if (any_candidate && candidate_without_inputs && matched.empty()) out.needs_input_types();
  if (matched.empty()) return;
  Report::Finding f;
  f.title =
      std::to_string(matched.nodes().size()) + " tensors filled on the CPU, then copied to the GPU";
  f.saving_ns_per_step = matched.cost(c);
  f.evidence = matched.take(c);
  f.recommendation =
      "Create such tensors on the GPU instead of filling them on the CPU and copying them over: "
      "torch::zeros(sizes, torch::TensorOptions().device(torch::kCUDA)) in C++ (torch::ones, "
      "torch::full, torch::rand, torch::randn likewise, or torch::zeros_like(a_gpu_tensor)); "
      "device=\"cuda\" in the factory call in Python.";
  out.add(std::move(f));
}

}  // namespace

const Rule extra_cuda_copy_rule = {
    "extra_cuda_copy",
    "torch",
    "ExtraCUDACopyPattern: an aten::to copies a tensor that the call just before it filled "
    "(aten::fill_, zero_, normal_, uniform_) to the GPU (a host-to-device memcpy); needs "
    "record_shapes",
    "the time of those aten::to calls (host, or the GPU work they launched if longer)",
    {},
    evaluate,
};

}  // namespace ptprof::detail
