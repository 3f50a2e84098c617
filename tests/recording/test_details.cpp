// record_shapes, profile_memory, with_stack, with_flops on real libtorch ops.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <thread>

#include "recording/recorder.h"
#include "trace/flops.h"
#include "test_util.h"

namespace ptprof {
namespace {

std::shared_ptr<Trace> profile(Options o, const std::function<void()>& fn) {
  std::shared_ptr<Trace> out;
  o.on_trace_ready = {callback_handler([&](const Trace& t) { out = std::make_shared<Trace>(t); })};
  {
    ProfileSession s(o);
    fn();
  }
  return out;
}

const Event* first(const Trace& t, const std::string& name) {
  for (const Event& e : t.events)
    if (e.name == name) return &e;
  return nullptr;
}

TEST(RecordShapes, InputsAsPyTorchWritesThem) {
  Options o;
  o.record_shapes = true;
  auto a = torch::randn({8, 16});
  auto w = torch::randn({16, 32});
  auto bias = torch::randn({32});
  auto t = profile(o, [&] {
    torch::addmm(bias, a, w, /*beta=*/1, /*alpha=*/2);
    a.add_(torch::ones({8, 16}), 0.5);
  });
  ASSERT_TRUE(t);
  const Event* mm = first(*t, "aten::addmm");
  ASSERT_NE(mm, nullptr);
  ASSERT_GE(mm->inputs, 0);
  const auto& in = t->op_inputs[mm->inputs];
  ASSERT_EQ(in.size(), 5u);  // self, mat1, mat2, beta, alpha
  EXPECT_EQ(in[0].sizes, (std::vector<int64_t>{32}));
  EXPECT_EQ(in[1].sizes, (std::vector<int64_t>{8, 16}));
  EXPECT_EQ(in[1].strides, (std::vector<int64_t>{16, 1}));
  EXPECT_EQ(in[2].sizes, (std::vector<int64_t>{16, 32}));
  EXPECT_EQ(in[1].dtype, "float");
  EXPECT_EQ(in[3].dtype, "Scalar");
  EXPECT_EQ(in[4].concrete, "2");

  const auto j = nlohmann::json::parse(t->to_json());
  bool seen = false;
  for (const auto& e : j["traceEvents"]) {
    if (e.value("name", "") != "aten::addmm") continue;
    seen = true;
    const auto& args = e["args"];
    EXPECT_EQ(args["Input Dims"], nlohmann::json::parse("[[32], [8, 16], [16, 32], [], []]"));
    EXPECT_EQ(args["Input type"],
              nlohmann::json::parse(R"(["float", "float", "float", "Scalar", "Scalar"])"));
    EXPECT_EQ(args["Input Strides"][1], nlohmann::json::parse("[16, 1]"));
    EXPECT_EQ(args["Concrete Inputs"], nlohmann::json::parse(R"(["", "", "", "1", "2"])"));
  }
  EXPECT_TRUE(seen);
  EXPECT_EQ(j["record_shapes"], 1);
}

TEST(RecordShapes, GroupByInputShape) {
  Options o;
  o.record_shapes = true;
  auto t = profile(o, [] {
    torch::mm(torch::ones({2, 3}), torch::ones({3, 4}));
    torch::mm(torch::ones({2, 3}), torch::ones({3, 4}));
    torch::mm(torch::ones({5, 3}), torch::ones({3, 4}));
  });
  const KeyAverages avg = t->key_averages(/*group_by_input_shape=*/true);
  int mm_rows = 0;
  for (const KeyAverage& r : avg.rows) {
    if (r.key != "aten::mm") continue;
    ++mm_rows;
    if (r.input_shapes == "[[2, 3], [3, 4]]") EXPECT_EQ(r.count, 2);
    else EXPECT_EQ(r.input_shapes, "[[5, 3], [3, 4]]");
  }
  EXPECT_EQ(mm_rows, 2);
  EXPECT_NE(avg.table(SortBy::Count).find("Input Shapes"), std::string::npos);
  EXPECT_EQ(t->key_averages(false).find("aten::mm")->count, 3);
}

TEST(RecordShapes, OffByDefaultAndNotInTrace) {
  auto t = profile(Options{}, [] { torch::mm(torch::ones({2, 3}), torch::ones({3, 4})); });
  EXPECT_EQ(first(*t, "aten::mm")->inputs, -1);
  EXPECT_EQ(t->to_json().find("Input Dims"), std::string::npos);
}

TEST(RecordShapes, ListsScalarsAndNonContiguousInputs) {
  Options o;
  o.record_shapes = true;
  auto x = torch::randn({4, 6});
  auto t = profile(o, [&] {
    torch::cat({x, x, x.narrow(1, 0, 2)}, 1);
    torch::sum(x, std::vector<int64_t>{0, 1});
    torch::mul(x.t(), 2);
  });
  const auto j = nlohmann::json::parse(t->to_json());
  std::map<std::string, nlohmann::json> args;
  for (const auto& e : j["traceEvents"])
    if (e.contains("args") && e["args"].contains("Input Dims")) args.emplace(e["name"], e["args"]);
  ASSERT_TRUE(args.count("aten::cat"));
  EXPECT_EQ(args["aten::cat"]["Input Dims"],
            nlohmann::json::parse("[[[4, 6], [4, 6], [4, 2]], []]"));
  EXPECT_EQ(args["aten::cat"]["Input type"], nlohmann::json::parse(R"(["TensorList", "Scalar"])"));
  EXPECT_EQ(args["aten::cat"]["Concrete Inputs"], nlohmann::json::parse(R"(["", "1"])"));
  ASSERT_TRUE(args.count("aten::sum"));
  const auto& sum = args["aten::sum"];
  EXPECT_EQ(sum["Input type"][1], "ScalarList");
  EXPECT_EQ(sum["Concrete Inputs"][1], "[0, 1]");
  EXPECT_EQ(sum["Concrete Inputs"][2], "False");
  EXPECT_EQ(sum["Input type"][3], "");  // dtype=None
  ASSERT_TRUE(args.count("aten::mul"));
  EXPECT_EQ(args["aten::mul"]["Input Dims"][0], nlohmann::json::parse("[6, 4]"));
  EXPECT_EQ(args["aten::mul"]["Input Strides"][0], nlohmann::json::parse("[1, 6]"));
}

// Dense strides are not stored but rebuilt from the sizes; every tensor must still come back
// with exactly its own strides, including those that only look dense (a size-1 dim with any
// stride is contiguous to c10, but PyTorch writes the stride it has).
TEST(RecordShapes, StridesComeBackExactly) {
  Options o;
  o.record_shapes = true;
  const std::vector<torch::Tensor> ts = {
      torch::ones({2, 3, 4}),
      torch::ones({7}),
      torch::ones({}),
      torch::empty({2, 0, 3}),  // a size-0 dim steps like 1
      torch::ones({4, 1, 5}),
      torch::ones({1, 12}).as_strided({1, 3}, {100, 1}),  // size-1 dim, odd stride
      torch::ones({5, 1}).as_strided({5, 1}, {1, 1}),
      torch::ones({3}).expand({4, 3}),  // stride 0
      torch::ones({3, 4}).t(),
      torch::ones({6, 6}).narrow(1, 1, 3),
      torch::ones({2, 1, 2}).as_strided({2, 1, 2}, {2, 7, 1}),
  };
  auto t = profile(o, [&] {
    for (const auto& x : ts) torch::neg(x);
  });
  ASSERT_TRUE(t);
  std::size_t k = 0;
  for (const Event& e : t->events) {
    if (e.name != "aten::neg") continue;
    ASSERT_LT(k, ts.size());
    ASSERT_GE(e.inputs, 0) << "tensor " << k;
    const OpInput& in = t->op_inputs[e.inputs][0];
    EXPECT_EQ(in.sizes, ts[k].sizes().vec()) << "tensor " << k;
    EXPECT_EQ(in.strides, ts[k].strides().vec()) << "tensor " << k;
    ++k;
  }
  EXPECT_EQ(k, ts.size());
}

// Details are written straight into per-thread blocks; records that straddle a block's end
// must move whole to the next block.
TEST(RecordShapes, EveryOpKeepsItsOwnInputsAcrossManyBlocks) {
  Options o;
  o.record_shapes = true;
  std::vector<torch::Tensor> ts;
  for (int d = 1; d <= 7; ++d) ts.push_back(torch::ones(std::vector<int64_t>(d, 1)));
  constexpr int kOps = 12000;  // ~1.5 MB of details: several 256 KiB blocks
  auto t = profile(o, [&] {
    for (int i = 0; i < kOps; ++i) ts[i % 7].add_(ts[i % 7], /*alpha=*/i);
  });
  int seen = 0;
  for (const Event& e : t->events) {
    if (e.name != "aten::add_") continue;
    ASSERT_GE(e.inputs, 0) << "op " << seen;
    const auto& in = t->op_inputs[e.inputs];
    ASSERT_EQ(in.size(), 3u) << "op " << seen;
    EXPECT_EQ(in[0].sizes.size(), static_cast<std::size_t>(seen % 7 + 1)) << "op " << seen;
    EXPECT_EQ(in[1].strides.size(), static_cast<std::size_t>(seen % 7 + 1)) << "op " << seen;
    EXPECT_EQ(in[2].concrete, std::to_string(seen)) << "op " << seen;
    ++seen;
  }
  EXPECT_EQ(seen, kOps);
}

// An op whose inputs exceed the per-op detail bound keeps no inputs; the ops around it do.
TEST(RecordShapes, OpBeyondTheDetailBoundKeepsNoInputs) {
  Options o;
  o.record_shapes = true;
  std::vector<torch::Tensor> a, b;
  for (int i = 0; i < 64; ++i) {  // 2 lists x 64 tensors x 16 dims: over 16 KiB
    a.push_back(torch::ones(std::vector<int64_t>(16, 1)));
    b.push_back(torch::ones(std::vector<int64_t>(16, 1)));
  }
  auto t = profile(o, [&] {
    torch::mm(torch::ones({2, 3}), torch::ones({3, 4}));
    torch::_foreach_add_(a, b);
    torch::mm(torch::ones({5, 3}), torch::ones({3, 4}));
  });
  const Event* big = first(*t, "aten::_foreach_add_");
  ASSERT_NE(big, nullptr);
  EXPECT_EQ(big->inputs, -1);
  std::vector<std::vector<int64_t>> mm_rows;
  for (const Event& e : t->events)
    if (e.name == "aten::mm" && e.inputs >= 0) mm_rows.push_back(t->op_inputs[e.inputs][0].sizes);
  EXPECT_EQ(mm_rows, (std::vector<std::vector<int64_t>>{{2, 3}, {5, 3}}));
}

TEST(ProfileMemory, AllocationsAndFreesAttributedToTheInnermostOp) {
  Options o;
  o.profile_memory = true;
  auto t = profile(o, [] {
    auto x = torch::empty({1024}, torch::kFloat);  // 4 KiB allocated inside aten::empty
    x.fill_(1);
  });  // freed when x dies, outside any op
  ASSERT_TRUE(t);
  ASSERT_GE(t->memory_events.size(), 2u);
  const MemoryEvent* alloc = nullptr;
  const MemoryEvent* free_ev = nullptr;
  for (const MemoryEvent& m : t->memory_events) {
    if (m.bytes == 4096 && !alloc) alloc = &m;
    if (m.bytes == -4096 && alloc && m.address == alloc->address) free_ev = &m;
  }
  ASSERT_NE(alloc, nullptr);
  ASSERT_NE(free_ev, nullptr);
  EXPECT_EQ(alloc->device_type, 0);
  EXPECT_EQ(alloc->device_index, -1);
  EXPECT_GE(alloc->total_allocated, 4096);
  ASSERT_GE(alloc->op, 0);
  EXPECT_EQ(t->events[alloc->op].name, "aten::empty");
  EXPECT_EQ(free_ev->op, -1);
  for (std::size_t i = 1; i < t->memory_events.size(); ++i)
    EXPECT_LE(t->memory_events[i - 1].time_ns, t->memory_events[i].time_ns);

  const KeyAverages avg = t->key_averages();
  EXPECT_TRUE(avg.has_memory);
  EXPECT_EQ(avg.find("aten::empty")->self_cpu_memory_usage, 4096);
  const std::string table = avg.table(SortBy::CpuMemoryUsage);
  EXPECT_NE(table.find("Self CPU Mem"), std::string::npos);
  EXPECT_NE(table.find("4.00 Kb"), std::string::npos) << table;

  const auto j = nlohmann::json::parse(t->to_json());
  int mem = 0;
  double prev = -1;
  for (const auto& e : j["traceEvents"]) {
    if (e.value("name", "") != "[memory]") continue;
    ++mem;
    EXPECT_EQ(e["ph"], "i");
    EXPECT_EQ(e["cat"], "cpu_instant_event");
    for (const char* k : {"Total Reserved", "Total Allocated", "Bytes", "Addr", "Device Id",
                          "Device Type", "Ev Idx"})
      EXPECT_TRUE(e["args"].contains(k)) << k;
    EXPECT_GE(e["ts"].get<double>(), prev);
    prev = e["ts"].get<double>();
  }
  EXPECT_EQ(mem, static_cast<int>(t->memory_events.size()));
}

TEST(ProfileMemory, ThreadStartedMidWindowIsAttributed) {
  Options o;
  o.profile_memory = true;
  int64_t worker_tid = 0;
  auto t = profile(o, [&] {
    std::thread([&] {
      worker_tid = static_cast<int64_t>(::gettid());
      auto x = torch::ones({2048});
      x.mul_(x);
    }).join();
  });
  bool found = false;
  for (const MemoryEvent& m : t->memory_events) {
    if (m.tid != worker_tid || m.bytes != 8192) continue;
    found = true;
    ASSERT_GE(m.op, 0);
    EXPECT_EQ(t->events[m.op].tid, worker_tid);
  }
  EXPECT_TRUE(found);
}

TEST(ProfileMemory, ReporterIsRemovedAtStop) {
  Options o;
  o.profile_memory = true;
  const c10::DebugInfoBase* during = nullptr;
  auto t = profile(o, [&] {
    torch::ones({4});
    during = c10::ThreadLocalDebugInfo::get(c10::DebugInfoKind::PROFILER_STATE);
  });
  // It sat in this thread's slot and reported while the session ran, and is gone after.
  EXPECT_NE(during, nullptr);
  EXPECT_FALSE(t->memory_events.empty());
  EXPECT_EQ(c10::ThreadLocalDebugInfo::get(c10::DebugInfoKind::PROFILER_STATE), nullptr);
  // libtorch's own profiler refuses to start while anything sits in the slot.
  EXPECT_NO_THROW(test::libtorch_profiler_counts([] { torch::ones({4}); }));
}

__attribute__((noinline)) void ptprof_test_stack_marker() {
  torch::ones({3}).add_(torch::ones({3}));
}

TEST(WithStack, OpsCarryTheirNativeCallers) {
  Options o;
  o.with_stack = true;
  auto t = profile(o, [] { ptprof_test_stack_marker(); });
  const Event* add = first(*t, "aten::add_");
  ASSERT_NE(add, nullptr);
  ASSERT_GE(add->stack, 0);
  const auto& frames = t->stacks[add->stack];
  ASSERT_FALSE(frames.empty());
  const bool has_marker = std::any_of(frames.begin(), frames.end(), [](const std::string& f) {
    return f.find("ptprof_test_stack_marker") != std::string::npos;
  });
  EXPECT_TRUE(has_marker);
  for (const auto& f : frames) EXPECT_EQ(f.find("on_enter"), std::string::npos) << f;
  const auto j = nlohmann::json::parse(t->to_json());
  bool stack_arg = false;
  for (const auto& e : j["traceEvents"]) {
    if (e.value("name", "") == "aten::add_" && e["args"].contains("Call stack"))
      stack_arg = e["args"]["Call stack"].get<std::string>().find("ptprof_test_stack_marker") !=
                  std::string::npos;
  }
  EXPECT_TRUE(stack_arg);
}

TEST(WithStack, DeepStacksAreCutAndMarked) {
  Options o;
  o.with_stack = true;
  o.max_stack_depth = 3;
  auto t = profile(o, [] { ptprof_test_stack_marker(); });
  const Event* add = first(*t, "aten::add_");
  ASSERT_GE(add->stack, 0);
  const auto& frames = t->stacks[add->stack];
  // At most the 3 innermost frames (less the RecordFunction frames ptprof drops), marked.
  ASSERT_GE(frames.size(), 2u);
  ASSERT_LE(frames.size(), 4u);
  EXPECT_EQ(frames.front(), "<truncated>");
}

TEST(WithFlops, MatmulFlopsInTraceAndTable) {
  Options o;
  o.with_flops = true;
  auto t = profile(o, [] { torch::mm(torch::ones({8, 16}), torch::ones({16, 32})); });
  const Event* mm = first(*t, "aten::mm");
  ASSERT_NE(mm, nullptr);
  EXPECT_EQ(mm->flops, 2u * 8 * 16 * 32);
  EXPECT_EQ(mm->inputs, -1);  // shapes are captured for FLOPs, not written without record_shapes
  const KeyAverages avg = t->key_averages();
  EXPECT_EQ(avg.find("aten::mm")->flops, 8192u);
  const std::string table = avg.table(SortBy::Flops);
  EXPECT_NE(table.find("Total KFLOPs"), std::string::npos) << table;
  EXPECT_NE(table.find("FLOP/s"), std::string::npos);
  EXPECT_NE(t->to_json().find("\"flops\": 8192"), std::string::npos);
}

// Ops with the same inputs share one decoded entry; FLOPs still follow each op's own formula.
TEST(RecordShapes, OpsWithTheSameInputsShareAnEntry) {
  auto a = torch::ones({4, 4});
  auto b = torch::ones({4, 4});
  auto run = [&] {
    for (int i = 0; i < 50; ++i) {
      torch::mm(a, b);
      torch::mul(a, b);
    }
    torch::mm(a, torch::ones({4, 2}));
  };
  Options o;
  o.record_shapes = true;
  o.with_flops = true;
  auto t = profile(o, run);
  std::set<int32_t> square;  // entries of the 4x4 by 4x4 ops
  int mm = 0, mul = 0;
  for (const Event& e : t->events) {
    if (e.name != "aten::mm" && e.name != "aten::mul") continue;
    ASSERT_GE(e.inputs, 0);
    const auto& in = t->op_inputs[e.inputs];
    ASSERT_EQ(in.size(), 2u);
    EXPECT_EQ(in[0].sizes, (std::vector<int64_t>{4, 4}));
    if (in[1].sizes == std::vector<int64_t>{4, 2}) {
      EXPECT_EQ(e.flops, 2u * 4 * 4 * 2);
      continue;
    }
    square.insert(e.inputs);
    if (e.name == "aten::mm") {
      ++mm;
      EXPECT_EQ(e.flops, 2u * 4 * 4 * 4);
    } else {
      ++mul;
      EXPECT_EQ(e.flops, detail::estimate_flops("aten::mul", in));
      EXPECT_NE(e.flops, 2u * 4 * 4 * 4);
    }
  }
  EXPECT_EQ(mm, 50);
  EXPECT_EQ(mul, 50);
  EXPECT_EQ(square.size(), 1u);
  EXPECT_LT(t->op_inputs.size(), 10u);

  // FLOPs alone: inputs are decoded for the formulas, not kept in the trace.
  o.record_shapes = false;
  auto f = profile(o, run);
  EXPECT_TRUE(f->op_inputs.empty());
  const Event* first_mm = first(*f, "aten::mm");
  ASSERT_NE(first_mm, nullptr);
  EXPECT_EQ(first_mm->inputs, -1);
  EXPECT_EQ(first_mm->flops, 2u * 4 * 4 * 4);
}

// with_flops without record_shapes keeps the inputs of the ops a FLOP formula reads, and of
// no other op: relu's are not encoded on the hot path at all.
TEST(WithFlops, AloneKeepsTheInputsOfFormulaOpsOnly) {
  auto a = torch::ones({4, 4});
  for (const bool shapes : {false, true}) {
    detail::Recorder& r = detail::Recorder::get();
    detail::CaptureOptions c;
    c.inputs = true;
    c.inputs_for_flops_only = !shapes;
    r.install(c);
    r.begin_window(std::size_t{64} << 20);
    torch::mm(a, a);
    torch::relu(a);
    torch::add(a, a);
    const detail::Collected got = r.end_window();
    r.uninstall();
    std::map<std::string, bool> details;  // op name -> whether its record has details
    for (const auto& th : got.threads)
      for (const detail::RawRecord& rec : th.records)
        if (rec.scope != detail::kScopeMemory && rec.name_id < got.names.size())
          details[std::string(got.names[rec.name_id])] |= (rec.flags & detail::kFlagDetails) != 0;
    ASSERT_TRUE(details.count("aten::relu")) << "shapes " << shapes;
    EXPECT_TRUE(details["aten::mm"]) << "shapes " << shapes;
    EXPECT_TRUE(details["aten::add"]) << "shapes " << shapes;
    EXPECT_EQ(details["aten::relu"], shapes);
  }
}

class AllCombinations : public ::testing::TestWithParam<int> {};

TEST_P(AllCombinations, ProduceAValidTrace) {
  const int bits = GetParam();
  Options o;
  o.record_shapes = bits & 1;
  o.profile_memory = bits & 2;
  o.with_stack = bits & 4;
  o.with_flops = bits & 8;
  o.schedule = Schedule{0, 1, 2, 1};
  test::TempDir dir;
  o.on_trace_ready = {tensorboard_trace_handler(dir.path(), "combo")};
  test::Mlp model;
  {
    ProfileSession s(o);
    for (int i = 0; i < 4; ++i) {
      test::train_step(model);
      s.step();
    }
    EXPECT_TRUE(s.stop().ok());
  }
  const auto files = dir.files();
  ASSERT_EQ(files.size(), 1u);
  const auto j = test::read_json_file(files[0]);
  EXPECT_EQ(test::count_events(j, "aten::addmm"), 4);  // 2 layers x 2 active steps
  EXPECT_EQ(test::count_events(j, "ProfilerStep#1"), 1);
  const std::string text = j.dump();
  EXPECT_EQ(text.find("Input Dims") != std::string::npos, o.record_shapes);
  EXPECT_EQ(text.find("[memory]") != std::string::npos, o.profile_memory);
  EXPECT_EQ(text.find("Call stack") != std::string::npos, o.with_stack);
  EXPECT_EQ(text.find("\"flops\"") != std::string::npos, o.with_flops);
}

INSTANTIATE_TEST_SUITE_P(Options, AllCombinations, ::testing::Range(0, 16),
                         [](const ::testing::TestParamInfo<int>& info) {
                           const int b = info.param;
                           std::string n;
                           n += b & 1 ? "shapes_" : "";
                           n += b & 2 ? "memory_" : "";
                           n += b & 4 ? "stack_" : "";
                           n += b & 8 ? "flops_" : "";
                           return n.empty() ? std::string("none") : n.substr(0, n.size() - 1);
                         });

}  // namespace
}  // namespace ptprof
