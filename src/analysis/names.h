// names.h: how the report recognizes ranges, operators, CUDA calls and kernels by name.
//
// Where a peer defines a name rule (TB's DataLoader and communication ops, its Tensor Core
// list; HTA's kernel types), the rule is its exact one, so that the numbers agree.
#pragma once

#include <cstdint>
#include <string_view>

namespace ptprof::detail {

inline bool starts_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.compare(0, p.size(), p) == 0;
}
inline bool ends_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}
inline bool contains(std::string_view s, std::string_view p) {
  return s.find(p) != std::string_view::npos;
}

// TB's DataLoader role (event_parser.py::_parse_step).
inline bool is_tb_dataloader(std::string_view n) {
  return (starts_with(n, "enumerate(DataLoader)#") && ends_with(n, ".__next__")) ||
         starts_with(n, "enumerate(DataPipe)#");
}
// Any data-loader range, as ptprof::DataLoaderRange and PyTorch name them.
inline bool is_dataloader_range(std::string_view n) {
  return starts_with(n, "enumerate(DataLoader)#") || starts_with(n, "enumerate(DataPipe)#");
}

// TB's communication ops (trace.py NcclOpNameSet / GlooOpNameSet): exact names.
inline bool is_tb_comm_op(std::string_view n) {
  for (std::string_view lib : {"nccl:", "gloo:"}) {
    if (!starts_with(n, lib)) continue;
    const std::string_view op = n.substr(lib.size());
    for (std::string_view k : {"broadcast", "reduce", "all_reduce", "all_gather", "reduce_scatter"})
      if (op == k) return true;
  }
  return false;
}
// Any collective, for the idle causes.
inline bool is_collective(std::string_view n) {
  return starts_with(n, "nccl:") || starts_with(n, "gloo:") || starts_with(n, "c10d::") ||
         n == "record_param_comms";
}

// Host calls that wait for the device.
inline bool is_sync_call(std::string_view n) {
  for (std::string_view p :
       {"cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize",
        "cuStreamSynchronize", "cuCtxSynchronize", "cuEventSynchronize", "cudaThreadSynchronize"})
    if (starts_with(n, p)) return true;
  return false;
}
// Ops that copy a device value to the host and wait for it (Tensor::item()).
inline bool is_item_op(std::string_view n) {
  return n == "aten::_local_scalar_dense" || n == "aten::item";
}
inline bool is_memcpy_call(std::string_view n) {
  return starts_with(n, "cudaMemcpy") || starts_with(n, "cuMemcpy");
}
inline bool is_allocator_call(std::string_view n) {
  for (std::string_view p :
       {"cudaMalloc", "cudaFree", "cuMemAlloc", "cuMemFree", "cudaHostAlloc", "cuMemHostAlloc",
        "cudaHostRegister", "cudaHostUnregister", "cuMemCreate", "cuMemRelease", "cuMemMap",
        "cuMemUnmap", "cuMemAddressReserve", "cuMemAddressFree"})
    if (starts_with(n, p)) return true;
  return false;
}
// Calls that queue work on a stream, as HTA's queue length counts them (trace_counters.py).
inline bool is_queue_launch(std::string_view n) {
  for (std::string_view p :
       {"cudaLaunchKernel", "cuLaunchKernel", "cudaMemcpyAsync", "cudaMemsetAsync"})
    if (starts_with(n, p)) return true;
  return false;
}

// HTA's compute kernels (hta/utils/utils.py::is_compute_kernel): not matching
// `(^nccl.*Kernel)|(.*(Memcpy)|(Memset))|(.*Sync)` from the start of the name.
inline bool is_hta_compute(std::string_view n) {
  if (starts_with(n, "nccl") && n.find("Kernel", 4) != std::string_view::npos) return false;
  if (contains(n, "Memcpy") || starts_with(n, "Memset") || contains(n, "Sync")) return false;
  return true;
}

