// extra_cuda_copy (torch.profiler's ExtraCUDACopyPattern): a tensor filled on the CPU, then
// copied to the GPU.
#include "torch_traces.h"

namespace ptprof::test {
namespace {

// One step: aten::zeros (aten::empty, then `fill`), then aten::to -> aten::_to_copy ->
// aten::copy_ (inputs `dst` <- `src`) launching a copy of `copy_kind`, 30 us on the GPU.
Trace filled_then_copied(const std::string& fill = "aten::zero_", const std::string& dst = "float",
                         const std::string& src = "float",
                         const std::string& copy = "Memcpy HtoD (Pageable -> Device)",
                         bool python = false) {
  TorchTraceBuilder t;
  t.b.step(1, 0, 1000);
  if (python) t.py("<built-in method zeros of type object at 0x1>", 9, 61);
  t.op("aten::zeros", 10, 60);
  t.op("aten::empty", 11, 20);
  t.op(fill, 21, 59);
  if (python) t.py("<built-in method to of Tensor object at 0x2>", 69, 301);
  t.op("aten::to", 70, 300);
  t.op("aten::_to_copy", 71, 299);
  t.op("aten::empty_strided", 72, 80);
  const std::size_t c =
      t.op("aten::copy_", 81, 298, {{dst, {100, 100}}, {src, {100, 100}}, {"", {}}});
  t.launch(c, EventKind::Memcpy, copy, 100, 130);
  return t.finish();
}

TEST(ExtraCudaCopy, FiresOnATensorFilledOnTheCpuThenCopiedToTheGpu) {
  for (bool python : {false, true}) {
    const auto f = finding(filled_then_copied("aten::zero_", "float", "float",
                                              "Memcpy HtoD (Pageable -> Device)", python),
                           "extra_cuda_copy");
    ASSERT_TRUE(f) << python;
    EXPECT_EQ(f->source, "torch");
    // The aten::to's host time (230 us) is longer than its copy's (30 us).
    EXPECT_EQ(f->saving_ns_per_step, 230000);
    ASSERT_EQ(f->evidence.size(), 1u);
    EXPECT_EQ(f->evidence[0].what, "aten::to, filled by aten::zero_");
    EXPECT_DOUBLE_EQ(f->evidence[0].per_step, 1);
    EXPECT_NE(f->recommendation.find("torch::TensorOptions().device(torch::kCUDA)"),
              std::string::npos);
  }
  for (const char* fill : {"aten::fill_", "aten::normal_", "aten::uniform_"})
    EXPECT_TRUE(finding(filled_then_copied(fill), "extra_cuda_copy")) << fill;
}

TEST(ExtraCudaCopy, DoesNotFireOtherwise) {
  // Filled by something else (an arange, a slice of data).
  EXPECT_FALSE(finding(filled_then_copied("aten::arange"), "extra_cuda_copy"));
  // A conversion of dtype, not a plain copy.
  EXPECT_FALSE(finding(filled_then_copied("aten::zero_", "double", "float"), "extra_cuda_copy"));
  // Not to the GPU.
  EXPECT_FALSE(
      finding(filled_then_copied("aten::zero_", "float", "float", "Memcpy DtoD (Device -> Device)"),
              "extra_cuda_copy"));
}

TEST(ExtraCudaCopy, SaysWhenCopiesCarryNoInputTypes) {
  TorchTraceBuilder t;
  t.b.step(1, 0, 1000);
  t.op("aten::zeros", 10, 60);
  t.op("aten::zero_", 21, 59);
  t.op("aten::to", 70, 300);
  t.op("aten::_to_copy", 71, 299);
  const std::size_t c = t.op("aten::copy_", 81, 298);
  t.launch(c, EventKind::Memcpy, "Memcpy HtoD (Pageable -> Device)", 100, 130);
  const Report r(t.finish());
  ASSERT_TRUE(undetermined(r, "findings.input_types"));
  for (const auto& [what, why] : r.undetermined)
    if (what == "findings.input_types") EXPECT_NE(why.find("extra_cuda_copy"), std::string::npos);
}

}  // namespace
}  // namespace ptprof::test
