// flight_report (ptprof/flight_report.h): the ranks' flight recorder dumps side by side. Each
// dump's digest is read alone (its rings skipped) and reduced to its FlightRank before the next
// is opened, so a job of thousands of ranks needs the memory of their digests, not their dumps.
#include "ptprof/flight_report.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "ptprof/error.h"
#include "render/format.h"
#include "trace/flight_dump.h"
#include "trace/json_writer.h"

namespace ptprof {
namespace {

namespace fs = std::filesystem;
using detail::format_fixed;

constexpr char kDumpExtension[] = ".ptflight";

bool is_dump_name(const std::string& name) {
  constexpr std::size_t n = sizeof(kDumpExtension) - 1;
  return name.size() > n && name.compare(name.size() - n, n, kDumpExtension) == 0 &&
         name[0] != '.';
}

std::vector<std::string> dumps_in(const std::string& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_regular_file() && is_dump_name(e.path().filename().string()))
      files.push_back(e.path().string());
  if (ec) throw Error("ptprof: cannot list " + dir + ": " + ec.message());
  std::sort(files.begin(), files.end());
  return files;
}

// "_rank<R>" at the end of a worker name, as ptprof names the workers of a distributed job.
int64_t rank_from_worker(const std::string& worker) {
  const std::size_t at = worker.rfind("_rank");
  if (at == std::string::npos || at + 5 >= worker.size() || worker.size() - at - 5 > 12) return -1;
  int64_t r = 0;
  for (std::size_t i = at + 5; i < worker.size(); ++i) {
    if (worker[i] < '0' || worker[i] > '9') return -1;
    r = r * 10 + (worker[i] - '0');
  }
  return r;
}

std::string seconds(int64_t ns) {
  return format_fixed(static_cast<double>(ns) / 1e9, 3) + " s";
}

std::string signal_name(int sig) {
  const char* name = detail::flight::fatal_signal_name(sig);
  return name != nullptr ? name : "signal " + std::to_string(sig);
}

// "rank 3", "ranks 0-2 and 4-7", "ranks 1, 3 and 5".
std::string rank_list(std::vector<int64_t> ranks) {
  std::sort(ranks.begin(), ranks.end());
  std::vector<std::string> runs;
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    runs.push_back(j == i ? std::to_string(ranks[i])
                          : std::to_string(ranks[i]) + "-" + std::to_string(ranks[j]));
    i = j + 1;
  }
  std::string s = ranks.size() == 1 ? "rank " : "ranks ";
  for (std::size_t i = 0; i < runs.size(); ++i)
    s += (i == 0 ? "" : i + 1 == runs.size() ? " and " : ", ") + runs[i];
  return s;
}

std::string collective_label(const FlightCollective& c) {
  return c.name + " #" + std::to_string(c.seq);
}

std::string first_line(const std::string& s) {
  return s.substr(0, s.find('\n'));
}

// What a rank was doing, in the words of the verdict.
std::string describe(const FlightRank& r) {
  const std::string where = r.position();
  const std::string at = where.empty() ? "" : " in " + where;
  if (r.reason == "crash")
    return "rank " + std::to_string(r.rank) + " crashed with " + signal_name(r.signal) + at;
  if (r.reason == "terminate")
    return "rank " + std::to_string(r.rank) + " ended in std::terminate" +
           (r.message.empty() ? "" : " (" + detail::shorten(first_line(r.message), 120) + ")") +
           at;
  if (where.empty()) return "rank " + std::to_string(r.rank) + " is outside any op";
  return "rank " + std::to_string(r.rank) + " is stuck in " + where;
}

// The group most ranks' last collectives were in ("0", the default group, on a tie).
std::string main_group(const std::vector<FlightRank>& ranks) {
  std::map<std::string, int> count;
  for (const FlightRank& r : ranks)
    if (const FlightCollective* c = r.last_collective()) ++count[c->group];
  std::string best;
  int most = 0;
  for (const auto& [g, n] : count)
    if (n > most || (n == most && g == "0")) best = g, most = n;
  return best;
}

