#include "trace_generator.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ptprof::bench {

namespace {

using ptprof::Event;
using ptprof::EventKind;
using ptprof::OpInput;
using ptprof::Trace;

class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t next() {
    s_ ^= s_ << 13;
    s_ ^= s_ >> 7;
    s_ ^= s_ << 17;
    return s_;
  }
  int64_t range(int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(next() % (hi - lo)); }

 private:
  uint64_t s_;
};

const char* const kOps[] = {
    "aten::addmm",
    "aten::mm",
    "aten::conv2d",
    "aten::convolution",
    "aten::_convolution",
    "aten::cudnn_convolution",
    "aten::relu",
    "aten::clamp_min",
    "aten::add",
    "aten::add_",
    "aten::mul",
    "aten::sum",
    "aten::mean",
    "aten::view",
    "aten::reshape",
    "aten::t",
    "aten::transpose",
    "aten::as_strided",
    "aten::empty",
    "aten::empty_strided",
    "aten::zeros",
    "aten::copy_",
    "aten::to",
    "aten::_to_copy",
    "aten::cat",
    "aten::stack",
    "aten::select",
    "aten::slice",
    "aten::max_pool2d",
    "aten::batch_norm",
    "aten::native_batch_norm",
    "aten::layer_norm",
    "aten::native_layer_norm",
    "aten::dropout",
    "aten::softmax",
    "aten::_log_softmax",
    "aten::nll_loss",
    "aten::cross_entropy_loss",
    "aten::addcmul_",
    "aten::addcdiv_",
    "aten::sqrt",
    "aten::div",
    "aten::lerp_",
    "aten::fill_",
    "AddmmBackward0",
    "ConvolutionBackward0",
    "ReluBackward0",
    "SumBackward0",
    "NativeBatchNormBackward0",
    "autograd::engine::evaluate_function: AddmmBackward0",
};
const char* const kDtypes[] = {"float", "c10::Half", "c10::BFloat16", "long int", "bool"};
const char* const kFrames[] = {
    "_start",
    "__libc_start_main",
    "libc.so.6+0x2a1ca",
    "main",
    "(anonymous namespace)::Trainer::step",
    "(anonymous namespace)::Trainer::forward",
    "torch::nn::Module::operator()",
    "torch::nn::Conv2dImpl::forward",
    "torch::nn::LinearImpl::forward",
    "torch::autograd::Engine::thread_main",
    "torch::autograd::Engine::evaluate_function",
    "torch::autograd::generated::AddmmBackward0::apply",
    "at::_ops::addmm::call",
    "at::_ops::conv2d::call",
    "at::_ops::add_Tensor::call",
    "at::_ops::empty_memory_format::redispatch",
    "c10::Dispatcher::callWithDispatchKeySlowPath<at::Tensor, at::Tensor const&, at::Tensor "
    "const&, at::Tensor const&, c10::Scalar const&, c10::Scalar const&>",
    "c10::impl::wrap_kernel_functor_unboxed_<...>::call",
    "torch::autograd::VariableType::(anonymous namespace)::addmm",
    "at::(anonymous namespace)::wrapper_CUDA_addmm",
    "at::native::structured_addmm_out_cuda::impl",
    "at::cuda::blas::gemm<float>",
    "cublasSgemm_v2",
    "libcublasLt.so.13+0x8f1a2c",
    "torch::ADInplaceOrView::(anonymous namespace)::add__Tensor",
    "at::native::(anonymous namespace)::launch_clamp_scalar",
    "at::TensorIteratorBase::for_each",
    "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc",
    "std::_Function_handler<void (), torch::optim::Adam::step(...)::{lambda()#1}>::_M_invoke",
    "torch::optim::Adam::step",
};
const char* const kKernels[] = {
    "sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32_warpgroupsize1x1x1_execute_"
    "segment_k_off_kernel__5x_cublas",
    "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous "
    "namespace)::launch_clamp_scalar(at::TensorIteratorBase&, c10::Scalar, c10::Scalar, "
    "at::native::detail::ClampLimits)::{lambda()#1}::operator()() const::{lambda()#7}::operator()"
    "() const::{lambda(float)#1}, std::array<char*, 2ul> >(int, at::native::(anonymous "
    "namespace)::launch_clamp_scalar(at::TensorIteratorBase&, c10::Scalar, c10::Scalar, "
    "at::native::detail::ClampLimits)::{lambda()#1}::operator()() const::{lambda()#7}::operator()"
    "() const::{lambda(float)#1}, std::array<char*, 2ul>)",
    "void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<at::native::"
    "CUDAFunctor_add<float> >(at::TensorIteratorBase&, at::native::CUDAFunctor_add<float> "
    "const&)::{lambda(int)#1}>(int, at::native::gpu_kernel_impl_nocast<at::native::CUDAFunctor_"
    "add<float> >(at::TensorIteratorBase&, at::native::CUDAFunctor_add<float> const&)::{lambda("
    "int)#1})",
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_"
    "t<float, at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{"
    "lambda(float, float)#1}>, unsigned int, float, 4, 4> >(at::native::ReduceOp<float, "
    "at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()"
    "(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4, 4>)",
    "sm80_xmma_fprop_implicit_gemm_f32f32_f32f32_f32_nchwkcrs_nchw_tilesize128x32x8_stage3_"
    "warpsize2x2x1_g1_ffma_aligna4_alignc4_execute_kernel__5x_cudnn",
    "void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, 512, true, 1>(cudnnTensorStruct, float "
    "const*, cudnnTensorStruct, float*, float const*, float const*, float, float, float*, float*, "
    "float*, float*, float, float)",
    "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous "
    "namespace)::TensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<"
    "float, 4, (at::native::ADAM_MODE)0, false>, float*, float, float, float, float, float, bool, "
    "float*, float*>",
};

