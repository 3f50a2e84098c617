// with_stack: capture (against libgcc's unwinder, inside libtorch ops, on threads, bounded,
// without allocating, and its cost), symbolization (names, statics, module+offset fallback),
// collapsed stacks, the SVG flame graph and Trace::export_stacks.
#include <ATen/record_function.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <link.h>
#include <sys/mman.h>
#include <torch/torch.h>
#include <ucontext.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "ptprof/error.h"
#include "ptprof/trace.h"
#include "recording/stack_capture.h"
#include "recording/symbolizer.h"
#include "test_util.h"
#include "trace/stacks_export.h"
#include "xml_check.h"

using namespace ptprof::detail;

// ---- Allocation counting: malloc of this executable interposes the process's (it is
// exported because the shared libraries linked in reference it), so operator new, std::string
// and libtorch's allocations on a counting thread are all seen. Not under sanitizers, which
// interpose malloc themselves.
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define PTPROF_TEST_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define PTPROF_TEST_SANITIZED 1
#endif
#if defined(__SANITIZE_THREAD__)
#define PTPROF_TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define PTPROF_TEST_TSAN 1
#endif
#endif

#ifdef PTPROF_TEST_SANITIZED
#define PTPROF_TEST_COUNT_MALLOC 0
#else
#define PTPROF_TEST_COUNT_MALLOC 1
extern "C" void* __libc_malloc(size_t size);
namespace {
thread_local bool t_counting = false;
thread_local long t_allocations = 0;
}  // namespace
extern "C" void* malloc(size_t size) noexcept {
  if (t_counting) ++t_allocations;
  return __libc_malloc(size);
}
#endif

namespace stacks_test {

// A real call chain; the asm after each call keeps it from being a tail call (which would
// drop the caller's frame).
__attribute__((noinline)) int capture_here(void** out, int max) {
  const int n = capture_stack(out, max);
  asm volatile("" ::: "memory");
  return n;
}
__attribute__((noinline)) int middle(void** out, int max) {
  const int n = capture_here(out, max);
  asm volatile("" ::: "memory");
  return n;
}
__attribute__((noinline)) int outer(void** out, int max) {
  const int n = middle(out, max);
  asm volatile("" ::: "memory");
  return n;
}

// Both unwinders from one frame: their first frames differ (two call sites), the rest must not.
struct Both {
  void* fast[256];
  void* ref[256];
  int nfast = 0;
  int nref = 0;
};
__attribute__((noinline)) void capture_both(Both& b, int max) {
  b.nfast = capture_stack(b.fast, max);
  b.nref = capture_stack_reference(b.ref, max);
  asm volatile("" ::: "memory");
}

::testing::AssertionResult same_stack(const Both& b) {
  if (b.nfast != b.nref)
    return ::testing::AssertionFailure() << "depth " << b.nfast << " vs reference " << b.nref;
  if (b.nfast < 2) return ::testing::AssertionFailure() << "depth only " << b.nfast;
  for (int i = 1; i < b.nfast; ++i)
    if (b.fast[i] != b.ref[i])
      return ::testing::AssertionFailure()
             << "frame " << i << ": " << b.fast[i] << " vs " << b.ref[i];
  return ::testing::AssertionSuccess();
}

__attribute__((noinline)) void recurse(int depth, const std::function<void()>& f) {
  if (depth <= 0) {
    f();
  } else {
    recurse(depth - 1, f);
  }
  asm volatile("" ::: "memory");
}

// Distinct code per N (the store keeps identical-code folding from merging them), so
// concurrent threads meet uncached addresses at the same time.
volatile int g_deep_sink = 0;
template <int N>
__attribute__((noinline)) void deep(int depth, Both& b) {
  if (depth <= 0) {
    capture_both(b, 256);
  } else {
    deep<N>(depth - 1, b);
  }
  g_deep_sink = N;
}

// Nested "ops": each has an owner in its frame (as an op's RecordFunction lives in the frame
// that runs it), captures its stack through the memo and through the plain unwinder
// from one frame, then runs its children from several call sites and frame sizes.
struct Nest {
  StackMemo* memo = nullptr;
  int max = 0;
  uint64_t next_id = 1;
  std::vector<uint64_t> open;
  int checks = 0;
  std::string failure;
};

__attribute__((noinline)) void nested_capture_both(Both& b, int max, StackMemo* memo,
                                                   const NestedOp& op) {
  b.nfast = capture_stack_nested(b.fast, max, memo, op);
  b.nref = capture_stack(b.ref, max);
  asm volatile("" ::: "memory");
}

__attribute__((noinline)) void nest_op(Nest& n, int depth_left);

__attribute__((noinline)) void nest_child_padded(Nest& n, int depth_left) {
  volatile char pad[200];
  pad[0] = 1;
  nest_op(n, depth_left);
  asm volatile("" ::: "memory");
}

__attribute__((noinline)) void nest_op(Nest& n, int depth_left) {
  NestedOp op;
  // The frame's own address stands for an op's RecordFunction in it (a local array would move
  // to AddressSanitizer's fake stack under detect_stack_use_after_return, off the thread's
  // stack, where nothing is shared).
  op.level = static_cast<uint32_t>(n.open.size());
  op.parent_id = n.open.empty() ? 0 : n.open.back();
  op.id = n.next_id++;
  op.owner = __builtin_frame_address(0);
  Both b;
  nested_capture_both(b, n.max, n.memo, op);
  ++n.checks;
  if (const auto same = same_stack(b); !same && n.failure.empty())
    n.failure = "level " + std::to_string(op.level) + ", max " + std::to_string(n.max) + ": " +
                same.message();
  if (depth_left == 0) return;
  n.open.push_back(op.id);
  nest_op(n, depth_left - 1);                                // a direct child
  nest_child_padded(n, depth_left - 1);                      // another frame size
  recurse(depth_left, [&] { nest_op(n, depth_left - 1); });  // deeper, through std::function
  nest_op(n, depth_left - 1);                                // a sibling from another site
  n.open.pop_back();
  asm volatile("" ::: "memory");
}

// A frame that takes its registers and has the capture made from them one call deeper, next
// to a plain capture there: the one from `from` starts two frames up, at this frame's caller.
__attribute__((noinline)) void capture_from_callee(Both& b, int max, const UnwindStart& from,
                                                   StackMemo* memo, const NestedOp& op) {
  b.nfast = capture_stack_nested(b.fast, max, memo, op, &from);
  b.nref = capture_stack(b.ref, max);
  asm volatile("" ::: "memory");
}

__attribute__((noinline)) void capture_from_here(Both& b, int max, StackMemo* memo,
                                                 const NestedOp& op) {
  UnwindStart here;
  unwind_start_here(&here);
  capture_from_callee(b, max, here, memo, op);
  asm volatile("" ::: "memory");
}

}  // namespace stacks_test