void analyse(FlightReport& out) {
  const std::string group = main_group(out.ranks);
  std::map<int64_t, const FlightCollective*> furthest;  // rank -> its furthest in the group
  const FlightCollective* target = nullptr;
  bool counts = false, seqs = false;
  for (const FlightRank& r : out.ranks) {
    const FlightCollective* best = nullptr;
    for (const FlightCollective& c : r.collectives)
      if (c.seq >= 0 && c.group == group && (best == nullptr || c.seq >= best->seq)) best = &c;
    if (best == nullptr) continue;
    furthest[r.rank] = best;
    (best->seq_is_count ? counts : seqs) = true;
    if (target == nullptr || best->seq > target->seq) target = best;
  }
  if (counts && seqs)
    out.notes.push_back(
        "some ranks' collectives are numbered by the group, others by ptprof's count of the "
        "process's collectives (no group known to them): their numbers may not match");
  else if (counts)
    out.notes.push_back(
        "collectives are numbered by ptprof's count of each process's collectives (no process "
        "group was known to the recorder): the same on every rank when all record from the "
        "first collective, as the flight recorder does from the start");

  std::vector<std::string> culprits;  // the ranks the others wait for, in words
  std::vector<int64_t> idle_entered;  // entered the target, finished it, not in another
  if (target != nullptr) {
    out.waiting_in = *target;
    for (const FlightRank& r : out.ranks) {
      auto it = furthest.find(r.rank);
      if (it == furthest.end() || it->second->seq < target->seq) {
        out.not_entered.push_back(r.rank);
        culprits.push_back(describe(r));
      } else if (r.in_collective()) {
        out.waiting_ranks.push_back(r.rank);
      } else {
        idle_entered.push_back(r.rank);
      }
    }
  } else {
    out.notes.push_back("no collective with a sequence number in the dumps");
  }
  // Ranks that crashed are named whatever their collectives.
  for (const FlightRank& r : out.ranks)
    if ((r.reason == "crash" || r.reason == "terminate") &&
        std::find(out.not_entered.begin(), out.not_entered.end(), r.rank) == out.not_entered.end())
      culprits.push_back(describe(r));
  for (int64_t m : out.missing_ranks) culprits.push_back("rank " + std::to_string(m) + " wrote no dump");

  const std::size_t kMaxNamed = 4;
  std::string who;
  for (std::size_t i = 0; i < culprits.size() && i < kMaxNamed; ++i)
    who += (i == 0 ? "" : "; ") + culprits[i];
  if (culprits.size() > kMaxNamed)
    who += "; and " + std::to_string(culprits.size() - kMaxNamed) + " more ranks";

  if (target != nullptr && !out.waiting_ranks.empty()) {
    const std::string wait = rank_list(out.waiting_ranks) +
                             (out.waiting_ranks.size() == 1 ? " waits" : " wait") + " in " +
                             collective_label(*target);
    if (!culprits.empty()) {
      out.verdict = who + "; " + wait + (culprits.size() == 1 ? " for it" : " for them");
    } else if (out.waiting_ranks.size() == out.ranks.size()) {
      out.verdict = "every rank waits in " + collective_label(*target) +
                    ": all entered it and none finished (the collective itself, its transport "
                    "or a device is stuck)";
    } else {
      out.verdict = wait + "; " + rank_list(idle_entered) + " entered it too and went on";
    }
    return;
  }
  if (!culprits.empty()) {
    out.verdict = who;
    if (target != nullptr) out.verdict += "; the furthest collective is " + collective_label(*target);
    return;
  }
  // Nobody waits: say where the ranks are, those in one place together.
  std::map<std::string, std::vector<int64_t>> at;
  for (const FlightRank& r : out.ranks) at[r.position()].push_back(r.rank);
  std::vector<std::pair<std::string, std::vector<int64_t>>> places(at.begin(), at.end());
  std::sort(places.begin(), places.end(),
            [](const auto& a, const auto& b) { return a.second.size() > b.second.size(); });
  std::string s = "no rank waits in a collective";
  if (target != nullptr) s += " (the last, " + collective_label(*target) + ", is done)";
  for (std::size_t i = 0; i < places.size() && i < kMaxNamed; ++i) {
    const bool one = places[i].second.size() == 1;
    s += (i == 0 ? ": " : "; ") + rank_list(places[i].second) + (one ? " is " : " are ") +
         (places[i].first.empty() ? "outside any op" : "in " + places[i].first);
  }
  out.verdict = s;
}

std::string rank_block(const FlightRank& r) {
  std::string s = "rank " + std::to_string(r.rank) + ": " + r.reason;
  if (!r.message.empty()) s += " (" + r.message + ")";
  if (r.last_step >= 0)
    s += ", last step " + std::to_string(r.last_step) +
         (r.since_step_ns >= 0 ? " " + seconds(r.since_step_ns) + " before" : "");
  s += "\n";
  for (const FlightThreadState& t : r.threads) {
    s += "  thread " + std::to_string(t.tid) + (t.name.empty() ? "" : " (" + t.name + ")") +
         (t.crashed ? " [crashed]" : "") + (t.exited ? " [exited]" : "") + ": ";
    if (t.open.empty()) s += "outside any op";
    for (std::size_t i = 0; i < t.open.size(); ++i)
      s += (i == 0 ? "" : " < ") + t.open[i].name + " " + seconds(t.open[i].open_ns);
    if (t.depth > t.open.size())
      s += " (+" + std::to_string(t.depth - t.open.size()) + " outer ops not kept)";
    s += "\n";
  }
  if (const FlightCollective* c = r.last_collective()) {
    s += "  last collective: " + collective_label(*c) + " (" + c->op +
         (c->group.empty() ? "" : ", group " + c->group) + "), entered " +
         seconds(std::max<int64_t>(0, r.dump_ns - c->start_ns)) + " before the dump" +
         (r.in_collective() ? ", not finished" : "") + "\n";
  } else {
    s += "  no collective entered in the dump\n";
  }
  s += "  dump: " + r.file + (r.trace.empty() ? "" : ", trace: " + r.trace) +
       (r.dumps > 1 ? " (the last of its " + std::to_string(r.dumps) + " dumps)" : "") + "\n";
  return s;
}

}  // namespace

