// torch.profiler's FP32MatMulPattern: float32 matmuls without TF32 on a GPU that has it.
//
// torch matches every aten::mm whose allow_tf32_cublas flag was off, when every architecture
// torch was built for is sm_80 or later (on a CPU-only build that list is empty, so it matches
// CPU matmuls too) and record_shapes was on. A trace does not carry the flag, so ptprof asks
// the kernels: a GEMM (aten::mm, and addmm, bmm and baddbmm, which the same flag governs) with
// float32 tensor inputs, that launched kernels on a device of compute capability
// tf32_min_compute_major (8) or more (NVIDIA's: not under ROCm, where torch skips the matcher),
// none of them a TF32 or Tensor Core kernel by its name
// ("tf32", "tensorop", "s1688", "s16816", or Hopper's wgmma/nvjet/... names). CPU matmuls are
// not matched: TF32 is a CUDA setting.
#include <cctype>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "analysis/names.h"
#include "analysis/rules/registry.h"
#include "analysis/rules/torch_patterns.h"

namespace ptprof::detail {

namespace {

bool tensor_core_fp32_kernel(std::string_view name) {
  std::string lower(name);
  for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  for (std::string_view p : {"tf32", "tensorop", "s1688", "s16816"})
    if (contains(lower, p)) return true;
  return is_sm90_tensor_core_kernel(name);
}

bool all_float32(const std::vector<std::optional<std::string_view>>& dtypes) {
  bool any = false;
  for (const auto& d : dtypes) {
    if (!d) continue;
    if (*d != "float") return false;
    any = true;
  }
  return any;
}

void evaluate(const RuleContext& c, RuleOutput& out) {
  if (!c.r.has_gpu_data) return;
  // The GEMMs, then the kernels each launched (by the op's External id).
  std::vector<std::size_t> gemms;
  for (std::size_t i = 0; i < c.t.events.size(); ++i) {
    const Event& e = c.t.events[i];
    if (e.kind == EventKind::CpuOp && e.external_id != 0 && is_gemm_op(e.name)) gemms.push_back(i);
  }
  if (gemms.empty()) return;
  std::unordered_map<uint64_t, std::vector<int64_t>> kernels_of;
  for (std::size_t i : gemms) kernels_of.emplace(c.t.events[i].external_id, std::vector<int64_t>{});
  for (int64_t i : c.index.activities) {
    const Event& k = c.t.events[static_cast<std::size_t>(i)];
    if (k.kind != EventKind::Kernel || k.external_id == 0) continue;
    auto it = kernels_of.find(k.external_id);
    if (it != kernels_of.end()) it->second.push_back(i);
  }
  // Device -> whether it has TF32, from the device properties: NVIDIA's from sm_80 on; AMD's
  // (as torch's matcher, which is skipped under ROCm) never.
  std::map<int32_t, bool> has_tf32;
  for (const DeviceProperties& p : c.t.devices) {
    const bool amd = p.warp_size == 64 || contains(p.name, "AMD") || contains(p.name, "Radeon") ||
                     contains(p.name, "Instinct");
    has_tf32[p.id] = !amd && p.compute_major >= c.th.tf32_min_compute_major;
  }
  MatchedEvidence matched;
  bool without_inputs = false, without_properties = false;
  for (std::size_t i : gemms) {
    const Event& e = c.t.events[i];
    auto ks = kernels_of.find(e.external_id);
    if (ks->second.empty()) continue;  // ran on the CPU, or launched nothing
    if (!has_inputs(e)) {
      without_inputs = true;
      continue;
    }
    if (!all_float32(input_dtypes(c.t, e))) continue;
    bool tf32 = false, capable = false;
    const Event* longest = nullptr;
    for (int64_t k : ks->second) {
      const Event& ke = c.t.events[static_cast<std::size_t>(k)];
      tf32 |= tensor_core_fp32_kernel(ke.name);
      auto device = has_tf32.find(device_of(ke));
      if (device == has_tf32.end()) {
        without_properties = true;
      } else {
        capable |= device->second;
      }
      if (!longest || ke.duration_ns > longest->duration_ns) longest = &ke;
    }
    if (tf32 || !capable) continue;
    const int32_t node = c.host_tree().node_of_event(static_cast<int64_t>(i));
    matched.add(c, op_with_inputs(c.t, e), node, "kernel " + shorten(longest->name, 60));
  }
  if (matched.empty()) {
    if (without_inputs)
      out.needs_input_types();
    else if (without_properties)
      out.undetermined("findings.fp32_matmul",
                       "the trace has no device properties (compute capability)");
    return;
  }
  Report::Finding f;
  f.title = std::to_string(matched.nodes().size()) +
            " float32 matmuls run without TF32 on a GPU that has it";
  f.saving_ns_per_step = matched.cost(c);
  f.evidence = matched.take(c);
  f.recommendation =
      "float32 matmuls use the GPU's plain FP32 units; TF32 runs them on Tensor Cores, several "
      "times faster, with a 10-bit mantissa that training tolerates. Allow it: "
      "at::globalContext().setFloat32MatmulPrecision(\"high\") (or setAllowTF32CuBLAS(true), "
      "and setAllowTF32CuDNN(true) for convolutions) in C++; "
      "torch.set_float32_matmul_precision(\"high\") or torch.backends.cuda.matmul.allow_tf32 = "
      "True in Python. Or train in mixed precision (bfloat16/float16).";
  out.add(std::move(f));
}

}  // namespace

const Rule fp32_matmul_rule = {
    "fp32_matmul",
    "torch",
    "FP32MatMulPattern: a GEMM (aten::mm, addmm, bmm, baddbmm) with float32 inputs launched "
    "kernels on a device of compute capability `tf32_min_compute_major` or more, none of them a "
    "TF32 or Tensor Core kernel by name; needs record_shapes",
    "the time of those GEMMs (their kernels', or the host's if longer)",
    {"tf32_min_compute_major"},
    evaluate,
};

}  // namespace ptprof::detail
