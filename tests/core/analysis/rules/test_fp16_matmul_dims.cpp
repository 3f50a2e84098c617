// fp16_matmul_dims (torch.profiler's MatMulDimInFP16Pattern).
#include "torch_traces.h"

namespace ptprof::test {
namespace {

Trace mm(const std::string& op, const std::string& dtype, std::vector<int64_t> a,
         std::vector<int64_t> b) {
  TorchTraceBuilder t;
  t.b.step(1, 0, 1000);
  const std::size_t e = t.op(op, 10, 60, {{dtype, a}, {dtype, b}});
  t.launch(e, EventKind::Kernel, "ampere_fp16_s16816gemm_fp16_64x64_ldg8_f2f_stages_64x5_tn", 20,
           120);
  return t.finish();
}

TEST(Fp16MatmulDims, FiresOnHalfPrecisionMatmulsWithUnalignedDimensions) {
  for (const char* dtype : {"c10::Half", "c10::BFloat16"}) {
    const auto f = finding(mm("aten::mm", dtype, {10, 12}, {12, 6}), "fp16_matmul_dims");
    ASSERT_TRUE(f) << dtype;
    EXPECT_EQ(f->source, "torch");
    EXPECT_EQ(f->saving_ns_per_step, 100000);  // its kernel, 100 us
    EXPECT_EQ(f->evidence.at(0).what, std::string("aten::mm [10, 12] [12, 6] ") + dtype);
  }
  EXPECT_TRUE(finding(mm("aten::bmm", "c10::Half", {4, 16, 16}, {4, 16, 12}), "fp16_matmul_dims"));
}

TEST(Fp16MatmulDims, NotWhenAlignedOrNotHalfPrecision) {
  EXPECT_FALSE(finding(mm("aten::mm", "c10::Half", {16, 64}, {64, 8}), "fp16_matmul_dims"));
  // Only the last two dimensions count.
  EXPECT_FALSE(finding(mm("aten::bmm", "c10::Half", {3, 16, 16}, {3, 16, 8}), "fp16_matmul_dims"));
  EXPECT_FALSE(finding(mm("aten::mm", "float", {10, 12}, {12, 6}), "fp16_matmul_dims"));
  EXPECT_FALSE(finding(mm("aten::matmul", "c10::Half", {10, 12}, {12, 6}), "fp16_matmul_dims"));
  ReportOptions o;
  o.thresholds.fp16_matmul_dim_multiple = 2;
  EXPECT_FALSE(finding(mm("aten::mm", "c10::Half", {10, 12}, {12, 6}), "fp16_matmul_dims", o));
}

}  // namespace
}  // namespace ptprof::test