bool has_flight_dumps(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return false;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_regular_file() && is_dump_name(e.path().filename().string())) return true;
  return false;
}

FlightRank flight_rank(const std::string& dump) {
  FlightRank r = detail::flight_digest(detail::read_flight_dump(dump, /*rings=*/false), dump);
  if (r.rank < 0) r.rank = rank_from_worker(r.worker);
  const std::string trace = detail::flight_trace_path(dump);
  std::error_code ec;
  if (fs::exists(trace, ec)) r.trace = trace;
  return r;
}

FlightReport flight_report(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw Error("ptprof: " + dir + " is not a directory (give the directory of the ranks' dumps)");
  const std::vector<std::string> files = dumps_in(dir);
  if (files.empty()) throw Error("ptprof: no flight recorder dump (*.ptflight) in " + dir);
  FlightReport out;
  std::map<int64_t, FlightRank> by_rank;
  std::set<std::string> workers_without_rank;
  for (const std::string& f : files) {
    FlightRank r = flight_rank(f);
    if (r.rank < 0) {
      workers_without_rank.insert(r.worker);
      if (workers_without_rank.size() > 1)
        throw Error("ptprof: cannot tell the ranks of the dumps in " + dir + ": " + f +
                    " names no rank (worker " + r.worker + ") and neither does another worker's");
      r.rank = 0;  // one process that is no rank of a job
    }
    out.world_size = std::max({out.world_size, r.world_size, r.rank + 1});
    auto [it, fresh] = by_rank.emplace(r.rank, FlightRank{});
    const int dumps = fresh ? 1 : it->second.dumps + 1;
    if (fresh || r.dump_ns >= it->second.dump_ns) it->second = std::move(r);
    it->second.dumps = dumps;
  }
  if (!workers_without_rank.empty())
    out.notes.push_back("the dumps name no rank: one process, shown as rank 0");
  for (auto& [rank, r] : by_rank) out.ranks.push_back(std::move(r));
  std::size_t at = 0;
  for (int64_t r = 0; r < out.world_size; ++r) {
    if (at < out.ranks.size() && out.ranks[at].rank == r) {
      ++at;
      continue;
    }
    out.missing_ranks.push_back(r);
  }
  if (!out.missing_ranks.empty())
    out.notes.push_back(rank_list(out.missing_ranks) + " of " + std::to_string(out.world_size) +
                        " wrote no dump: killed (SIGKILL and the OOM killer leave none), not "
                        "recording, or still writing");
  analyse(out);
  return out;
}

std::string FlightReport::summary() const {
  std::string s = "Flight recorder: " + std::to_string(ranks.size()) + " of " +
                  std::to_string(world_size) + " rank(s) dumped\n";
  s += "verdict: " + verdict + "\n";
  if (waiting_in.seq >= 0)
    s += "the collective: " + collective_label(waiting_in) + " (" + waiting_in.op +
         (waiting_in.group.empty() ? "" : ", group " + waiting_in.group) + "): " +
         std::to_string(waiting_ranks.size()) + " rank(s) wait in it, " +
         std::to_string(not_entered.size()) + " never entered it" +
         (missing_ranks.empty() ? "" : ", " + std::to_string(missing_ranks.size()) + " no dump") +
         "\n";
  // Every rank that stands out in full; of the others, a few, then how many are like them.
  std::set<int64_t> stand_out(not_entered.begin(), not_entered.end());
  for (const FlightRank& r : ranks)
    if (r.reason == "crash" || r.reason == "terminate") stand_out.insert(r.rank);
  constexpr std::size_t kOthers = 4;
  std::size_t others = 0;
  std::vector<int64_t> unlisted;
  for (const FlightRank& r : ranks) {
    if (stand_out.count(r.rank) || others++ < kOthers) {
      s += "\n" + rank_block(r);
    } else {
      unlisted.push_back(r.rank);
    }
  }
  if (!unlisted.empty())
    s += "\n" + rank_list(unlisted) + ": not shown (--json lists every rank)\n";
  for (const std::string& n : notes) s += "note: " + n + "\n";
  return s;
}

std::string FlightReport::to_json() const {
  detail::JsonWriter w;
  w.begin_object();
  w.key("world_size").value(world_size);
  w.key("verdict").value(verdict);
  w.key("waiting_in");
  if (waiting_in.seq >= 0)
    detail::write_flight_collective(w, waiting_in);
  else
    w.null();
  auto ranks_array = [&](const char* key, const std::vector<int64_t>& v) {
    w.key(std::string_view(key)).begin_array();
    for (int64_t r : v) w.value(r);
    w.end_array();
  };
  ranks_array("waiting_ranks", waiting_ranks);
  ranks_array("not_entered", not_entered);
  ranks_array("missing_ranks", missing_ranks);
  w.key("notes").begin_array();
  for (const std::string& n : notes) w.value(n);
  w.end_array();
  w.key("ranks").begin_array();
  for (const FlightRank& r : ranks) w.newline().raw(detail::flight_rank_json(r));
  w.end_array();
  w.end_object();
  w.finish();
  return w.buffer();
}

}  // namespace ptprof
