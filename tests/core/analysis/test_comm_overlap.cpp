// Report::comm_overlap, TensorBoard's computation/communication overview per step: computation
// is kernels that are not a collective's (host ops where the trace has no kernel),
// communication the collectives and their kernels, overlap both at once, other the rest; the
// four add up to the step.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "ptprof/report.h"
#include "ptprof/trace.h"
#include "trace_builder.h"

namespace ptprof {
namespace {

using test::TraceBuilder;

int64_t us(double v) {
  return TraceBuilder::ns(v);
}

TEST(CommOverlap, KernelsAgainstACollectiveAndItsKernel) {
  TraceBuilder b;
  b.h100();
  // Step 1 [0, 1000): gemm 100-400; all_reduce's op 300-500 launches its kernel 450-700, which
  // the next gemm 600-800 overlaps. Step 2 [1000, 2000): three gemms of 100 us, no
  // communication (as many kernels as step 1, so that TB keeps it as a whole step).
  b.step(1, 0, 1000);
  b.op_with_kernel("aten::mm", 90, 120, "gemm_kernel", 100, 400);
  b.op_with_kernel("nccl:all_reduce", 300, 500, "ncclKernel_AllReduce", 450, 700);
  b.op_with_kernel("aten::mm", 590, 610, "gemm_kernel", 600, 800);
  b.step(2, 1000, 2000);
  for (double k : {1100, 1250, 1400})
    b.op_with_kernel("aten::mm", k - 10, k + 20, "gemm_kernel", k, k + 100);
  const Trace t = b.finish();
  const Report r(t);
  ASSERT_EQ(r.comm_overlap_basis, "kernels");
  ASSERT_EQ(r.comm_overlap.size(), 2u);
  const Report::StepOverlap& s1 = r.comm_overlap[0];
  EXPECT_EQ(s1.step, r.steps[0].name);
  // Computation 100-400 and 600-800 (500 us); communication 300-700 (the op and its kernel:
  // 400 us); both 300-400 and 600-700.
  EXPECT_EQ(s1.overlap_ns, us(200));
  EXPECT_EQ(s1.computation_ns, us(300));
  EXPECT_EQ(s1.communication_ns, us(200));
  EXPECT_EQ(s1.other_ns, us(300));
  const Report::StepOverlap& s2 = r.comm_overlap[1];
  EXPECT_EQ(s2.computation_ns, us(300));
  EXPECT_EQ(s2.overlap_ns, 0);
  EXPECT_EQ(s2.communication_ns, 0);
  EXPECT_EQ(s2.other_ns, us(700));

  const auto j = nlohmann::json::parse(r.to_json());
  const auto& o = j.at("comm_overlap");
  EXPECT_EQ(o.at("basis"), "kernels");
  ASSERT_EQ(o.at("per_step").size(), 2u);
  EXPECT_DOUBLE_EQ(o["per_step"][0].at("computation_us").get<double>(), 300);
  EXPECT_DOUBLE_EQ(o["per_step"][0].at("overlap_us").get<double>(), 200);
  EXPECT_DOUBLE_EQ(o["per_step"][0].at("communication_us").get<double>(), 200);
  EXPECT_DOUBLE_EQ(o["per_step"][0].at("other_us").get<double>(), 300);
}

TEST(CommOverlap, HostOpsAreTheComputationWithoutKernels) {
  TraceBuilder b;
  b.step(1, 0, 1000);
  b.op("aten::mm", 100, 400);
  b.op("gloo:all_reduce", 350, 600);
  b.range("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 700, 900);
  const Trace t = b.finish();
  const Report r(t);
  ASSERT_EQ(r.comm_overlap_basis, "host_ops");
  ASSERT_EQ(r.comm_overlap.size(), 1u);
  // The DataLoader range is neither: it stays in other.
  EXPECT_EQ(r.comm_overlap[0].computation_ns, us(250));
  EXPECT_EQ(r.comm_overlap[0].overlap_ns, us(50));
  EXPECT_EQ(r.comm_overlap[0].communication_ns, us(200));
  EXPECT_EQ(r.comm_overlap[0].other_ns, us(500));
}

TEST(CommOverlap, NothingWithoutAStep) {
  TraceBuilder b;
  const Trace t = b.finish();
  const Report r(t);
  EXPECT_EQ(r.comm_overlap_basis, "");
  EXPECT_TRUE(r.comm_overlap.empty());
  const auto j = nlohmann::json::parse(r.to_json());
  EXPECT_EQ(j.at("comm_overlap").at("basis"), "");
  EXPECT_TRUE(j.at("comm_overlap").at("per_step").empty());
}

}  // namespace
}  // namespace ptprof
