// fp32_matmul (torch.profiler's FP32MatMulPattern): float32 matmuls without TF32 on a GPU that
// has it.
#include "torch_traces.h"

namespace ptprof::test {
namespace {

Trace matmul(const std::string& dtype, const std::string& kernel, int32_t compute_major = 9,
             bool properties = true, bool shapes = true) {
  TorchTraceBuilder t;
  if (!properties) t.b.t.devices.clear();
  if (!t.b.t.devices.empty()) t.b.t.devices[0].compute_major = compute_major;
  t.b.step(1, 0, 1000);
  const std::size_t mm = shapes
                             ? t.op("aten::mm", 10, 60, {{dtype, {64, 512}}, {dtype, {512, 4096}}})
                             : t.op("aten::mm", 10, 60);
  t.launch(mm, EventKind::Kernel, kernel, 20, 420);
  return t.finish();
}

const char* kFp32 = "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize64x64x8_stage3_ffma_kernel";

TEST(Fp32Matmul, FiresOnAFloat32GemmWithoutTf32OnAnAmpereOrLaterGpu) {
  const auto f = finding(matmul("float", kFp32), "fp32_matmul");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->source, "torch");
  EXPECT_EQ(f->saving_ns_per_step, 400000);  // its kernel (400 us) outlasts the call (50 us)
  ASSERT_EQ(f->evidence.size(), 1u);
  EXPECT_EQ(f->evidence[0].what, "aten::mm [64, 512] [512, 4096] float");
  EXPECT_NE(f->recommendation.find("setFloat32MatmulPrecision"), std::string::npos);
  EXPECT_TRUE(finding(matmul("float", "void sgemm_largek_lds64<true>(float*)"), "fp32_matmul"));
}

TEST(Fp32Matmul, NotWithTf32NotOnOlderGpusNotForOtherDtypes) {
  for (const char* tf32 : {"sm80_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x16",
                           "cutlass_80_tensorop_s1688gemm_128x128_16x4_nn_align4",
                           "nvjet_sm90_tst_128x256_64x4_1x2_h_bz_coopA_NNT"})
    EXPECT_FALSE(finding(matmul("float", tf32), "fp32_matmul")) << tf32;
  EXPECT_FALSE(finding(matmul("float", kFp32, 7), "fp32_matmul"));  // Volta: no TF32
  EXPECT_FALSE(finding(matmul("c10::BFloat16", kFp32), "fp32_matmul"));
  // AMD's GPUs (warps of 64), as torch skips the matcher under ROCm.
  Trace amd = matmul("float", "Cijk_Ailk_Bjlk_SB_MT64x16x16");
  amd.devices[0].warp_size = 64;
  EXPECT_FALSE(finding(amd, "fp32_matmul"));
}

TEST(Fp32Matmul, SaysWhatItCannotTell) {
  const Report no_properties(matmul("float", kFp32, 9, false));
  EXPECT_TRUE(undetermined(no_properties, "findings.fp32_matmul"));
  const Report no_shapes(matmul("float", kFp32, 9, true, false));
  EXPECT_TRUE(undetermined(no_shapes, "findings.input_types"));
}

}  // namespace
}  // namespace ptprof::test