std::vector<int64_t> dense_strides(const std::vector<int64_t>& sizes) {
  std::vector<int64_t> s(sizes.size());
  int64_t stride = 1;
  for (std::size_t d = sizes.size(); d-- > 0;) {
    s[d] = stride;
    stride *= sizes[d] > 1 ? sizes[d] : 1;
  }
  return s;
}

// record_shapes inputs like an op's: tensors, then scalars, scalar lists, a tensor list.
std::vector<OpInput> make_inputs(Rng& rng) {
  std::vector<OpInput> in;
  const int tensors = static_cast<int>(rng.range(1, 4));
  for (int i = 0; i < tensors; ++i) {
    OpInput t;
    t.kind = OpInput::Kind::Tensor;
    t.dtype = kDtypes[rng.range(0, 3)];
    const int ndim = static_cast<int>(rng.range(1, 5));
    for (int d = 0; d < ndim; ++d) t.sizes.push_back(int64_t{1} << rng.range(0, 10));
    t.strides = dense_strides(t.sizes);
    if (rng.range(0, 8) == 0) std::swap(t.strides.front(), t.strides.back());
    in.push_back(std::move(t));
  }
  switch (rng.range(0, 5)) {
    case 0: {
      OpInput s;
      s.kind = OpInput::Kind::Scalar;
      s.dtype = "Scalar";
      s.scalar = static_cast<double>(rng.range(0, 3));
      s.concrete = std::to_string(static_cast<int64_t>(s.scalar));
      in.push_back(s);
      break;
    }
    case 1: {
      OpInput s;
      s.kind = OpInput::Kind::ScalarList;
      s.dtype = "ScalarList";
      s.sizes = {1, 1};
      s.concrete = "[1, 1]";
      in.push_back(s);
      in.push_back(s);
      OpInput none;
      in.push_back(none);
      break;
    }
    case 2: {
      OpInput l;
      l.kind = OpInput::Kind::TensorList;
      l.dtype = "TensorList";
      for (int k = 0; k < 4; ++k) l.list_sizes.push_back({rng.range(1, 512), 64});
      in.insert(in.begin(), l);
      break;
    }
    default:
      break;
  }
  return in;
}

