// The torch rules on the real H200 trace of examples/gpu_train_check.cpp (record_shapes,
// with_stack: tests/gpu/fixtures/h200/ptprof_all.pt.trace.json.gz): a small CNN trained with
// libtorch's Adam, float32 without TF32, the batch copied from pinned memory, conv -> relu.
#include <set>

#include "torch_traces.h"
#include "trace/trace_reader.h"

namespace ptprof::test {
namespace {

Trace h200(const char* file) {
  const std::string path = std::string(PTPROF_SOURCE_DIR) + "/tests/gpu/fixtures/h200/" + file;
  return detail::parse_trace(detail::read_trace_file(path), path);
}

TEST(TorchRulesOnH200, LibtorchsAdamAndFloat32MatmulsWithoutTf32) {
  const Report r(h200("ptprof_all.pt.trace.json.gz"));
  std::set<std::string> torch;
  for (const auto& f : r.findings)
    if (f.source == "torch") torch.insert(f.id);
  EXPECT_EQ(torch, (std::set<std::string>{"single_tensor_optimizer", "fp32_matmul"}));
  for (const auto& f : r.findings) {
    if (f.id == "single_tensor_optimizer") {
      // torch::optim::Adam::step's ops, named from the stacks, where the program called it.
      ASSERT_FALSE(f.evidence.empty());
      EXPECT_EQ(f.evidence[0].what, "torch::optim::Adam::step: one op per parameter");
      EXPECT_EQ(f.evidence[0].note, "(anonymous namespace)::Trainer::step");
      EXPECT_GT(*f.saving_ns_per_step, 0);
    }
    if (f.id == "fp32_matmul") {
      // The forward's addmm and the backward's mm, on sm80 FP32 (ffma) and SIMT kernels.
      ASSERT_FALSE(f.evidence.empty());
      EXPECT_NE(f.evidence[0].what.find(" float"), std::string::npos);
      EXPECT_NE(f.evidence[0].note.find("kernel "), std::string::npos);
    }
  }
  // Every op that a rule looks at carries its inputs here: nothing is undetermined for them.
  for (const auto& [what, why] : r.undetermined) EXPECT_NE(what, "findings.input_types");
}

TEST(TorchRulesOnH200, WithoutRecordShapesTheReportSaysWhatItCannotCheck) {
  const Report r(h200("ptprof.pt.trace.json.gz"));
  for (const auto& f : r.findings) EXPECT_NE(f.source, "torch") << f.id;
  EXPECT_TRUE(undetermined(r, "findings.input_types"));
}

}  // namespace
}  // namespace ptprof::test
