// The flight recorder's raw dump (src/trace/flight_dump): written and read back record for
// record; its digest read without its rings; records torn by a writer left out and counted;
// malformed files refused with the file, the byte offset and the reason; and the dump as a
// trace every consumer reads (open ops unfinished at the dump, the window, steps, collectives
// with their sequence numbers, why it was written), also through read_trace and the directory
// listing that merge and report use.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>

#include "flight_builder.h"
#include "ptprof/error.h"
#include "test_support.h"
#include "trace/flight_dump.h"
#include "trace/trace_files.h"
#include "trace/trace_reader.h"

namespace ptprof {
namespace {

namespace fl = detail::flight;
using test::FlightBuilder;
using test::TempDir;

using test::kDump;
using test::kSec;

// A rank in a hang: its training thread in a range inside forward inside step 12, its Gloo
// thread in an all-reduce, a few finished ops in its ring.
FlightBuilder hung_rank() {
  FlightBuilder b(2, 4, fl::Reason::kHang, kDump);
  const int main = b.thread(100, "trainer");
  const int gloo = b.thread(101, "pt_gloo_runloop");
  b.step(11, kDump - 5 * kSec);
  b.done(main, "aten::mm", kDump - 7 * kSec, kDump - 6 * kSec, 2);
  b.done(main, "aten::relu", kDump - 5 * kSec - 900, kDump - 5 * kSec - 100, 2);
  b.done(gloo, "gloo:all_reduce", kDump - 5 * kSec - 300, kDump - 5 * kSec - 200, 0, true,
         fl::kCollective | fl::kAsync);
  b.open_step(main, 12, kDump - 5 * kSec);
  b.open(main, "forward", kDump - 4 * kSec, true);
  b.open(main, "aten::nonzero", kDump - 3 * kSec);
  b.collective(main, "c10d::allreduce_", "0", 41, kDump - 5 * kSec - 400, kDump - 5 * kSec - 350);
  return b;
}

TEST(FlightDump, WrittenAndReadBackRecordForRecord) {
  FlightBuilder b = hung_rank();
  b.message("no step() for 5.0 s");
  const std::string bytes = b.bytes();
  const detail::FlightDump d = detail::parse_flight_dump(bytes, "mem");
  EXPECT_EQ(d.header.reason, static_cast<uint32_t>(fl::Reason::kHang));
  EXPECT_EQ(d.header.rank, 2);
  EXPECT_EQ(d.worker, "host_1002_rank2");
  EXPECT_EQ(d.message, "no step() for 5.0 s");
  ASSERT_EQ(d.threads.size(), 2u);
  EXPECT_EQ(d.threads[0].name, "trainer");
  ASSERT_EQ(d.threads[0].open.size(), 3u);
  EXPECT_EQ(d.op_name(d.threads[0].open[0]), "ProfilerStep#12");
  EXPECT_EQ(d.op_name(d.threads[0].open[2]), "aten::nonzero");
  ASSERT_EQ(d.threads[0].records.size(), 2u);
  EXPECT_EQ(d.op_name(d.threads[0].records[1]), "aten::relu");
  ASSERT_EQ(d.collectives.size(), 1u);
  EXPECT_EQ(static_cast<int64_t>(d.collectives[0].w[fl::kAux]), 41);
  EXPECT_EQ(d.torn, 0u);
  EXPECT_TRUE(d.has_rings);
  // Written again, the same bytes.
  EXPECT_EQ(detail::flight_dump_bytes(d), bytes);
}

TEST(FlightDump, TheDigestIsReadWithoutTheRings) {
  TempDir dir;
  const std::string path = dir.path() + "/w.1.ptflight";
  std::string bytes = hung_rank().bytes();
  // Cut inside the rings: the digest is whole, the rings are not.
  bytes.resize(bytes.size() - 10);
  test::write_file(path, bytes);
  const detail::FlightDump digest = detail::read_flight_dump(path, /*rings=*/false);
  EXPECT_FALSE(digest.has_rings);
  EXPECT_TRUE(digest.threads[0].records.empty());
  EXPECT_EQ(digest.threads[0].open.size(), 3u);
  try {
    detail::read_flight_dump(path, /*rings=*/true);
    FAIL() << "a dump cut inside its rings was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("the rings"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
  }
}

TEST(FlightDump, RecordsBeingWrittenAreLeftOutAndCounted) {
  FlightBuilder b = hung_rank();
  auto& main = b.dump().threads[0];
  // A ring record caught mid-write (its end version odd), one whose versions differ (written
  // again while copied), and a stack entry caught as it was pushed.
  main.records[0].w[fl::kEndSeq] |= 1;
  main.records[1].w[fl::kBegin] += 2;
  main.open[1].w[fl::kEndSeq] += 1;
  const detail::FlightDump d = detail::parse_flight_dump(b.bytes(), "mem");
  EXPECT_EQ(d.torn, 3u);
  EXPECT_TRUE(d.threads[0].records.empty());
  ASSERT_EQ(d.threads[0].open.size(), 2u);
  EXPECT_EQ(d.op_name(d.threads[0].open[1]), "aten::nonzero");
}

TEST(FlightDump, AStackEntryIsTakenOnlyAtItsOwnDepth) {
  FlightBuilder b = hung_rank();
  const std::string bytes = b.bytes();
  // The second entry of the first thread's stack, rewritten to claim depth 5 (an entry copied
  // as it was popped and another pushed at another depth).
  const std::size_t at = sizeof(fl::FileHeader) + b.dump().name_ends.size() * 4 +
                         b.dump().name_bytes.size() + sizeof(fl::ThreadHeader) +
                         sizeof(fl::Record) + fl::kBits * 8;
  std::string bad = bytes;
  const uint64_t bits = fl::pack_bits(5, fl::kUserScope, 0, 100);
  std::memcpy(bad.data() + at, &bits, 8);
  const detail::FlightDump d = detail::parse_flight_dump(bad, "mem");
  EXPECT_EQ(d.torn, 1u);
  ASSERT_EQ(d.threads[0].open.size(), 2u);
  EXPECT_EQ(d.op_name(d.threads[0].open[1]), "aten::nonzero");
}

TEST(FlightDump, RingRecordsComeOutOldestFirstWhateverTheirSlot) {
  FlightBuilder b(0, 1, fl::Reason::kApi, kDump);
  const int t = b.thread(7, "t");
  for (int i = 0; i < 5; ++i) b.done(t, "op" + std::to_string(i), kDump - 100 + i, kDump - 50 + i);
  // A ring of 3 that has taken 5 records: slots hold records 3, 4, 2.
  auto& recs = b.dump().threads[0].records;
  recs.erase(recs.begin(), recs.begin() + 2);
  b.header().ring_capacity = 3;
  const detail::FlightDump d = detail::parse_flight_dump(b.bytes(), "mem");
  ASSERT_EQ(d.threads[0].records.size(), 3u);
  EXPECT_EQ(d.op_name(d.threads[0].records[0]), "op2");
  EXPECT_EQ(d.op_name(d.threads[0].records[2]), "op4");
}

std::string parse_error(const std::string& bytes) {
  try {
    detail::parse_flight_dump(bytes, "dump.ptflight");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(FlightDump, MalformedDumpsAreRefusedNamingWhatIsWrong) {
  const std::string good = hung_rank().bytes();
  EXPECT_NE(parse_error("").find("ends inside the header"), std::string::npos);
  std::string bad = good;
  bad[0] = 'X';
  EXPECT_NE(parse_error(bad).find("no PTFLIGHT magic"), std::string::npos) << parse_error(bad);
  bad = good;
  bad[8] = 9;  // version
  EXPECT_NE(parse_error(bad).find("format version 9"), std::string::npos) << parse_error(bad);
  // A name count no file of this size holds is refused before anything is allocated.
  fl::FileHeader h;
  std::memcpy(&h, good.data(), sizeof(h));
  h.n_names = fl::kMaxNames;
  bad = good;
  std::memcpy(bad.data(), &h, sizeof(h));
  const std::string e = parse_error(bad);
  EXPECT_NE(e.find("do not fit"), std::string::npos) << e;
  EXPECT_NE(e.find("dump.ptflight"), std::string::npos) << e;
  EXPECT_NE(e.find("at byte " + std::to_string(sizeof(fl::FileHeader))), std::string::npos) << e;
  h.n_names = fl::kMaxNames + 1;
  std::memcpy(bad.data(), &h, sizeof(h));
  EXPECT_NE(parse_error(bad).find("more than any dump has"), std::string::npos);
  // Name offsets out of order.
  std::memcpy(&h, good.data(), sizeof(h));
  bad = good;
  const uint32_t huge = 0xFFFFFF;
  std::memcpy(bad.data() + sizeof(h), &huge, 4);
  EXPECT_NE(parse_error(bad).find("name table offsets"), std::string::npos) << parse_error(bad);
}

TEST(FlightDump, TicksOfTheTimeStampCounterAreConvertedByTheHeadersLine) {
  FlightBuilder b(0, 1, fl::Reason::kApi, 0);
  auto& h = b.header();
  h.ticks_are_tsc = 1;
  h.tick0 = 1000;
  h.ns0 = 5000;
  h.tick1 = 3000;  // 2 ticks per ns
  h.ns1 = 6000;
  h.unix_offset_ns = kDump;
  const detail::FlightDump d = detail::parse_flight_dump(b.bytes(), "mem");
  EXPECT_EQ(d.unix_ns(1000), kDump + 5000);
  EXPECT_EQ(d.unix_ns(5000), kDump + 7000);
  h.tick1 = h.tick0;  // no slope to be had: ticks taken as ns
  EXPECT_EQ(detail::parse_flight_dump(b.bytes(), "mem").unix_ns(1010), kDump + 5010);
}

const Event* find(const Trace& t, const std::string& name) {
  for (const Event& e : t.events)
    if (e.name == name) return &e;
  return nullptr;
}

TEST(FlightDump, AsATraceOpenOpsAreUnfinishedAtTheDumpAndNested) {
  FlightBuilder b = hung_rank();
  b.header().window_ns = 6 * kSec;  // aten::mm ended 6 s before: kept; anything older is not
  b.done(0, "aten::old", kDump - 9 * kSec, kDump - 8 * kSec);
  const Trace t = detail::flight_trace(detail::parse_flight_dump(b.bytes(), "mem"));
  EXPECT_EQ(find(t, "aten::old"), nullptr);
  const Event* mm = find(t, "aten::mm");
  ASSERT_NE(mm, nullptr);
  EXPECT_TRUE(mm->finished);
  EXPECT_EQ(mm->duration_ns, kSec);
  const Event* nz = find(t, "aten::nonzero");
  ASSERT_NE(nz, nullptr);
  EXPECT_FALSE(nz->finished);
  EXPECT_EQ(nz->duration_ns, 3 * kSec);
  ASSERT_GE(nz->parent, 0);
  EXPECT_EQ(t.events[static_cast<std::size_t>(nz->parent)].name, "forward");
  const Event* step = find(t, "ProfilerStep#12");
  ASSERT_NE(step, nullptr);
  EXPECT_EQ(step->kind, EventKind::UserAnnotation);
  EXPECT_EQ(t.steps, std::vector<int64_t>{12});
  EXPECT_EQ(t.window_end_ns, kDump);
  EXPECT_EQ(t.window_start_ns, kDump - 7 * kSec);
  EXPECT_EQ(t.threads.size(), 2u);
  // Why it was written, and the rank.
  const auto digest = nlohmann::json::parse(t.metadata.at("ptprof_flight"));
  EXPECT_EQ(digest["reason"], "hang");
  EXPECT_EQ(digest["position"], "aten::nonzero inside forward");
  EXPECT_EQ(nlohmann::json::parse(t.metadata.at("distributedInfo"))["rank"], 2);
}

TEST(FlightDump, AsATraceCollectivesCarryTheirGroupAndSequenceNumber) {
  FlightBuilder b(0, 2, fl::Reason::kApi, kDump);
  const int main = b.thread(1, "main");
  auto& r = b.done(main, "c10d::allreduce_", kDump - 100, kDump - 50, 0, false, fl::kCollective);
  r.w[fl::kAux] = 7;
  r.w[fl::kNames] = fl::pack_names(fl::name_of(r), b.name("0"));
  const Trace t = detail::flight_trace(detail::parse_flight_dump(b.bytes(), "mem"));
  const Event* e = find(t, "c10d::allreduce_");
  ASSERT_NE(e, nullptr);
  ASSERT_GE(e->collective, 0);
  const CollectiveInfo& c = t.collectives[static_cast<std::size_t>(e->collective)];
  EXPECT_EQ(c.name, "allreduce");
  EXPECT_EQ(c.seq, 7);
  EXPECT_EQ(c.pg_name, "0");
}

TEST(FlightDump, AnOpBothEndedAndOpenInALiveSnapshotIsTakenOnce) {
  FlightBuilder b(0, 1, fl::Reason::kApi, kDump);
  const int t = b.thread(1, "main");
  auto& open = b.open(t, "aten::add", kDump - 10);
  auto& ended = b.done(t, "aten::add", kDump - 10, kDump - 5);
  ended.w[fl::kCorrelation] = open.w[fl::kCorrelation];
  const Trace tr = detail::flight_trace(detail::parse_flight_dump(b.bytes(), "mem"));
  ASSERT_EQ(tr.events.size(), 1u);
  EXPECT_TRUE(tr.events[0].finished);
}

TEST(FlightDump, ARawDumpReadsAsATraceAndStandsForItInItsDirectory) {
  TempDir dir;
  const std::string crash = dir.path() + "/host_1_rank0.100.ptflight";
  test::write_file(crash, hung_rank().bytes());
  const std::string hang = dir.path() + "/host_1_rank0.50.ptflight";
  test::write_file(hang, hung_rank().bytes());
  detail::flight_trace(detail::read_flight_dump(hang)).save(detail::flight_trace_path(hang));
  EXPECT_EQ(detail::flight_trace_path(hang), dir.path() + "/host_1_rank0.50.pt.trace.json.gz");
  // The crash's dump has no trace: listed itself; the hang's is listed by its trace.
  EXPECT_EQ(detail::trace_files_in(dir.path()),
            (std::vector<std::string>{crash, detail::flight_trace_path(hang)}));
  const Trace t = detail::read_trace(crash);
  EXPECT_NE(find(t, "aten::nonzero"), nullptr);
  const Trace again = detail::read_trace(detail::flight_trace_path(hang));
  EXPECT_EQ(again.events.size(), t.events.size());
  const Event* nz = find(again, "aten::nonzero");
  ASSERT_NE(nz, nullptr);
  EXPECT_FALSE(nz->finished);  // written as "finished": false and read back
  EXPECT_EQ(again.metadata.count("ptprof_flight"), 1u);
}

}  // namespace
}  // namespace ptprof