// Builds a trace of about `target` bytes of JSON.
}  // namespace

Trace generate_trace(std::size_t target) {
  Rng rng(0x9E3779B97F4A7C15ULL);
  Trace t;
  t.pid = 4242;
  t.process_name = "train";
  t.threads = {{4242, 1, "train"}, {4250, 2, "pt_autograd_0"}};
  ptprof::DeviceProperties d;
  d.name = "NVIDIA H200";
  d.total_global_mem = 150109880320;
  d.compute_major = 9;
  d.num_sms = 132;
  t.devices.push_back(d);
  t.metadata = {{"record_shapes", "1"},
                {"profile_memory", "1"},
                {"with_stack", "1"},
                {"with_flops", "1"},
                {"cupti_version", "130001"}};
  constexpr int kStacks = 3000;
  for (int s = 0; s < kStacks; ++s) {
    std::vector<std::string> frames(kFrames, kFrames + 5);
    const int depth = static_cast<int>(rng.range(8, 26));
    for (int f = 5; f < depth; ++f)
      frames.emplace_back(kFrames[rng.range(5, sizeof(kFrames) / sizeof(kFrames[0]))]);
    frames.back() += "+0x" + std::to_string(s);  // distinct stacks
    t.stacks.push_back(std::move(frames));
  }
  constexpr int kInputLists = 5000;
  for (int i = 0; i < kInputLists; ++i) t.op_inputs.push_back(make_inputs(rng));
  std::vector<std::string_view> ops, kernels;
  for (const char* n : kOps) ops.push_back(t.intern(n));
  for (const char* n : kKernels) kernels.push_back(t.intern(n));

  // Sizes of each kind of event as written (measured once on a sample of this generator):
  // ops ~1.2 KB with their stack and inputs, launches + kernel + flows ~1.1 KB.
  const std::size_t steps = target / (300 * 1900) + 1;
  int64_t now = int64_t{1790857026000000000} + int64_t{5546714000000000};
  t.window_start_ns = now;
  uint64_t id = 1, corr = 1;
  int64_t allocated = 0;
  std::vector<std::pair<uint64_t, int64_t>> live;  // allocations to free
  for (std::size_t step = 0; step < steps; ++step) {
    t.steps.push_back(static_cast<int64_t>(step));
    auto range = [&](std::string_view name, int64_t start, int64_t dur, int64_t tid) {
      Event e;
      e.kind = EventKind::UserAnnotation;
      e.name = t.intern(name);
      e.start_ns = start;
      e.duration_ns = dur;
      e.pid = t.pid;
      e.tid = tid;
      e.external_id = e.record_function_id = id++;
      t.events.push_back(e);
      Event g = e;  // its span on the GPU
      g.kind = EventKind::GpuUserAnnotation;
      g.pid = 0;
      g.tid = 7;
      g.start_ns += 5000;
      t.events.push_back(g);
    };
    const int64_t step_start = now;
    range("ProfilerStep#" + std::to_string(step), step_start, 3000000, 4242);
    for (const char* phase : {"data", "forward", "backward", "optimizer"}) {
      const bool backward = std::strcmp(phase, "backward") == 0;
      const int64_t tid = backward ? 4250 : 4242;
      range(phase, now + 1000, 700000, tid);
      now += 2000;
      for (int i = 0; i < 75; ++i) {
        Event op;
        op.kind = EventKind::CpuOp;
        op.name = ops[rng.range(0, static_cast<int64_t>(ops.size()))];
        op.start_ns = now;
        op.duration_ns = rng.range(2000, 8000);
        op.pid = t.pid;
        op.tid = tid;
        op.external_id = op.record_function_id = id++;
        if (rng.range(0, 2)) {
          op.sequence_nr = static_cast<int64_t>(id);
          op.fwd_thread_id = backward ? 1 : 0;
        }
        op.inputs = static_cast<int32_t>(rng.range(0, kInputLists));
        op.stack = static_cast<int32_t>(rng.range(0, kStacks));
        if (op.name == "aten::addmm" || op.name == "aten::mm" || op.name == "aten::conv2d")
          op.flops = static_cast<uint64_t>(rng.range(1000000, 1000000000));
        t.events.push_back(op);
        if (rng.range(0, 5) < 3) {  // a launch and its kernel, or a copy or memset
          const int64_t what = rng.range(0, 20);
          Event launch;
          launch.kind = EventKind::CudaRuntime;
          launch.name = t.intern(what == 0   ? "cudaMemcpyAsync"
                                 : what == 1 ? "cudaMemsetAsync"
                                             : "cudaLaunchKernel");
          launch.start_ns = now + 1000;
          launch.duration_ns = 900;
          launch.pid = t.pid;
          launch.tid = tid;
          launch.external_id = op.external_id;
          launch.correlation = corr;
          launch.cbid = what == 0 ? 41 : what == 1 ? 51 : 211;
          launch.flow_start = true;
          t.events.push_back(launch);
          Event g;
          g.start_ns = now + 30000;
          g.duration_ns = rng.range(1000, 50000);
          g.pid = 0;
          g.tid = 7;
          g.device = 0;
          g.stream = 7;
          g.correlation = corr++;
          g.external_id = op.external_id;
          g.flow_end = true;
          if (what == 0) {
            g.kind = EventKind::Memcpy;
            g.name = t.intern("Memcpy HtoD (Pinned -> Device)");
            g.transfer =
                ptprof::TransferInfo{static_cast<uint64_t>(rng.range(4, 1 << 24)), 1, 1, 2, 3};
          } else if (what == 1) {
            g.kind = EventKind::Memset;
            g.name = t.intern("Memset (Device)");
            g.transfer =
                ptprof::TransferInfo{static_cast<uint64_t>(rng.range(4, 1 << 20)), 1, 0, 0, 3};
          } else {
            g.kind = EventKind::Kernel;
            g.name = kernels[rng.range(0, static_cast<int64_t>(kernels.size()))];
            ptprof::KernelInfo& k = g.kernel;
            k.grid[0] = static_cast<int32_t>(rng.range(1, 4096));
            k.grid[1] = k.grid[2] = 1;
            k.block[0] = 128;
            k.block[1] = k.block[2] = 1;
            k.registers_per_thread = static_cast<int32_t>(rng.range(16, 255));
            k.shared_memory = static_cast<int32_t>(rng.range(0, 65536));
            k.context = 1;
            k.blocks_per_sm = static_cast<float>(k.grid[0]) / 132.0f;
            k.warps_per_sm = k.blocks_per_sm * 4;
            k.occupancy_pct = static_cast<int32_t>(rng.range(1, 101));
          }
          t.events.push_back(g);
        }
        if (rng.range(0, 5) < 2) {  // the allocator: one allocation now, a free later
          ptprof::MemoryEvent m;
          m.time_ns = now + 1500;
          m.pid = t.pid;
          m.tid = tid;
          m.bytes = rng.range(512, 1 << 26);
          m.address = 0x7f0000000000ULL + (id << 12);
          m.device_type = 1;
          m.device_index = 0;
          allocated += m.bytes;
          m.total_allocated = allocated;
          m.total_reserved = allocated + (1 << 21);
          t.memory_events.push_back(m);
          live.emplace_back(m.address, m.bytes);
        }
        if (live.size() > 8) {
          ptprof::MemoryEvent m;
          m.time_ns = now + 1800;
          m.pid = t.pid;
          m.tid = tid;
          m.address = live.front().first;
          m.bytes = -live.front().second;
          m.device_type = 1;
          m.device_index = 0;
          allocated += m.bytes;
          m.total_allocated = allocated;
          m.total_reserved = allocated + (1 << 21);
          t.memory_events.push_back(m);
          live.erase(live.begin());
        }
        now += op.duration_ns + 500;
      }
    }
    now = std::max(now, step_start + 3000000) + 1000;
  }
  t.window_end_ns = now;
  t.rebuild_tree();
  t.attribute_memory();
  return t;
}

}  // namespace ptprof::bench
