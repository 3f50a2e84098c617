// key_averages() and table() on hand-built traces, against torch.profiler's rules.
#include <gtest/gtest.h>

#include <sstream>

#include "ptprof/error.h"
#include "ptprof/trace.h"

namespace ptprof {
namespace {

// Adds a CPU event on thread `tid` [start, start+dur) in microseconds.
void op(Trace& t, const char* name, int64_t start_us, int64_t dur_us, int64_t tid = 1,
        EventKind kind = EventKind::CpuOp) {
  Event e;
  e.kind = kind;
  e.name = t.intern(name);
  e.start_ns = start_us * 1000;
  e.duration_ns = dur_us * 1000;
  e.tid = tid;
  e.external_id = t.events.size() + 1;
  t.events.push_back(e);
}

TEST(KeyAverages, SelfAndTotalTimesAndCounts) {
  Trace t;
  op(t, "step", 0, 100, 1, EventKind::UserAnnotation);
  op(t, "aten::linear", 10, 50);
  op(t, "aten::addmm", 20, 30);
  op(t, "aten::linear", 70, 20);
  op(t, "aten::addmm", 75, 10);
  op(t, "aten::relu", 0, 5, 2);  // another thread
  t.rebuild_tree();
  const KeyAverages avg = t.key_averages();
  const KeyAverage* lin = avg.find("aten::linear");
  ASSERT_NE(lin, nullptr);
  EXPECT_EQ(lin->count, 2);
  EXPECT_EQ(lin->cpu_time_total_ns, 70000);
  EXPECT_EQ(lin->self_cpu_time_total_ns, 30000);
  EXPECT_EQ(lin->cpu_time_avg_ns(), 35000);
  EXPECT_EQ(avg.find("aten::addmm")->self_cpu_time_total_ns, 40000);
  EXPECT_EQ(avg.find("step")->self_cpu_time_total_ns, 30000);
  EXPECT_TRUE(avg.find("step")->is_user_annotation);
  EXPECT_EQ(avg.find("aten::relu")->count, 1);
}

TEST(KeyAverages, SameNamedOnlyChildIsFoldedIntoItsParent) {
  // torch.profiler's _remove_dup_nodes: aten::copy_ redispatching to aten::copy_ counts once.
  Trace t;
  op(t, "aten::copy_", 0, 10);
  op(t, "aten::copy_", 1, 8);
  op(t, "aten::copy_", 20, 10);  // a sibling call with no same-named child
  t.rebuild_tree();
  const KeyAverages avg = t.key_averages();  // find() points into it: keep it alive
  const KeyAverage* c = avg.find("aten::copy_");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->count, 2);
  EXPECT_EQ(c->self_cpu_time_total_ns, 20000);
  EXPECT_EQ(c->cpu_time_total_ns, 20000);
}

TEST(KeyAverages, FilteredNamesAreLeftOut) {
  Trace t;
  op(t, "aten::is_leaf", 0, 1);
  op(t, "aten::output_nr", 2, 1);
  op(t, "aten::_version", 4, 1);
  op(t, "profiler::_record_function_enter_new", 6, 1);
  op(t, "aten::add", 8, 1);
  t.rebuild_tree();
  const KeyAverages avg = t.key_averages();
  ASSERT_EQ(avg.rows.size(), 1u);
  EXPECT_EQ(avg.rows[0].key, "aten::add");
}

TEST(KeyAverages, DeviceTimeComesFromKernelsOfTheOpAndItsChildren) {
  Trace t;
  op(t, "aten::linear", 0, 100);
  op(t, "aten::addmm", 10, 50);
  t.rebuild_tree();
  Event k;
  k.kind = EventKind::Kernel;
  k.name = t.intern("gemm_kernel");
  k.start_ns = 30000;
  k.duration_ns = 7000;
  k.external_id = t.events[1].external_id;  // launched by aten::addmm
  t.events.push_back(k);
  const KeyAverages avg = t.key_averages();
  EXPECT_TRUE(avg.has_device_time);
  EXPECT_EQ(avg.find("aten::addmm")->self_device_time_total_ns, 7000);
  EXPECT_EQ(avg.find("aten::linear")->self_device_time_total_ns, 0);
  EXPECT_EQ(avg.find("aten::linear")->device_time_total_ns, 7000);
  EXPECT_EQ(avg.find("gemm_kernel")->count, 1);
  const std::string table = avg.table(SortBy::SelfDeviceTimeTotal);
  EXPECT_NE(table.find("Self CUDA %"), std::string::npos);
  EXPECT_NE(table.find("Self CUDA time total: 7.000us"), std::string::npos) << table;
}

TEST(KeyAverages, TableFormatAndSorting) {
  Trace t;
  op(t, "a_fast", 0, 2);
  op(t, "b_slow", 10, 2000);
  op(t, "c_many", 3000, 1);
  op(t, "c_many", 3002, 1);
  op(t, "c_many", 3004, 1);
  t.rebuild_tree();
  const KeyAverages avg = t.key_averages();
  const std::string by_total = avg.table("cpu_time_total");
  EXPECT_LT(by_total.find("b_slow"), by_total.find("a_fast"));
  const std::string by_count = avg.table("count");
  EXPECT_LT(by_count.find("c_many"), by_count.find("b_slow"));
  // torch's formats: unit by size, 3 decimals; shares with 2 decimals; right-aligned cells.
  EXPECT_NE(by_total.find("2.000ms"), std::string::npos) << by_total;
  EXPECT_NE(by_total.find("2.000us"), std::string::npos);
  EXPECT_NE(by_total.find("99.75%"), std::string::npos) << by_total;
  EXPECT_NE(by_total.find("Self CPU time total: 2.005ms"), std::string::npos) << by_total;
  std::istringstream lines(by_total);
  std::string sep, header;
  std::getline(lines, sep);
  std::getline(lines, header);
  EXPECT_EQ(sep.find_first_not_of("- "), std::string::npos);
  EXPECT_EQ(header.size(), sep.size());
  EXPECT_NE(header.find("# of Calls"), std::string::npos);
  // row_limit
  const std::string one = avg.table(SortBy::CpuTimeTotal, 1);
  EXPECT_NE(one.find("b_slow"), std::string::npos);
  EXPECT_EQ(one.find("a_fast"), std::string::npos);
}

TEST(KernelTable, CallsTotalAverageMinMaxPerKernel) {
  Trace t;
  auto kernel = [&](const char* name, int64_t dur_us) {
    Event k;
    k.kind = EventKind::Kernel;
    k.name = t.intern(name);
    k.duration_ns = dur_us * 1000;
    t.events.push_back(k);
  };
  kernel("gemm", 10);
  kernel("gemm", 30);
  kernel("relu", 2);
  op(t, "aten::mm", 0, 100);  // CPU ops are not kernels
  const KernelTable kt = t.kernel_table();
  ASSERT_EQ(kt.rows.size(), 2u);
  EXPECT_EQ(kt.rows[0].name, "gemm");
  EXPECT_EQ(kt.rows[0].count, 2);
  EXPECT_EQ(kt.rows[0].total_ns, 40000);
  EXPECT_EQ(kt.rows[0].avg_ns(), 20000);
  EXPECT_EQ(kt.rows[0].min_ns, 10000);
  EXPECT_EQ(kt.rows[0].max_ns, 30000);
  const std::string text = kt.table();
  for (const char* col : {"Kernel", "# of Calls", "Total", "Average", "Min", "Max"})
    EXPECT_NE(text.find(col), std::string::npos);
  EXPECT_NE(text.find("Kernel time total: 42.000us"), std::string::npos) << text;
  EXPECT_LT(text.find("gemm"), text.find("relu"));
}

TEST(KeyAverages, UnknownSortKeyListsTheValidOnes) {
  try {
    parse_sort_by("cpu_time_totl");
    FAIL();
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("cpu_time_totl"), std::string::npos);
    EXPECT_NE(msg.find("self_cpu_time_total"), std::string::npos);
  }
}

}  // namespace
}  // namespace ptprof