// TB's Tensor Core kernels (tensor_core.py TC_Allowlist, from NVIDIA PyProf): a substring.
inline bool is_tb_tensor_core_kernel(std::string_view n) {
  for (std::string_view p :
       {"h884", "s884", "h1688", "s1688", "hmma", "i8816", "16816", "dgrad_1x1_stride_2x2",
        "first_layer_wgrad_kernel", "conv1x1", "conv2d_c1_k1", "direct_group", "xmma_implicit_gemm",
        "xmma_sparse_conv", "xmma_warp_specialized_implicit_gemm", "xmma_gemm", "xmma_sparse_gemm",
        "c1688"})
    if (contains(n, p)) return true;
  return false;
}
// Names of Tensor Core kernels TB's list predates (Hopper and later: wgmma/gmma, cuBLAS's
// nvjet, CUTLASS tensorop, flash attention), ptprof's own addition, reported separately.
inline bool is_sm90_tensor_core_kernel(std::string_view n) {
  for (std::string_view p :
       {"wgmma", "gmma", "tensorop", "nvjet", "flash", "fmha", "tcgen05", "umma", "imma", "qmma"})
    if (contains(n, p)) return true;
  return false;
}

// TB's Tensor-Core-eligible operators (tensor_core.py TC_OP_Allowlist): exact names.
inline bool is_tb_tensor_core_op(std::string_view n) {
  for (std::string_view p : {"aten::_convolution",
                             "aten::conv1d",
                             "aten::conv2d",
                             "aten::conv3d",
                             "aten::conv_tbc",
                             "aten::conv_transpose1d",
                             "aten::conv_transpose2d",
                             "aten::conv_transpose3d",
                             "aten::convolution",
                             "aten::cudnn_convolution",
                             "aten::cudnn_convolution_transpose",
                             "aten::prelu",
                             "aten::addmm",
                             "aten::addmv",
                             "aten::addr",
                             "aten::matmul",
                             "aten::mm",
                             "aten::mv",
                             "aten::linear",
                             "aten::addbmm",
                             "aten::baddbmm",
                             "aten::bmm",
                             "aten::chain_matmul",
                             "aten::linalg_multi_dot",
                             "aten::_thnn_fused_lstm_cell",
                             "aten::_thnn_fused_gru_cell",
                             "aten::lstm_cell",
                             "aten::gru_cell",
                             "aten::rnn_tanh_cell",
                             "aten::rnn_relu_cell",
                             "CudnnConvolutionBackward",
                             "BmmBackward0",
                             "aten::cudnn_convolution_transpose_backward",
                             "CudnnConvolutionTransposeBackward",
                             "MmBackward",
                             "aten::cudnn_convolution_backward_weight",
                             "aten::addmm_",
                             "AddmvBackward",
                             "MvBackward",
                             "aten::cudnn_convolution_transpose_backward_weight",
                             "aten::cudnn_convolution_transpose_backward_input",
                             "AddmmBackward",
                             "aten::cudnn_convolution_backward_input",
                             "AddbmmBackward",
                             "aten::cudnn_convolution_backward"})
    if (n == p) return true;
  return false;
}

// CUPTI's copy kinds and memory kinds (cupti_activity.h), as TransferInfo carries them.
enum CopyKind : uint8_t { kCopyUnknown = 0, kCopyHtoD = 1, kCopyDtoH = 2, kCopyDtoD = 8 };
enum MemoryKind : uint8_t { kMemUnknown = 0, kMemPageable = 1, kMemPinned = 2 };

// A copy's direction and memory kinds from Kineto's name, "Memcpy HtoD (Pageable -> Device)",
// for traces whose reader did not keep the numeric kinds.
struct CopyKinds {
  uint8_t copy = kCopyUnknown;
  uint8_t src = kMemUnknown;
  uint8_t dst = kMemUnknown;
};
inline CopyKinds copy_kinds_from_name(std::string_view n) {
  CopyKinds k;
  if (contains(n, "HtoD"))
    k.copy = kCopyHtoD;
  else if (contains(n, "DtoH"))
    k.copy = kCopyDtoH;
  else if (contains(n, "DtoD"))
    k.copy = kCopyDtoD;
  const auto open = n.find('(');
  const auto arrow = n.find(" -> ");
  if (open != std::string_view::npos && arrow != std::string_view::npos && arrow > open) {
    auto kind = [](std::string_view s) -> uint8_t {
      if (s == "Pageable") return kMemPageable;
      if (s == "Pinned") return kMemPinned;
      if (s == "Device") return 3;
      return kMemUnknown;
    };
    k.src = kind(n.substr(open + 1, arrow - open - 1));
    const auto close = n.find(')', arrow);
    if (close != std::string_view::npos) k.dst = kind(n.substr(arrow + 4, close - arrow - 4));
  }
  return k;
}

}  // namespace ptprof::detail