namespace {

using stacks_test::Both;

// Internal linkage: only in the executable's .symtab, never in its dynamic symbols. The
// counter keeps its body unlike capture_here's (identical functions get folded into one).
volatile int g_static_calls = 0;
__attribute__((noinline)) int static_capture(void** out, int max) {
  const int n = capture_stack(out, max);
  g_static_calls = g_static_calls + 1;
  return n;
}

const char kRodata[] = "a string in .rodata, which no function symbol covers";

std::string hex(uintptr_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%lx", static_cast<unsigned long>(v));
  return buf;
}

// A RecordFunction callback for one op name, running `fn` at its entry.
class OpHook {
 public:
  OpHook(std::string op, std::function<void()> fn) {
    op_() = std::move(op);
    fn_() = std::move(fn);
    handle_ = at::addGlobalCallback(
        at::RecordFunctionCallback(&OpHook::enter).scopes({at::RecordScope::FUNCTION}));
  }
  ~OpHook() { at::removeCallback(handle_); }

 private:
  static std::unique_ptr<at::ObserverContext> enter(const at::RecordFunction& f) {
    if (op_() == f.name()) fn_()();
    return nullptr;
  }
  static std::string& op_() {
    static std::string s;
    return s;
  }
  static std::function<void()>& fn_() {
    static std::function<void()> f;
    return f;
  }
  at::CallbackHandle handle_;
};

// A nested op's stack through the memo is the one the unwinder gives, frame for frame, at
// every level, for stacks shorter and longer than the depth (a parent cut at max depth, then
// unwound on from its last frame), and most captures take their parent's frames.
TEST(CaptureStack, NestedTakesTheParentsFramesExactly) {
  for (const int max : {256, 40, 12, 5}) {
    StackMemo* memo = new_stack_memo(max);
    ASSERT_NE(memo, nullptr);
    stacks_test::Nest n;
    n.memo = memo;
    n.max = max;
    const uint64_t shared_before = shared_stack_captures_on_this_thread();
    stacks_test::recurse(3, [&] { stacks_test::nest_op(n, 4); });
    const uint64_t shared = shared_stack_captures_on_this_thread() - shared_before;
    delete_stack_memo(memo);
    EXPECT_TRUE(n.failure.empty()) << n.failure;
    EXPECT_EQ(n.checks, 1 + 4 + 16 + 64 + 256);
#ifdef __x86_64__
    // Every op but the outermost has a parent; those whose stack meets the parent's within
    // `max` frames take its frames.
    if (max >= 40) EXPECT_EQ(shared, static_cast<uint64_t>(n.checks - 1)) << "max " << max;
    if (max < 40) EXPECT_GT(shared, 0u) << "max " << max;
#endif
  }
}

// Without a memo, or with an unknown parent, a nested capture is a plain one.
TEST(CaptureStack, NestedWithoutMemoOrParentIsPlain) {
  NestedOp op;
  op.level = 3;
  op.parent_id = 77;
  op.id = 78;
  int local = 0;
  op.owner = &local;
  for (StackMemo* memo : {static_cast<StackMemo*>(nullptr), new_stack_memo(64)}) {
    Both b;
    stacks_test::nested_capture_both(b, 64, memo, op);
    EXPECT_TRUE(stacks_test::same_stack(b));
    delete_stack_memo(memo);
  }
}

// on_enter's path: the unwind starts from the registers of a frame further up, and what it
// returns is the plain capture's frames from that frame's caller on, memo or not, with as
// many frames as asked for.
TEST(CaptureStack, FromACallersRegistersStartsAtItsCaller) {
#ifndef __x86_64__
  GTEST_SKIP() << "unwind_start_here takes registers on x86-64 only";
#endif
  for (const int max : {64, 5}) {
    StackMemo* memo = new_stack_memo(64);
    for (StackMemo* m : {static_cast<StackMemo*>(nullptr), memo}) {
      NestedOp op;
      op.id = 5;
      Both b;
      stacks_test::capture_from_here(b, max, m, op);
      ASSERT_GT(b.nref, 4);
      // A plain capture cut at `max` holds two frames fewer of the same stack.
      EXPECT_EQ(b.nfast, b.nref < max ? b.nref - 2 : max) << "max " << max;
      for (int i = 0; i < std::min(b.nfast, b.nref - 2); ++i)
        EXPECT_EQ(b.fast[i], b.ref[i + 2]) << "frame " << i << ", max " << max;
    }
    delete_stack_memo(memo);
  }
}

// The fast unwinder's own frames: a capture that fell back to _Unwind_Backtrace would match
// the reference trivially, so the fallback count must not move.
TEST(CaptureStack, MatchesLibgccUnwinder) {
  const StackCaptureStats before = stack_capture_stats();
  Both b;
  stacks_test::capture_both(b, 256);
  EXPECT_TRUE(stacks_test::same_stack(b));
  EXPECT_GT(b.nfast, 3);
  EXPECT_EQ(stack_capture_stats().fallbacks, before.fallbacks);
  EXPECT_EQ(stack_capture_stats().unsupported, before.unsupported);
}

TEST(CaptureStack, InsideLibtorchOpsMatchesLibgccUnwinder) {
  Both b;
  int hits = 0;
  bool all_same = true;
  OpHook hook("aten::mul", [&] {
    stacks_test::capture_both(b, 256);
    all_same = all_same && stacks_test::same_stack(b);
    ++hits;
  });
  // Forward on this thread, the backward's aten::mul (MulBackward0), and another thread.
  auto x = torch::ones({4}, torch::requires_grad());
  auto y = (x * 3).sum();
  EXPECT_TRUE(all_same);
  y.backward();
  EXPECT_TRUE(all_same);
  std::thread([&] { torch::ones({2}) * 2; }).join();
  EXPECT_TRUE(all_same);
  EXPECT_GE(hits, 3);
  EXPECT_EQ(stack_capture_stats().unsupported, 0u);
}

TEST(CaptureStack, DepthIsBounded) {
  // One callable for both captures: their frames then differ only below the recursion (two
  // lambdas would differ at frame 1 wherever the compiler keeps their frames, as -O1 does).
  Both b, full;
  Both* into = &b;
  int max = 10;
  const std::function<void()> capture = [&] { stacks_test::capture_both(*into, max); };
  stacks_test::recurse(60, capture);
  EXPECT_EQ(b.nfast, 10);
  EXPECT_EQ(b.nref, 10);
  EXPECT_TRUE(stacks_test::same_stack(b));
  // One more than kept tells a cut stack from an exact one.
  into = &full;
  max = 256;
  stacks_test::recurse(60, capture);
  EXPECT_GT(full.nfast, 60);
  EXPECT_TRUE(std::equal(b.fast + 1, b.fast + 10, full.fast + 1));
  void* one[1];
  EXPECT_EQ(capture_stack(one, 0), 0);
  EXPECT_EQ(capture_stack(one, 1), 1);
}

// Run alone (as ctest runs each case), the threads meet these functions' addresses uncached
// and insert their rules concurrently.
TEST(CaptureStack, ConcurrentThreadsWithColdCache) {
  const uint64_t fallbacks_before = stack_capture_stats().fallbacks;
  const uint64_t unsupported_before = stack_capture_stats().unsupported;
  std::atomic<int> bad{0};
  auto work = [&bad](auto fn) {
    return std::thread([&bad, fn] {
      for (int i = 0; i < 50; ++i) {
        Both b;
        fn(i % 7 + 20, b);
        if (!stacks_test::same_stack(b)) ++bad;
      }
    });
  };
  std::vector<std::thread> threads;
  threads.push_back(work([](int d, Both& b) { stacks_test::deep<1>(d, b); }));
  threads.push_back(work([](int d, Both& b) { stacks_test::deep<2>(d, b); }));
  threads.push_back(work([](int d, Both& b) { stacks_test::deep<3>(d, b); }));
  threads.push_back(work([](int d, Both& b) { stacks_test::deep<1>(d, b); }));
  for (auto& t : threads) t.join();
  EXPECT_EQ(bad.load(), 0);
  // Every capture was the fast unwinder's (a fallback would match the reference trivially).
  EXPECT_EQ(stack_capture_stats().fallbacks, fallbacks_before);
  EXPECT_EQ(stack_capture_stats().unsupported, unsupported_before);
}

// A stack the thread's pthread bounds do not cover (as with fibers or sigaltstack): the
// capture falls back to _Unwind_Backtrace and still returns the frames.
ucontext_t g_main_ctx, g_fiber_ctx;
Both* g_fiber_result = nullptr;
void fiber_main() {
  stacks_test::capture_both(*g_fiber_result, 64);
  swapcontext(&g_fiber_ctx, &g_main_ctx);
}

TEST(CaptureStack, ForeignStackFallsBack) {
#ifdef PTPROF_TEST_TSAN
  GTEST_SKIP() << "ThreadSanitizer does not follow swapcontext";
#endif
  std::vector<char> fiber_stack(256 * 1024);
  Both b;
  g_fiber_result = &b;
  ASSERT_EQ(getcontext(&g_fiber_ctx), 0);
  g_fiber_ctx.uc_stack.ss_sp = fiber_stack.data();
  g_fiber_ctx.uc_stack.ss_size = fiber_stack.size();
  g_fiber_ctx.uc_link = &g_main_ctx;
  makecontext(&g_fiber_ctx, fiber_main, 0);
  const auto fallbacks = stack_capture_stats().fallbacks;
  ASSERT_EQ(swapcontext(&g_main_ctx, &g_fiber_ctx), 0);
  EXPECT_EQ(stack_capture_stats().fallbacks, fallbacks + 1);
  EXPECT_TRUE(stacks_test::same_stack(b));
  Symbolizer s;
  EXPECT_EQ(s.symbolize(b.fast[0]), "stacks_test::capture_both");
  EXPECT_EQ(s.symbolize(b.fast[1]), "(anonymous namespace)::fiber_main");
}

TEST(CaptureStack, DoesNotAllocateOnceWarm) {
#if PTPROF_TEST_COUNT_MALLOC
  // The counter sees allocations made inside libstdc++ (else this test proves nothing).
  t_counting = true;
  delete new std::string(100, 'x');
  t_counting = false;
  ASSERT_GT(t_allocations, 0) << "malloc interposition does not work here";

  void* frames[64];
  long during = 0;
  OpHook hook("aten::add", [&] {
    t_allocations = 0;
    t_counting = true;
    for (int i = 0; i < 100; ++i) stacks_test::capture_here(frames, 64);
    t_counting = false;
    during += t_allocations;
  });
  auto x = torch::ones({4});
  x + x;  // warm-up: the first capture here computes and caches rules
  during = 0;
  for (int i = 0; i < 10; ++i) x + x;
  EXPECT_EQ(during, 0);
#else
  GTEST_SKIP() << "malloc is the sanitizer's here";
#endif
}

// The cost inside a libtorch op call at about the depth the issue asks about (32 frames),
// against _Unwind_Backtrace measured in the same run; the best of several batches, so a busy
// machine does not decide. Only the ratio is asserted: an absolute bound failed under ASan on
// a loaded CI machine (3.0 us against 2 us, while the reference took 10.1 us); the absolute
// figure is scripts/bench's (bench_overhead, with_stack).
TEST(CaptureStack, CostPerCaptureAtDepth32) {
  void* frames[64];
  int depth = 0;
  auto batch_ns = [&](bool fast) {
    double best = 1e18;
    for (int round = 0; round < 5; ++round) {
      int64_t total = 0;
      int count = 0;
      OpHook hook("aten::add", [&] {
        const auto t0 = std::chrono::steady_clock::now();
        depth = fast ? capture_stack(frames, 32) : capture_stack_reference(frames, 32);
        total += std::chrono::duration_cast<std::chrono::nanoseconds>(
                     std::chrono::steady_clock::now() - t0)
                     .count();
        ++count;
      });
      auto x = torch::ones({2});
      // Pad the stack so the op's entry sits at depth >= 32.
      stacks_test::recurse(16, [&] {
        for (int i = 0; i < (fast ? 2000 : 200); ++i) x + x;
      });
      best = std::min(best, static_cast<double>(total) / count);
    }
    return best;
  };
  const double fast = batch_ns(true);
  const int fast_depth = depth;
  const double ref = batch_ns(false);
  std::printf("capture_stack: %.0f ns per capture of %d frames; _Unwind_Backtrace: %.0f ns\n", fast,
              fast_depth, ref);
  EXPECT_EQ(fast_depth, 32);
  EXPECT_LT(fast, ref) << "capture_stack is the fast path; _Unwind_Backtrace the fallback";
}

TEST(Symbolizer, NamesFunctionsOfTheCallChain) {
  void* frames[64];
  const int n = stacks_test::outer(frames, 64);
  ASSERT_GE(n, 4);
  Symbolizer s;
  // The first frame is capture_stack's caller. These functions are not exported from the
  // test executable: their names come from its .symtab.
  EXPECT_EQ(s.symbolize(frames[0]), "stacks_test::capture_here");
  EXPECT_EQ(s.symbolize(frames[1]), "stacks_test::middle");
  EXPECT_EQ(s.symbolize(frames[2]), "stacks_test::outer");
  EXPECT_EQ(s.symbolize(frames[3]),
            "(anonymous namespace)::Symbolizer_NamesFunctionsOfTheCallChain_Test::TestBody");
  EXPECT_EQ(s.frame(reinterpret_cast<uint64_t>(frames[1])), "stacks_test::middle");
  // Internal linkage.
  ASSERT_GE(static_capture(frames, 64), 1);
  EXPECT_EQ(s.symbolize(frames[0]), "(anonymous namespace)::static_capture");
}

TEST(Symbolizer, FramesInsideLibtorch) {
  Symbolizer s;
  void* frames[64];
  std::vector<std::string> names;
  OpHook hook("aten::mul", [&] {
    const int n = stacks_test::capture_here(frames, 64);
    names = s.symbolize(frames, n);
  });
  torch::ones({2}) * 2;
  ASSERT_FALSE(names.empty());
  auto has = [&](const std::string& prefix) {
    return std::any_of(names.begin(), names.end(),
                       [&](const std::string& f) { return f.rfind(prefix, 0) == 0; });
  };
  // libtorch's exported functions (dladdr), demangled, without parameter lists, in order.
  EXPECT_EQ(names[0], "stacks_test::capture_here");
  EXPECT_TRUE(has("at::_ops::mul_Scalar::call")) << ::testing::PrintToString(names);
  EXPECT_TRUE(has("c10::Dispatcher::")) << ::testing::PrintToString(names);
  EXPECT_TRUE(has("(anonymous namespace)::OpHook::enter")) << ::testing::PrintToString(names);
  EXPECT_FALSE(has("_Z")) << ::testing::PrintToString(names);
  EXPECT_TRUE(has("(anonymous namespace)::Symbolizer_FramesInsideLibtorch_Test::TestBody"));
}

TEST(Symbolizer, LocalClassInAFunction) {
  // A member function of a class local to a function of an anonymous namespace.
  struct Local {
    __attribute__((noinline)) static int run(void** out) {
      const int n = static_capture(out, 8);
      asm volatile("" ::: "memory");
      return n;
    }
  };
  void* frames[8];
  ASSERT_GE(Local::run(frames), 2);
  Symbolizer s;
  EXPECT_EQ(s.symbolize(frames[0]), "(anonymous namespace)::static_capture");
  EXPECT_EQ(s.symbolize(frames[1]),
            "(anonymous namespace)::Symbolizer_LocalClassInAFunction_Test::TestBody()::"
            "Local::run");
}

TEST(Symbolizer, UnsymbolizableAddressesShowModuleAndOffset) {
  Symbolizer s;
  // Inside this executable but in data no function symbol covers: module basename + offset
  // from its load bias (what addr2line -e takes).
  const auto addr = reinterpret_cast<uintptr_t>(kRodata + 8);
  Dl_info info;
  link_map* lm = nullptr;
  ASSERT_NE(
      dladdr1(reinterpret_cast<void*>(addr), &info, reinterpret_cast<void**>(&lm), RTLD_DL_LINKMAP),
      0);
  char self[4096];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
  ASSERT_GT(n, 0);
  const std::string path(self, static_cast<std::size_t>(n));
  const std::string exe = path.substr(path.rfind('/') + 1);  // this test binary's name
  EXPECT_EQ(s.symbolize(reinterpret_cast<void*>(addr)), exe + "+" + hex(addr - lm->l_addr));
  // Outside any module: an anonymous mapping.
  void* page = mmap(nullptr, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(page, MAP_FAILED);
  const auto anon = reinterpret_cast<uintptr_t>(page) + 0x40;
  EXPECT_EQ(s.symbolize(reinterpret_cast<void*>(anon)), hex(anon));
  munmap(page, 4096);
  EXPECT_EQ(s.symbolize(nullptr), "0x0");
}

// Each address is named once per process: every Symbolizer (each session has one) shares the
// cache, so other tests here may have named some of these frames already.
TEST(Symbolizer, EachAddressOnce) {
  Symbolizer s;
  void* frames[16];
  const int n = stacks_test::outer(frames, 16);
  ASSERT_GE(n, 3);
  const std::size_t before = s.cached();
  const std::string a = s.symbolize(frames[0]);
  const std::size_t one = s.cached();
  EXPECT_LE(one, before + 1);
  EXPECT_EQ(s.symbolize(frames[0]), a);
  EXPECT_EQ(s.cached(), one);
  const std::vector<std::string> names = s.symbolize(frames, n);
  const std::size_t all = s.cached();
  EXPECT_LE(all, before + static_cast<std::size_t>(n));
  Symbolizer other;
  EXPECT_EQ(other.cached(), all);
  EXPECT_EQ(other.symbolize(frames, n), names);
  EXPECT_EQ(other.cached(), all);
}

TEST(SimplifyFunctionName, ReadableFrames) {
  EXPECT_EQ(simplify_function_name(
                "at::Tensor at::native::add(at::Tensor const&, at::Tensor const&, c10::Scalar "
                "const&)"),
            "at::native::add");
  EXPECT_EQ(simplify_function_name("main"), "main");
  EXPECT_EQ(simplify_function_name("foo(int) [clone .cold]"), "foo");
  EXPECT_EQ(simplify_function_name("foo(int) [clone .constprop.0] [clone .isra.0]"), "foo");
  EXPECT_EQ(simplify_function_name("Foo::operator()(int) const"), "Foo::operator()");
  EXPECT_EQ(simplify_function_name("c10::Scalar::operator double() const"),
            "c10::Scalar::operator double");
  EXPECT_EQ(simplify_function_name("bool operator<(A const&, B const&)"), "operator<");
  EXPECT_EQ(simplify_function_name(
                "std::ostream& std::operator<< <std::char_traits<char> >(std::ostream&, char "
                "const*)"),
            "std::operator<< <std::char_traits<char> >");
  EXPECT_EQ(simplify_function_name("(anonymous namespace)::helper(int)"),
            "(anonymous namespace)::helper");
  EXPECT_EQ(simplify_function_name("void* operator new(unsigned long)"), "operator new");
  EXPECT_EQ(simplify_function_name("Foo::bar() const::{lambda(int)#1}::operator()(int) const"),
            "Foo::bar() const::{lambda(int)#1}::operator()");
  EXPECT_EQ(simplify_function_name("at::Tensor& at::native::(anonymous namespace)::f<float>(int)"),
            "at::native::(anonymous namespace)::f<float>");
  // Long template argument lists collapse; namespaces and the function name stay.
  const std::string long_name =
      "void c10::function_ref<void (char**, long const*, long, long)>::callback_fn<at::native::"
      "(anonymous namespace)::cpu_kernel_vec<at::native::AVX2::add_kernel(at::TensorIteratorBase&"
      ", c10::Scalar const&)::{lambda()#1}::operator()() const::{lambda(float, float)#1}>(long, "
      "char**, long const*, long, long)";
  EXPECT_EQ(simplify_function_name(long_name), "c10::function_ref<...>::callback_fn<...>");
}

// ---- collapsed stacks ------------------------------------------------------------------------

ptprof::Event op(ptprof::Trace& t, const std::string& name, int64_t self_ns, int32_t stack,
                 uint64_t external_id = 0) {
  ptprof::Event e;
  e.kind = ptprof::EventKind::CpuOp;
  e.name = t.intern(name);
  e.self_ns = self_ns;
  e.duration_ns = self_ns;
  e.stack = stack;
  e.external_id = external_id;
  return e;
}

ptprof::Trace sample_trace() {
  ptprof::Trace t;
  t.stacks.push_back({"main", "train step", "Model::forward"});
  t.stacks.push_back({"a;b", "tab\there", "new\nline"});
  t.events.push_back(op(t, "aten::addmm", 5500, 0, 7));
  t.events.push_back(op(t, "aten::addmm", 2600, 0, 8));  // same stack: merged
  t.events.push_back(op(t, "aten::mul", 1000000, 1, 9));
  t.events.push_back(op(t, "aten::relu", 90000, -1, 10));  // no stack
  t.events.push_back(op(t, "aten::view", 0, 0));           // no value
  t.events.push_back(op(t, "aten::add", 400, 1));          // < 1 us
  auto gpu = [&](ptprof::EventKind kind, uint64_t ext, int64_t ns) {
    ptprof::Event e;
    e.kind = kind;
    e.name = t.intern("kernel");
    e.external_id = ext;
    e.duration_ns = ns;
    t.events.push_back(e);
  };
  gpu(ptprof::EventKind::Kernel, 7, 3000);
  gpu(ptprof::EventKind::Memcpy, 7, 2000);
  gpu(ptprof::EventKind::Kernel, 8, 1500);
  gpu(ptprof::EventKind::Kernel, 10, 9000);  // its op has no stack
  return t;
}

TEST(CollapsedStacks, SelfCpuTime) {
  const ptprof::Trace t = sample_trace();
  EXPECT_EQ(collapsed_stacks(t, "self_cpu_time_total"),
            "a_b;tab_here;new_line;aten::mul 1000\n"
            "main;train_step;Model::forward;aten::addmm 8\n");
}

TEST(CollapsedStacks, SelfCudaTimeFromKernelsOfTheOp) {
  const ptprof::Trace t = sample_trace();
  // addmm #7: 3000 + 2000 ns, addmm #8: 1500 ns -> 6 us.
  EXPECT_EQ(collapsed_stacks(t, "self_cuda_time_total"),
            "main;train_step;Model::forward;aten::addmm 6\n");
  EXPECT_EQ(collapsed_stacks(t, "self_device_time_total"),
            collapsed_stacks(t, "self_cuda_time_total"));
}

TEST(CollapsedStacks, UnknownMetricNamesTheValidOnes) {
  const ptprof::Trace t = sample_trace();
  try {
    collapsed_stacks(t, "cpu_time");
    FAIL() << "no error";
  } catch (const ptprof::Error& e) {
    EXPECT_NE(std::string(e.what()).find("self_cpu_time_total"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("self_cuda_time_total"), std::string::npos);
  }
}

// ---- SVG flame graph -------------------------------------------------------------------------

struct SvgFrame {
  std::string title;
  double x, y, width;
  std::string fill;
  std::string text;
};

std::vector<SvgFrame> svg_frames(const std::string& svg) {
  static const std::regex re(
      "<g class=\"frame\"><title>([^<]*)</title><rect x=\"([0-9.]+)\" y=\"([0-9.]+)\" "
      "width=\"([0-9.]+)\" height=\"[0-9.]+\" fill=\"([^\"]+)\"[^>]*/>(?:<text[^>]*>([^<]*)</"
      "text>)?</g>");
  std::vector<SvgFrame> out;
  for (std::sregex_iterator it(svg.begin(), svg.end(), re), end; it != end; ++it) {
    const std::smatch& m = *it;
    out.push_back({m[1], std::stod(m[2]), std::stod(m[3]), std::stod(m[4]), m[5], m[6]});
  }
  return out;
}

int count(const std::string& s, const std::string& what) {
  int n = 0;
  for (auto p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

const SvgFrame* frame_titled(const std::vector<SvgFrame>& frames, const std::string& prefix) {
  for (const SvgFrame& f : frames)
    if (f.title.rfind(prefix, 0) == 0) return &f;
  return nullptr;
}

TEST(FlameGraph, FramesSizedByValueRootAtTheBottom) {
  const std::string svg =
      flamegraph_svg("main;foo;bar 30\nmain;foo;baz 10\nmain;qux 60\n", "my & <title>");
  EXPECT_EQ(ptprof::test::xml_problem(svg), "");
  const auto frames = svg_frames(svg);
  // all, main, foo, qux, bar, baz
  EXPECT_EQ(count(svg, "<rect"), 6);
  ASSERT_EQ(frames.size(), 6u);
  const SvgFrame* all = frame_titled(frames, "all ");
  const SvgFrame* main = frame_titled(frames, "main ");
  const SvgFrame* foo = frame_titled(frames, "foo ");
  const SvgFrame* bar = frame_titled(frames, "bar ");
  ASSERT_TRUE(all && main && foo && bar);
  EXPECT_EQ(foo->title, "foo (40 us, 40.00%)");
  EXPECT_NEAR(foo->width / all->width, 0.40, 0.001);
  EXPECT_NEAR(bar->width / all->width, 0.30, 0.001);
  EXPECT_NEAR(main->width, all->width, 0.01);
  // Widest at the bottom: each level 16 px above its parent.
  EXPECT_NEAR(all->y - main->y, 16, 0.01);
  EXPECT_NEAR(main->y - foo->y, 16, 0.01);
  EXPECT_NEAR(foo->y - bar->y, 16, 0.01);
  // Children start at their parent's left edge, in name order.
  EXPECT_NEAR(bar->x, foo->x, 0.01);
  EXPECT_LT(foo->x, frame_titled(frames, "qux ")->x);
  EXPECT_EQ(all->text, "all");
  EXPECT_NE(svg.find("my &amp; &lt;title&gt;"), std::string::npos);
  EXPECT_EQ(svg.find("<script"), std::string::npos);
}

TEST(FlameGraph, EscapesTextAndClipsLabels) {
  const std::string long_name(300, 'x');
  const std::string svg = flamegraph_svg(
      "operator<&>\"q\";tiny 1\noperator<&>\"q\";" + long_name + " 9\nbad\x01\xff 90\n", "t");
  EXPECT_EQ(ptprof::test::xml_problem(svg), "");
  EXPECT_NE(svg.find("operator&lt;&amp;&gt;&quot;q&quot; (10 us, 10.00%)"), std::string::npos);
  EXPECT_EQ(svg.find("operator<&"), std::string::npos);
  EXPECT_NE(svg.find("bad?\xef\xbf\xbd (90 us"), std::string::npos);  // control, invalid UTF-8
  const auto frames = svg_frames(svg);
  const SvgFrame* big = frame_titled(frames, long_name);
  ASSERT_TRUE(big);
  // The label fits its rect: 0.59 * 12 px per character, 3 px padding on each side.
  ASSERT_FALSE(big->text.empty());
  EXPECT_EQ(big->text.substr(big->text.size() - 2), "..");
  EXPECT_LE(big->text.size() * 0.59 * 12, big->width - 6 + 0.01);
  // 1 us of 100 is 11.8 px: drawn, but too narrow for a label.
  const SvgFrame* tiny = frame_titled(frames, "tiny ");
  ASSERT_TRUE(tiny);
  EXPECT_TRUE(tiny->text.empty());
}

// Frame names as a symbolizer or a trace read back can give them: every byte value, markup,
// CDATA ends, characters XML 1.0 forbids even as references (controls, U+FFFE, U+FFFF),
// invalid UTF-8, and random bytes. Each SVG, with each name drawn wide enough for a label
// (clipped too), must pass a real XML parser.
TEST(FlameGraph, WellFormedXmlForAnyFrameName) {
  std::vector<std::string> names = {"]]>",
                                    "a]]>b]]",
                                    "<![CDATA[x]]>",
                                    "quote\"apos'",
                                    "<&>",
                                    "&amp;",
                                    "&#0;",
                                    "&#xFFFE;",
                                    "&bogus",
                                    "<!--",
                                    "--",
                                    "-->",
                                    "<?xml version=\"1.0\"?>",
                                    "</svg>",
                                    "<script>x</script>",
                                    "x\" onload=\"y",
                                    std::string("nul\0byte", 8),
                                    "\x01\x02\x08\x0b\x0c\x0e\x1f\x7f",
                                    "cr\r\rcr",
                                    "\xef\xbf\xbe",
                                    "a\xef\xbf\xbf"
                                    "b",
                                    "\xef\xbf\xbd",
                                    "\xed\xa0\x80\xed\xbf\xbf",
                                    "\xf4\x90\x80\x80",
                                    "\xf5\x80\x80\x80",
                                    "\xc0\xaf\xc1\xbf",
                                    "\xe0\x80\xaf",
                                    "\xc3",
                                    "\xe2\x82",
                                    "\xff\xfe\xfd",
                                    "\xc2\x80\xc2\x9f",
                                    "\xef\xb7\x90",
                                    "\xf0\x9f\x94\xa5",
                                    "\xf4\x8f\xbf\xbf",
                                    "\xc2\xa0nbsp",
                                    "tab\tand\x85"};
  for (int c = 1; c < 256; ++c) names.push_back("byte" + std::string(1, static_cast<char>(c)));
  std::mt19937 rng(15);
  for (int i = 0; i < 200; ++i) {
    std::string s(1 + rng() % 24, '\0');
    for (char& c : s) c = static_cast<char>(rng());
    names.push_back(s);
  }
  std::vector<std::string> svgs;
  // Through export_stacks' path (collapsed_stacks maps ' ', ';', '\t', '\n' to '_').
  for (std::size_t i = 0; i < names.size(); i += 16) {
    ptprof::Trace t;
    for (std::size_t k = i; k < std::min(names.size(), i + 16); ++k) {
      t.stacks.push_back({"root", names[k], names[k] + names[k]});
      t.events.push_back(op(t, names[k], 40000 + static_cast<int64_t>(k),
                            static_cast<int32_t>(t.stacks.size() - 1)));
    }
    svgs.push_back(flamegraph_svg(collapsed_stacks(t, "self_cpu_time_total"), names[i]));
  }
  // Straight from collapsed text, one name per graph: wide (a full label) beside a narrow
  // sibling (a clipped one); the name is also the title.
  for (const std::string& n : names) {
    if (n.find_first_of(";\n") != std::string::npos) continue;
    svgs.push_back(flamegraph_svg("all;" + n + " 90\nall;" + n + n + n + n + " 9\n", n));
  }
  const std::vector<std::string> problems = ptprof::test::xml_problems(svgs);
  ASSERT_EQ(problems.size(), svgs.size());
  for (std::size_t i = 0; i < svgs.size(); ++i)
    EXPECT_EQ(problems[i], "") << "SVG " << i << ":\n" << svgs[i].substr(0, 2000);
  // Escaped, not dropped.
  EXPECT_NE(flamegraph_svg("a]]>b 5\n", "t").find("a]]&gt;b (5 us"), std::string::npos);
}

TEST(FlameGraph, ColoursAreDeterministicAndNarrowFramesDropped) {
  const std::string a = flamegraph_svg("x;shared 5\ny;shared 5\nz 1000000\n", "t");
  EXPECT_EQ(a, flamegraph_svg("x;shared 5\ny;shared 5\nz 1000000\n", "t"));
  auto frames = svg_frames(a);
  // 5 us of ~1 s is 0.006 px: not drawn (nor anything above it).
  EXPECT_EQ(frames.size(), 2u);  // all, z
  frames = svg_frames(flamegraph_svg("x;shared 5\ny;shared 5\n", "t"));
  std::vector<std::string> fills;
  for (const SvgFrame& f : frames)
    if (f.title.rfind("shared ", 0) == 0) fills.push_back(f.fill);
  ASSERT_EQ(fills.size(), 2u);
  EXPECT_EQ(fills[0], fills[1]);
  EXPECT_EQ(ptprof::test::xml_problem(flamegraph_svg("", "empty")), "");
  EXPECT_EQ(count(flamegraph_svg("", "empty"), "<rect"), 0);
  EXPECT_EQ(count(flamegraph_svg("garbage\nno value x\n", "t"), "<rect"), 0);
}

// ---- Trace::export_stacks --------------------------------------------------------------------

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST(ExportStacks, CollapsedTextAndSvg) {
  ptprof::test::TempDir dir;
  const ptprof::Trace t = sample_trace();
  const std::string txt = dir.path() + "/stacks.txt";
  t.export_stacks(txt);
  EXPECT_EQ(read_file(txt), collapsed_stacks(t, "self_cpu_time_total"));
  const std::string cuda = dir.path() + "/cuda.txt";
  t.export_stacks(cuda, "self_cuda_time_total");
  EXPECT_EQ(read_file(cuda), "main;train_step;Model::forward;aten::addmm 6\n");
  const std::string svg = dir.path() + "/flame.svg";
  t.export_stacks(svg);
  const std::string s = read_file(svg);
  EXPECT_EQ(ptprof::test::xml_problem(s), "");
  EXPECT_NE(s.find("<svg"), std::string::npos);
  EXPECT_NE(s.find("aten::addmm (8 us"), std::string::npos);
  EXPECT_EQ(dir.files().size(), 3u);  // no temporary files left
}

TEST(ExportStacks, NeedsStacksAndAKnownMetric) {
  ptprof::test::TempDir dir;
  ptprof::Trace t;
  t.events.push_back(op(t, "aten::mm", 5000, -1));
  try {
    t.export_stacks(dir.path() + "/s.txt");
    FAIL() << "no error";
  } catch (const ptprof::Error& e) {
    EXPECT_NE(std::string(e.what()).find("with_stack"), std::string::npos) << e.what();
  }
  const ptprof::Trace s = sample_trace();
  EXPECT_THROW(s.export_stacks(dir.path() + "/s.txt", "self_tpu_time_total"), ptprof::Error);
  EXPECT_TRUE(dir.files().empty());
}

// End to end: real captures inside libtorch ops, symbolized, exported; the test's own
// function sits below the op.
__attribute__((noinline)) void forward_pass(torch::Tensor& x, torch::Tensor& w) {
  auto y = torch::mm(x, w);
  asm volatile("" ::: "memory");
}

TEST(ExportStacks, RealCapturesShowTheCaller) {
  std::vector<std::vector<void*>> captured;
  OpHook hook("aten::mm", [&] {
    void* frames[64];
    const int n = capture_stack(frames, 64);
    captured.emplace_back(frames, frames + n);
  });
  auto x = torch::ones({8, 8}), w = torch::ones({8, 8});
  forward_pass(x, w);
  ASSERT_EQ(captured.size(), 1u);
  ptprof::Trace t;
  Symbolizer s;
  std::vector<std::string> frames;
  for (auto it = captured[0].rbegin(); it != captured[0].rend(); ++it)
    frames.push_back(s.symbolize(*it));
  t.stacks.push_back(frames);
  t.events.push_back(op(t, "aten::mm", 12000, 0));
  const std::string text = collapsed_stacks(t, "self_cpu_time_total");
  const auto caller = text.find("(anonymous_namespace)::forward_pass;");
  const auto mm = text.find("at::_ops::mm::call;");
  EXPECT_NE(caller, std::string::npos) << text;
  EXPECT_NE(mm, std::string::npos) << text;
  EXPECT_LT(caller, mm);
  EXPECT_NE(text.find(";aten::mm 12\n"), std::string::npos) << text;
}

}  // namespace
