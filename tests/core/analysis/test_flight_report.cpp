// The cross-rank answer from flight recorder dumps (ptprof/flight_report.h): the rank the
// others wait for and what it is inside, the collective they wait in with its sequence number,
// crashed ranks, ranks that wrote no dump, a deadlock inside the collective, ranks that wait in
// nothing, each rank's last dump, and 1,024 ranks' dumps (read one at a time, digests only).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <csignal>
#include <filesystem>

#include "flight_builder.h"
#include "ptprof/error.h"
#include "ptprof/flight_report.h"
#include "test_support.h"

namespace ptprof {
namespace {

namespace fl = detail::flight;
using test::FlightBuilder;
using test::TempDir;

using test::kDump;
using test::kSec;

// A rank of a data-parallel job, dumped by its watchdog: it entered all-reduces up to `last`
// (group "0"); `waiting`: it is in the last one (its Gloo thread runs gloo:all_reduce), else its
// training thread is in `op` inside forward.
FlightBuilder rank_dump(int64_t rank, int64_t world, int64_t last, bool waiting,
                        const std::string& op = "aten::nonzero",
                        fl::Reason reason = fl::Reason::kHang) {
  FlightBuilder b(rank, world, reason, kDump + rank);
  const int main = b.thread(100 + rank, "trainer");
  const int gloo = b.thread(200 + rank, "pt_gloo_runloop");
  b.step(last, kDump - 5 * kSec);
  for (int64_t s = last - 2; s <= last; ++s) {
    const int64_t at = kDump - (last - s + 2) * kSec;
    b.collective(main, "c10d::allreduce_", "0", s, at, at + 1000);
    b.collective(gloo, "gloo:all_reduce", "", -1, at + 2000,
                 waiting && s == last ? 0 : at + 5000);
  }
  b.open_step(main, last + 1, kDump - 5 * kSec);
  if (waiting) {
    b.open(main, "DistributedDataParallel.allreduce_gradients", kDump - 2 * kSec, true);
    b.open(gloo, "gloo:all_reduce", kDump - 2 * kSec + 2000, true, fl::kCollective | fl::kAsync);
  } else {
    b.open(main, "forward", kDump - 4 * kSec, true);
    b.open(main, op, kDump - 3 * kSec);
  }
  return b;
}

void write(const std::string& dir, const FlightBuilder& b, const std::string& suffix = "1") {
  const auto& d = const_cast<FlightBuilder&>(b).dump();
  test::write_file(dir + "/" + d.worker + "." + suffix + ".ptflight", b.bytes());
}

TEST(FlightReport, NamesTheRankTheOthersWaitForAndTheCollective) {
  TempDir dir;
  // Rank 3 never reached all-reduce #1812: it is stuck in aten::nonzero inside forward.
  for (int64_t r = 0; r < 8; ++r)
    write(dir.path(), r == 3 ? rank_dump(r, 8, 1811, false) : rank_dump(r, 8, 1812, true));
  const FlightReport rep = flight_report(dir.path());
  EXPECT_EQ(rep.verdict,
            "rank 3 is stuck in aten::nonzero inside forward; ranks 0-2 and 4-7 wait in "
            "allreduce #1812 for it");
  EXPECT_EQ(rep.world_size, 8);
  EXPECT_EQ(rep.waiting_in.seq, 1812);
  EXPECT_EQ(rep.waiting_in.group, "0");
  EXPECT_EQ(rep.not_entered, std::vector<int64_t>{3});
  EXPECT_EQ(rep.waiting_ranks, (std::vector<int64_t>{0, 1, 2, 4, 5, 6, 7}));
  EXPECT_TRUE(rep.missing_ranks.empty());
  ASSERT_EQ(rep.ranks.size(), 8u);
  const FlightRank& r3 = rep.ranks[3];
  EXPECT_EQ(r3.last_collective()->seq, 1811);
  const FlightThreadState* t = r3.main_thread();
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->name, "trainer");
  ASSERT_EQ(t->open.size(), 3u);  // innermost first, with how long each had been open
  EXPECT_EQ(t->open[0].name, "aten::nonzero");
  EXPECT_EQ(t->open[0].open_ns, 3 * kSec + 3);
  EXPECT_EQ(t->open[2].name, "ProfilerStep#1812");
  EXPECT_EQ(rep.ranks[0].since_step_ns, 5 * kSec);
  // The text names them too, with the times; the JSON parses and says the same.
  const std::string s = rep.summary();
  EXPECT_NE(s.find("verdict: rank 3 is stuck"), std::string::npos) << s;
  EXPECT_NE(s.find("aten::nonzero 3.000 s < forward 4.000 s < ProfilerStep#1812 5.000 s"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("last collective: allreduce #1811 (c10d::allreduce_, group 0)"),
            std::string::npos)
      << s;
  const auto j = nlohmann::json::parse(rep.to_json());
  EXPECT_EQ(j["verdict"], rep.verdict);
  EXPECT_EQ(j["waiting_in"]["seq"], 1812);
  EXPECT_EQ(j["not_entered"], nlohmann::json::array({3}));
  EXPECT_EQ(j["ranks"].size(), 8u);
  EXPECT_EQ(j["ranks"][3]["position"], "aten::nonzero inside forward");
}

TEST(FlightReport, ACrashedRankAndOneWithoutADumpAreNamed) {
  TempDir dir;
  FlightBuilder crashed = rank_dump(1, 4, 9, false, "faulting_op", fl::Reason::kCrash);
  crashed.header().signal = SIGSEGV;
  crashed.header().dump_tid = 101;
  crashed.message("SIGSEGV at 0x0");
  write(dir.path(), crashed);
  write(dir.path(), rank_dump(0, 4, 10, true));
  write(dir.path(), rank_dump(3, 4, 10, true));
  const FlightReport rep = flight_report(dir.path());
  EXPECT_EQ(rep.verdict,
            "rank 1 crashed with SIGSEGV in faulting_op inside forward; rank 2 wrote no dump; "
            "ranks 0 and 3 wait in allreduce #10 for them");
  EXPECT_EQ(rep.missing_ranks, std::vector<int64_t>{2});
  ASSERT_EQ(rep.ranks.size(), 3u);
  ASSERT_NE(rep.ranks[1].main_thread(), nullptr);
  EXPECT_TRUE(rep.ranks[1].main_thread()->crashed);
  EXPECT_NE(rep.summary().find("SIGKILL"), std::string::npos);
}

TEST(FlightReport, EveryRankInTheCollectiveIsADeadlockInsideIt) {
  TempDir dir;
  for (int64_t r = 0; r < 3; ++r) write(dir.path(), rank_dump(r, 3, 4, true));
  EXPECT_EQ(flight_report(dir.path()).verdict,
            "every rank waits in allreduce #4: all entered it and none finished (the collective "
            "itself, its transport or a device is stuck)");
}

TEST(FlightReport, RanksThatWaitInNothingAreToldByWhereTheyAre) {
  TempDir dir;
  for (int64_t r = 0; r < 4; ++r)
    write(dir.path(), rank_dump(r, 4, 6, false, r == 2 ? "aten::item" : "aten::mm",
                                fl::Reason::kSignal));
  EXPECT_EQ(flight_report(dir.path()).verdict,
            "no rank waits in a collective (the last, allreduce #6, is done): ranks 0-1 and 3 "
            "are in aten::mm inside forward; rank 2 is in aten::item inside forward");
}

TEST(FlightReport, EachRanksLastDumpIsTheOneDescribed) {
  TempDir dir;
  // Rank 0 dumped twice: first on request while it waited, then when the watchdog fired.
  FlightBuilder early = rank_dump(0, 2, 3, true, "", fl::Reason::kApi);
  early.header().dump_unix_ns = early.header().dump_ticks = kDump - 10 * kSec;
  write(dir.path(), early, "0");
  write(dir.path(), rank_dump(0, 2, 5, true), "1");
  write(dir.path(), rank_dump(1, 2, 4, false));
  const FlightReport rep = flight_report(dir.path());
  ASSERT_EQ(rep.ranks.size(), 2u);
  EXPECT_EQ(rep.ranks[0].dumps, 2);
  EXPECT_EQ(rep.ranks[0].reason, "hang");
  EXPECT_EQ(rep.verdict, "rank 1 is stuck in aten::nonzero inside forward; rank 0 waits in "
                         "allreduce #5 for it");
}

TEST(FlightReport, ADirectoryWithoutDumpsOrWithUnreadableOnesIsAnError) {
  TempDir dir;
  auto error = [&]() -> std::string {
    try {
      flight_report(dir.path());
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(error().find("no flight recorder dump"), std::string::npos);
  EXPECT_FALSE(has_flight_dumps(dir.path()));
  test::write_file(dir.path() + "/w.1.ptflight", "PTFLIGHT but not much more");
  EXPECT_TRUE(has_flight_dumps(dir.path()));
  const std::string e = error();
  EXPECT_NE(e.find("w.1.ptflight"), std::string::npos) << e;
  EXPECT_NE(e.find("truncated"), std::string::npos) << e;
}

// 1,024 ranks, as a job of that size leaves them: rank 777 stuck, the others in the
// collective. The answer comes from each dump's digest; their rings (200 records per thread
// here) are skipped unread. Speed is scripts/bench flight's to measure.
TEST(FlightReport, OneThousandTwentyFourRanks) {
  TempDir dir;
  for (int64_t r = 0; r < 1024; ++r) {
    FlightBuilder b = r == 777 ? rank_dump(r, 1024, 99, false) : rank_dump(r, 1024, 100, true);
    for (int i = 0; i < 200; ++i) b.done(0, "aten::add", kDump - 9 * kSec + i, kDump - 8 * kSec);
    write(dir.path(), b);
  }
  const FlightReport rep = flight_report(dir.path());
  EXPECT_EQ(rep.verdict,
            "rank 777 is stuck in aten::nonzero inside forward; ranks 0-776 and 778-1023 wait "
            "in allreduce #100 for it");
  EXPECT_EQ(rep.ranks.size(), 1024u);
  EXPECT_TRUE(rep.ranks[5].threads.size() == 2);
  // The text shows the rank that stands out and a few others, not a thousand.
  const std::string s = rep.summary();
  EXPECT_NE(s.find("rank 777: hang"), std::string::npos);
  EXPECT_NE(s.find("not shown (--json lists every rank)"), std::string::npos);
  EXPECT_LT(s.size(), 8000u);
}

}  // namespace
}  // namespace ptprof
