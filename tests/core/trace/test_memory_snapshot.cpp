// CUDA memory snapshots (issue 28 section 5): the pickle reader on what Python's pickle and
// libtorch's pickler write, the typed snapshot, the replay of its trace (the numbers of the
// scenario in fixtures/memory_snapshot/make_snapshots.py), the command and the page, and bad
// input, which must be an error naming what is wrong.
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "ptprof/error.h"
#include "ptprof/memory_snapshot.h"
#include "test_support.h"
#include "trace/pickle_reader.h"

namespace ptprof {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kT0 = 1'733'000'000'000'000;  // the scenario's clock origin, us

std::string fixture(const std::string& name) {
  return std::string(PTPROF_SOURCE_DIR) + "/tests/core/trace/fixtures/memory_snapshot/" + name;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The error parse() gives for `bytes`; "" if it read them.
std::string parse_error(const std::string& bytes) {
  try {
    MemorySnapshot::parse(bytes, "t.pickle");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// A protocol-2 pickle of the given opcodes.
std::string pickle(const std::string& body) {
  return std::string("\x80\x02", 2) + body + ".";
}
// BINUNICODE of s; BININT1 of n.
std::string str(const std::string& s) {
  const uint32_t n = static_cast<uint32_t>(s.size());
  return "X" + std::string(reinterpret_cast<const char*>(&n), 4) + s;
}
std::string small(int n) {
  return "K" + std::string(1, static_cast<char>(n));
}

// ---- the reader -------------------------------------------------------------------------

TEST(PickleReader, ReadsLibtorchsPicklerWithTypeTagsAndMemo) {
  // torch._C._pickle_save's data.pkl: restore_type_tag around each dict and list, strings
  // memoized (BINGET), 64-bit ints as LONG1.
  auto doc = detail::read_pickle(read_all(fixture("torch_typed.pickle")));
  ASSERT_TRUE(doc.ok()) << doc.status().message();
  const detail::PickleNode* segments = (*doc)->root()->get("segments");
  ASSERT_NE(segments, nullptr);
  ASSERT_EQ(segments->items.size(), 2u);
  EXPECT_EQ(segments->items[0]->get("address")->i, 0x7F0000000000);
  EXPECT_EQ(segments->items[1]->get("address")->i, 0x7F0010000000);
  EXPECT_EQ(segments->items[1]->get("stream")->i, 7);  // its key is a BINGET of the first's
}

TEST(PickleReader, IntegersOfEveryWidth) {
  // BININT1, BININT2, BININT (negative), LONG1 of 8 bytes, and 2^64-1 (9 bytes) as a double.
  const std::string body = std::string("(K\x07M\x34\x12J\xfe\xff\xff\xff\x8a\x08", 13) +
                           std::string("\x00\x00\x00\x00\x00\x00\x00\x80", 8) +
                           std::string("\x8a\x09\xff\xff\xff\xff\xff\xff\xff\xff\x00", 11) + "l";
  auto doc = detail::read_pickle(pickle(body));
  ASSERT_TRUE(doc.ok()) << doc.status().message();
  const auto& items = (*doc)->root()->items;
  ASSERT_EQ(items.size(), 5u);
  EXPECT_EQ(items[0]->i, 7);
  EXPECT_EQ(items[1]->i, 0x1234);
  EXPECT_EQ(items[2]->i, -2);
  EXPECT_EQ(items[3]->i, INT64_MIN);
  EXPECT_EQ(items[4]->kind, detail::PickleNode::Kind::kFloat);
  EXPECT_DOUBLE_EQ(items[4]->f, 18446744073709551615.0);
}

TEST(PickleReader, BadInputIsAnErrorNamingTheByteAndTheProblem) {
  auto error = [](const std::string& bytes) {
    auto doc = detail::read_pickle(bytes);
    return doc.ok() ? std::string() : doc.status().message();
  };
  EXPECT_EQ(error(pickle("h\x05")), "byte 2: memo index 5 was never stored");
  EXPECT_EQ(error(pickle("](K\x01K\x02u")), "byte 8: SETITEMS on a value that is not a dict");
  EXPECT_EQ(error(pickle(std::string("X\xff\x00\x00\x00" "ab", 7))),
            "byte 2: BINUNICODE of 255 bytes, 3 left");
  EXPECT_EQ(error(pickle("I12\n")), "byte 2: opcode 'I' of pickle protocol 0 or 1 (2 to 5 are read)");
  EXPECT_EQ(error(pickle("cos\nsystem\n" + str("ls") + "\x85R")),
            "byte 21: REDUCE of os.system, which a memory snapshot does not hold");
  EXPECT_EQ(error(pickle("K\x01K\x02")), "byte 6: STOP with 2 values on the stack and 0 open marks "
                                           "(expected one value)");
  EXPECT_EQ(error(std::string("\x80\x02K\x01", 4)), "byte 4: the pickle ends without its STOP opcode");
  EXPECT_EQ(error(std::string("\x80\x09N.", 4)), "byte 0: pickle protocol 9 (2 to 5 are read)");
  EXPECT_EQ(error(pickle("\xff")), "byte 2: unknown opcode 0xff");
  EXPECT_EQ(error(pickle("a")), "byte 2: APPEND on an empty stack");
  EXPECT_EQ(error(pickle("(t(e")), "byte 5: APPENDS on a value that is not a list");
}

TEST(PickleReader, EveryPrefixOfASnapshotIsAnErrorNeverACrash) {
  const std::string bytes = read_all(fixture("snapshot_p4.pickle"));
  ASSERT_GT(bytes.size(), 1000u);
  for (std::size_t n = 0; n < bytes.size() - 1; ++n) {
    auto doc = detail::read_pickle(bytes.substr(0, n));
    if (doc.ok()) continue;  // a prefix may end at a STOP only at the end
    EXPECT_EQ(doc.status().message().rfind("byte ", 0), 0u) << n;
  }
}

// ---- the snapshot -------------------------------------------------------------------------

TEST(MemorySnapshot, ReadsTheSameSnapshotFromEveryPickleProtocol) {
  for (int p : {2, 3, 4, 5}) {
    SCOPED_TRACE("protocol " + std::to_string(p));
    const MemorySnapshot s = MemorySnapshot::load(fixture("snapshot_p" + std::to_string(p) + ".pickle"));
    ASSERT_EQ(s.segments.size(), 3u);
    const MemorySegment& a = s.segments[0];
    EXPECT_EQ(a.device, 0);
    EXPECT_EQ(a.address, 0x7F0000000000u);
    EXPECT_EQ(a.total_size, 20 * kMiB);
    EXPECT_TRUE(a.large);
    ASSERT_EQ(a.blocks.size(), 4u);
    EXPECT_EQ(a.blocks[2].address, 0x7F0000000000u + 12 * kMiB);
    EXPECT_EQ(a.blocks[2].state, MemoryBlockState::kActiveAllocated);
    EXPECT_EQ(a.blocks[1].state, MemoryBlockState::kInactive);
    EXPECT_FALSE(s.segments[1].large);
    EXPECT_EQ(s.segments[1].stream, 7);
    ASSERT_EQ(s.device_traces.size(), 2u);
    ASSERT_EQ(s.device_traces[0].size(), 13u);
    EXPECT_TRUE(s.device_traces[1].empty());
    const MemoryTraceEntry& oom = s.device_traces[0][10];
    EXPECT_EQ(oom.action, MemoryAction::kOom);
    EXPECT_EQ(oom.size, 64 * kMiB);
    EXPECT_EQ(oom.device_free, kMiB);
    EXPECT_EQ(oom.time_us, kT0 + 1600);
    // Five distinct stacks; a list the pickle shares (the memo) is one stack.
    EXPECT_EQ(s.stacks.size(), 5u);
    EXPECT_EQ(a.stack, a.blocks[0].stack);
    ASSERT_GE(a.stack, 0);
    EXPECT_EQ(s.stacks[a.stack][1].name, "build_model");
    EXPECT_EQ(s.stacks[a.stack][1].filename, "train.cpp");
    EXPECT_EQ(s.stacks[a.stack][1].line, 10);
    EXPECT_EQ(a.blocks[1].stack, -1);  // "frames": []
  }
}

TEST(MemorySnapshot, ReadsLibtorchsPicklerOutput) {
  const MemorySnapshot s = MemorySnapshot::load(fixture("torch_typed.pickle"));
  ASSERT_EQ(s.segments.size(), 2u);
  EXPECT_EQ(s.segments[0].allocated_size, 10 * kMiB);
  EXPECT_TRUE(s.device_traces.empty());
  const MemorySnapshotSummary sum = summarize(s);
  ASSERT_EQ(sum.devices.size(), 1u);
  EXPECT_EQ(sum.devices[0].reserved, 22 * kMiB);
  EXPECT_EQ(sum.devices[0].trace_entries, 0u);
}

TEST(MemorySnapshot, WrongContentIsAnErrorNamingTheField) {
  EXPECT_EQ(parse_error(""), "ptprof: t.pickle: empty file: not a CUDA memory snapshot");
  EXPECT_EQ(parse_error("{\"traceEvents\": []}"),
            "ptprof: t.pickle: not a pickle (a memory snapshot starts with byte 0x80)");
  EXPECT_EQ(parse_error(pickle("]")),
            "ptprof: t.pickle: the pickle holds a list, not a snapshot's dict (segments, device_traces)");
  EXPECT_EQ(parse_error(pickle("}")), "ptprof: t.pickle: no \"segments\" key: not a CUDA memory snapshot");
  // {"segments": [{"device": 0, "address": 1}]}
  const std::string seg = "}(" + str("segments") + "](}(" + str("device") + small(0) +
                          str("address") + small(1);
  EXPECT_EQ(parse_error(pickle(seg + "ueu")), "ptprof: t.pickle: segments[0]: no \"total_size\" key");
  const std::string neg = seg + str("total_size") + std::string("J\xff\xff\xff\xff", 5) + "ueu";
  EXPECT_EQ(parse_error(pickle(neg)),
            "ptprof: t.pickle: segments[0].total_size: size -1 is not a byte count");
  // A damaged pickle: the reader's message, with the file's name.
  EXPECT_EQ(parse_error(pickle("h\x05")), "ptprof: t.pickle: bad pickle: byte 2: memo index 5 was never stored");
  EXPECT_THROW(MemorySnapshot::load("/nonexistent/snapshot.pickle"), Error);
}

TEST(MemorySnapshot, ASharedListCannotBlowUpWhatIsBuilt) {
  // "segments" is a list of 255 references to one segment whose blocks list holds 255
  // references to one block: 65k blocks from a pickle of about 1 KB.
  std::string body = "}(" + str("segments") + "](";
  body += "}(" + str("device") + small(0) + str("address") + small(0) + str("total_size") +
          small(1) + str("blocks") + "](";
  body += "}(" + str("size") + small(1) + "uq\x01";
  for (int k = 0; k < 254; ++k) body += "h\x01";
  body += "euq\x02";
  for (int k = 0; k < 254; ++k) body += "h\x02";
  body += "eu";
  const std::string message = parse_error(pickle(body));
  EXPECT_NE(message.find("more entries than a file of its size holds"), std::string::npos) << message;
}

// ---- the analysis -------------------------------------------------------------------------

TEST(MemorySnapshotSummary, ReplaysTheTraceAsMemoryVizDoes) {
  const MemorySnapshot s = MemorySnapshot::load(fixture("snapshot_p5.pickle"));
  const MemorySnapshotSummary sum = summarize(s);
  ASSERT_EQ(sum.devices.size(), 2u);
  const MemoryDeviceSummary& d = sum.devices[0];
  EXPECT_EQ(d.reserved, 22 * kMiB);
  EXPECT_EQ(d.allocated, 10 * kMiB);
  EXPECT_EQ(d.largest_free_block, 6 * kMiB);
  // Before the trace: the 8 MiB block it never allocates and the 3 MiB it frees.
  EXPECT_EQ(d.start_bytes, 11 * kMiB);
  // One point per alloc and per free; a free_completed after its free_requested is not a second.
  ASSERT_EQ(d.timeline.size(), 6u);
  const int64_t expected[] = {15, 17, 18, 14, 13, 10};
  for (std::size_t k = 0; k < 6; ++k) EXPECT_EQ(d.timeline[k].bytes, expected[k] * kMiB) << k;
  EXPECT_EQ(d.timeline.back().bytes, d.allocated);  // the replay ends where the state is
  EXPECT_EQ(d.peak_bytes, 18 * kMiB);
  EXPECT_EQ(d.peak_time_us, kT0 + 1200);
  EXPECT_EQ(d.live_at_peak_count, 5);
  ASSERT_EQ(d.peak_by_stack.size(), 5u);
  EXPECT_EQ(d.peak_by_stack[0].bytes, 8 * kMiB);
  EXPECT_EQ(s.stacks[d.peak_by_stack[0].stack][1].name, "build_model");
  EXPECT_EQ(d.peak_by_stack[2].bytes, 3 * kMiB);
  EXPECT_EQ(d.peak_by_stack[2].stack, -1);  // freed in the trace, no stack recorded
  ASSERT_EQ(d.streams.size(), 2u);
  EXPECT_EQ(d.streams[0].stream, 0);
  EXPECT_EQ(d.streams[0].peak_bytes, 17 * kMiB);
  EXPECT_EQ(d.streams[1].stream, 7);
  EXPECT_EQ(d.streams[1].peak_bytes, kMiB);
  ASSERT_GE(d.largest.size(), 3u);
  EXPECT_EQ(d.largest[0].size, 8 * kMiB);
  EXPECT_EQ(d.largest[0].alloc_time_us, -1);
  EXPECT_EQ(d.largest[1].size, 4 * kMiB);
  EXPECT_EQ(d.largest[1].alloc_time_us, kT0 + 1000);
  EXPECT_EQ(d.largest[1].free_time_us, kT0 + 1300);
  // Segments by unallocated bytes: A has 10 MiB free in two blocks, B 2 MiB.
  ASSERT_EQ(d.segments.size(), 2u);
  EXPECT_EQ(d.segments[0].total_size - d.segments[0].allocated_size, 10 * kMiB);
  EXPECT_EQ(d.segments[0].free_blocks, 2);
  EXPECT_EQ(d.segments[0].largest_free_block, 6 * kMiB);
  // The OOM: what was asked, what CUDA had, and the allocator's totals then (a 4 MiB segment
  // it released after the OOM was still reserved).
  ASSERT_EQ(d.ooms.size(), 1u);
  EXPECT_EQ(d.ooms[0].requested, 64 * kMiB);
  EXPECT_EQ(d.ooms[0].device_free, kMiB);
  EXPECT_EQ(d.ooms[0].allocated, 10 * kMiB);
  EXPECT_EQ(d.ooms[0].reserved, 26 * kMiB);
  EXPECT_EQ(s.stacks[d.ooms[0].stack][1].name, "big_matmul");

  const MemoryDeviceSummary& d1 = sum.devices[1];  // no trace: the state alone
  EXPECT_EQ(d1.device, 1);
  EXPECT_EQ(d1.trace_entries, 0u);
  EXPECT_EQ(d1.start_bytes, kMiB);
  EXPECT_EQ(d1.peak_bytes, kMiB);
  EXPECT_TRUE(d1.timeline.empty());
}

TEST(MemorySnapshotSummary, TextAndJsonSayWhatWasAskedAndWhere) {
  const MemorySnapshot s = MemorySnapshot::load(fixture("snapshot_p4.pickle"));
  const MemorySnapshotSummary sum = summarize(s);
  const std::string text = sum.text(s);
  EXPECT_NE(text.find("Peak allocated: 18.00 MiB at 0.200 ms, 5 allocations live"), std::string::npos) << text;
  EXPECT_NE(text.find("Out of memory at 0.600 ms: asked 64.00 MiB on stream 0; CUDA had 1.00 MiB "
                      "free; the allocator held 26.00 MiB reserved, 10.00 MiB allocated  "
                      "big_matmul (train.cpp:10)"),
            std::string::npos)
      << text;
  // The allocator's own frames are left out of where an allocation was made.
  EXPECT_NE(text.find("4.00 MiB in 1  forward (train.cpp:10)"), std::string::npos) << text;
  EXPECT_NE(text.find("No trace: the allocator's history was not recorded"), std::string::npos);
  const auto j = nlohmann::json::parse(sum.json(s));
  ASSERT_EQ(j["devices"].size(), 2u);
  EXPECT_EQ(j["devices"][0]["peak_bytes"], 18 * kMiB);
  EXPECT_EQ(j["devices"][0]["ooms"][0]["reserved"], 26 * kMiB);
  EXPECT_EQ(j["devices"][0]["ooms"][0]["stack"][0], "big_matmul (train.cpp:10)");
  EXPECT_TRUE(j["devices"][0]["largest"][0]["alloc_time_us"].is_null());
}

TEST(MemorySnapshotSummary, PageIsWellFormedAndSelfContained) {
  const MemorySnapshot s = MemorySnapshot::load(fixture("snapshot_p4.pickle"));
  test::TempDir dir;
  const std::string path = dir.path() + "/snap.html";
  summarize(s).save_html(s, path, "snapshot_p4.pickle");
  const std::string html = read_all(path);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("http"), std::string::npos);  // nothing loaded from anywhere
  EXPECT_NE(html.find("<path class=\"allocated\""), std::string::npos);
  EXPECT_NE(html.find("<path class=\"stream2\""), std::string::npos);  // two streams
  EXPECT_NE(html.find("<line class=\"marker\""), std::string::npos);  // the OOM
  EXPECT_NE(html.find("data-testid=\"ooms\""), std::string::npos);
  EXPECT_NE(html.find("big_matmul (train.cpp:10)"), std::string::npos);
}

// A snapshot libtorch_cuda itself wrote on a GPU (scripts/gpu-check keeps one as
// tests/gpu/fixtures/<device>/memory_snapshot.pickle): read, with its trace and stacks.
TEST(MemorySnapshot, ReadsTheSnapshotsRecordedOnAGpu) {
  const std::string root = std::string(PTPROF_SOURCE_DIR) + "/tests/gpu/fixtures";
  int seen = 0;
  for (const auto& dev : std::filesystem::directory_iterator(root)) {
    const std::string path = dev.path().string() + "/memory_snapshot.pickle";
    if (!std::filesystem::exists(path)) continue;
    ++seen;
    const MemorySnapshot s = MemorySnapshot::load(path);
    EXPECT_FALSE(s.segments.empty()) << path;
    ASSERT_FALSE(s.device_traces.empty()) << path;
    const MemorySnapshotSummary sum = summarize(s);
    ASSERT_FALSE(sum.devices.empty()) << path;
    EXPECT_GT(sum.devices[0].trace_entries, 0u) << path;
    EXPECT_GT(sum.devices[0].peak_bytes, 0) << path;
    EXPECT_FALSE(s.stacks.empty()) << path;
  }
  if (seen == 0) GTEST_SKIP() << "no GPU snapshot yet (scripts/gpu-check records one)";
}

TEST(MemorySnapshot, PathBesideATrace) {
  EXPECT_EQ(memory_snapshot_path_for_trace("/log/run/host_1.1700.pt.trace.json.gz"),
            "/log/run/host_1.1700.memory_snapshot.pickle");
  EXPECT_EQ(memory_snapshot_path_for_trace("w.pt.trace.json"), "w.memory_snapshot.pickle");
  EXPECT_EQ(memory_snapshot_path_for_trace("/a/trace.json"), "/a/trace.memory_snapshot.pickle");
  EXPECT_EQ(memory_snapshot_path_for_trace("/a/.json"), "/a/.json.memory_snapshot.pickle");
}

// ---- the command --------------------------------------------------------------------------

int run(const std::string& command) {
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(MemorySnapshotCommand, PrintsTheSummaryTheJsonAndWritesThePage) {
  const std::string cli = PTPROF_CLI;
  if (::access(cli.c_str(), X_OK) != 0) GTEST_SKIP() << "ptprof_cli not built: " << cli;
  test::TempDir dir;
  const std::string snap = fixture("snapshot_p2.pickle");
  ASSERT_EQ(run(cli + " memory " + snap + " > " + dir.path() + "/out.txt"), 0);
  EXPECT_NE(read_all(dir.path() + "/out.txt").find("Peak allocated: 18.00 MiB"), std::string::npos);
  ASSERT_EQ(run(cli + " memory --json " + snap + " > " + dir.path() + "/out.json"), 0);
  EXPECT_EQ(nlohmann::json::parse(read_all(dir.path() + "/out.json"))["devices"][0]["peak_bytes"],
            18 * kMiB);
  ASSERT_EQ(run(cli + " memory " + snap + " " + dir.path() + "/page.html"), 0);
  EXPECT_NE(read_all(dir.path() + "/page.html").find("CUDA memory snapshot"), std::string::npos);
  // A damaged snapshot is an input error (2), its message naming the file.
  const std::string bad = dir.path() + "/bad.pickle";
  std::ofstream(bad, std::ios::binary) << std::string("\x80\x02h\x05.", 5);
  ASSERT_EQ(run(cli + " memory " + bad + " 2> " + dir.path() + "/err.txt"), 2);
  EXPECT_EQ(read_all(dir.path() + "/err.txt"),
            "ptprof: " + bad + ": bad pickle: byte 2: memo index 5 was never stored\n");
}

}  // namespace
}  // namespace ptprof
