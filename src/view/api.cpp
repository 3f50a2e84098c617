#include "view/api.h"

#include <charconv>
#include <climits>
#include <set>

#include "ptprof/cross_rank.h"
#include "ptprof/error.h"
#include "ptprof/report_diff.h"
#include "trace/json_writer.h"
#include "view/row_table.h"
#include "view/table_codec.h"

namespace ptprof::view {

namespace {

using detail::JsonWriter;
using Params = std::multimap<std::string, std::string>;

struct BadRequest {
  std::string why;
};

ApiResponse json_error(int status, const std::string& message, const std::string& file = "") {
  JsonWriter w;
  w.begin_object();
  w.key("error").value(message);
  if (!file.empty()) w.key("file").value(file);
  w.end_object();
  return {status, w.take()};
}

const std::string* param(const Params& p, const char* name) {
  auto it = p.find(name);
  return it == p.end() ? nullptr : &it->second;
}

std::string text(const Params& p, const char* name, const std::string& fallback) {
  const std::string* v = param(p, name);
  return v ? *v : fallback;
}

int64_t number(const Params& p, const char* name, int64_t fallback, int64_t lo = INT64_MIN,
               int64_t hi = INT64_MAX) {
  const std::string* v = param(p, name);
  if (!v) return fallback;
  int64_t out = 0;
  const auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), out);
  if (ec != std::errc() || end != v->data() + v->size() || out < lo || out > hi)
    throw BadRequest{std::string("parameter ") + name + " must be a whole number" +
                     (lo > INT64_MIN ? " from " + std::to_string(lo) : "") +
                     (hi < INT64_MAX ? " to " + std::to_string(hi) : "") + " (got \"" +
                     v->substr(0, 40) + "\")"};
  return out;
}

const char* state_name(TraceStore::State s) {
  switch (s) {
    case TraceStore::State::Queued: return "queued";
    case TraceStore::State::Indexing: return "indexing";
    case TraceStore::State::Ready: return "ready";
    case TraceStore::State::Failed: return "failed";
  }
  return "queued";
}

}  // namespace

ApiResponse Api::handle(const std::string& what, const Params& p) {
  try {
    if (what == "runs") {
      JsonWriter w;
      w.begin_object();
      w.key("root").value(dir_.root_name());
      w.key("traces").begin_array();
      for (const TraceFile& f : dir_.files()) {
        const TraceStore::Progress pr = store_.progress(f);
        const TraceStore::State s = pr.state;
        w.begin_object();
        w.key("id").value(f.id);
        w.key("run").value(f.run);
        w.key("worker").value(f.worker);
        w.key("span").value(f.span);
        w.key("span_index").value(f.span_index);
        w.key("file").value(f.rel);
        w.key("size").value(f.size);
        w.key("mtime_ns").value(f.mtime_ns);
        w.key("state").value(state_name(s));
        if (s == TraceStore::State::Failed) w.key("error").value(pr.error);
        if (!pr.phase.empty()) w.key("phase").value(pr.phase);
        if (!pr.seconds.empty()) {
          w.key("index_seconds").begin_object();
          for (const auto& [phase, sec] : pr.seconds) w.key(phase).value(sec);
          w.end_object();
        }
        w.end_object();
      }
      w.end_array();
      w.end_object();
      return {200, w.take()};
    }

    if (what == "distributed") {
      const std::string run = text(p, "run", "");
      const auto dir = dir_.run_dir(run);
      if (!dir) return json_error(404, "no run \"" + run + "\"");
      // The ranks' files as they are now: a new or rewritten trace means a new comparison.
      std::string files;
      for (const TraceFile& f : dir_.files())
        if (f.run == run) files += f.rel + ":" + std::to_string(f.size) + ":" + std::to_string(f.mtime_ns) + ";";
      {
        std::lock_guard<std::mutex> lock(distributed_mu_);
        auto it = distributed_.find(run);
        if (it != distributed_.end() && it->second.first == files) return {200, it->second.second};
      }
      std::string json;
      try {
        json = store_.exclusive([&] { return cross_rank_report(*dir).to_json(); });
      } catch (const Error& e) {
        // Workers that are not the ranks of one job: an answer, not a failure.
        JsonWriter w;
        w.begin_object();
        w.key("not_ranks").value(e.what());
        w.end_object();
        json = w.take();
      }
      std::lock_guard<std::mutex> lock(distributed_mu_);
      distributed_[run] = {files, json};
      return {200, json};
    }

    if (what == "diff") {
      const auto a = dir_.find(text(p, "a", ""));
      const auto b = dir_.find(text(p, "b", ""));
      if (!a || !b) return json_error(404, "no trace \"" + text(p, a ? "b" : "a", "") + "\"");
      std::shared_ptr<const Report> ra, rb;
      try {
        ra = store_.report(*a);
        rb = store_.report(*b);
      } catch (const Error& e) {
        return json_error(422, e.what());
      }
      ReportDiffOptions o;
      o.before_label = a->rel;
      o.after_label = b->rel;
      return {200, ReportDiff(*ra, *rb, o).to_json()};
    }

    // ---- one trace's views ----
    const std::string id = text(p, "trace", "");
    const auto file = dir_.find(id);
    if (!file) return json_error(404, "no trace \"" + id + "\"");
    const TraceStore::Lookup got = store_.get(*file);
    if (got.state == TraceStore::State::Failed) return json_error(422, got.error, file->rel);
    if (got.state != TraceStore::State::Ready) {
      JsonWriter w;
      w.begin_object();
      w.key("state").value(state_name(got.state));
      w.key("file").value(file->rel);
      w.end_object();
      return {202, w.take()};
    }
    const IndexedTrace& t = *got.trace;
    auto section = [&](const std::string& name) -> ApiResponse {
      const std::string_view s = t.index->section(name);
      if (s.empty()) return json_error(404, "this trace has no " + name + " (" + file->rel + ")");
      return {200, std::string(s)};
    };
    if (what == "overview") return section("overview");
    // The row tables: a page of rows, filtered and sorted (row_table.h).
    // The views of the second file: "indexing" until it is written.
    auto tables_pending = [&]() -> ApiResponse {
      JsonWriter w;
      w.begin_object();
      w.key("state").value("indexing");
      w.key("phase").value("tables");
      w.key("file").value(file->rel);
      w.end_object();
      return {202, w.take()};
    };
    auto table = [&](const std::string& name, RowQuery q) -> ApiResponse {
      if (!t.tables) return tables_pending();
      if (!t.tables->has(name + ".meta"))
        return json_error(404, "this trace has no " + name + " (" + file->rel + ")");
      q.sort = text(p, "sort", q.sort);
      q.descending = text(p, "order", "desc") != "asc";
      q.contains = text(p, "q", "");
      q.offset = static_cast<uint64_t>(number(p, "offset", 0, 0));
      q.limit = static_cast<uint64_t>(number(p, "limit", 100, 0, 10000));
      try {
        return {200, RowTable(t.tables, name).query_json(q)};
      } catch (const Error& e) {
        throw BadRequest{e.what()};
      }
    };
    if (what == "operators") {
      const std::string g = text(p, "group", "name");
      if (g != "name" && g != "shape" && g != "stack")
        throw BadRequest{"group must be name, shape or stack"};
      RowQuery q;
      if (const std::string* n = param(p, "name")) q.equals["name"] = *n;
      return table("operators." + g, q);
    }
    if (what == "kernels") {
      const std::string g = text(p, "group", "name");
      if (g != "name" && g != "op") throw BadRequest{"group must be name or op"};
      RowQuery q;
      q.sort = "total_us";
      if (const std::string* op = param(p, "op")) q.equals["op"] = *op;
      if (const std::string* kind = param(p, "kind")) q.equals["kind"] = *kind;
      return table("kernels." + g, q);
    }
    if (what == "memory") {
      RowQuery q;
      q.sort = "bytes";
      const double device = static_cast<double>(number(p, "device", 0, 0, INT_MAX));
      q.ranges["device"] = {device, device};
      q.ranges["bytes"] = {static_cast<double>(number(p, "min_bytes", 0)),
                           static_cast<double>(number(p, "max_bytes", INT64_MAX))};
      // Allocations live at some time in [t0, t1): made before t1, freed (or not) after t0.
      if (param(p, "t1")) q.ranges["alloc_ns"].max = static_cast<double>(number(p, "t1", 0));
      if (param(p, "t0")) q.ranges["end_ns"].min = static_cast<double>(number(p, "t0", 0));
      return table("memory", q);
    }
    if (what == "stack") {  // one of the trace's stacks, outermost frame first
      const StringTable stacks(*t.index, "stacks");
      const int64_t i = number(p, "id", -1, 0);
      if (static_cast<uint64_t>(i) >= stacks.size()) return json_error(404, "no stack " + std::to_string(i));
      JsonWriter w;
      w.begin_object();
      w.key("frames").begin_array();
      for (const std::string& f : decode_stack(stacks[static_cast<std::size_t>(i)])) w.value(f);
      w.end_array();
      w.end_object();
      return {200, w.take()};
    }
    if (what == "flame") {
      const std::string m = text(p, "metric", "self_cpu_time_total");
      if (m != "self_cpu_time_total" && m != "self_device_time_total")
        throw BadRequest{"metric must be self_cpu_time_total or self_device_time_total"};
      if (!t.tables) return tables_pending();
      const std::string_view s = t.tables->section("flame." + m);
      if (s.empty()) return json_error(404, "this trace has no stacks (" + file->rel + ")");
      return {200, std::string(s)};
    }
    const Timeline& tl = *t.timeline;
    if (what == "timeline") return {200, std::string(tl.meta_json())};
    if (what == "timeline/slices") {
      std::vector<uint32_t> tracks;
      const std::string list = text(p, "tracks", "");
      for (std::size_t i = 0; i < list.size();) {
        std::size_t j = list.find(',', i);
        if (j == std::string::npos) j = list.size();
        uint32_t k = 0;
        const auto [end, ec] = std::from_chars(list.data() + i, list.data() + j, k);
        if (ec != std::errc() || end != list.data() + j)
          throw BadRequest{"tracks must be track ids separated by commas"};
        tracks.push_back(k);
        i = j + 1;
      }
      // lanes: ranges of lane indexes, "3-40,52-60".
      std::vector<uint64_t> lanes;
      const std::string ranges = text(p, "lanes", "");
      for (std::size_t i = 0; i < ranges.size();) {
        std::size_t j = ranges.find(',', i);
        if (j == std::string::npos) j = ranges.size();
        const std::string range = ranges.substr(i, j - i);
        const std::size_t dash = range.find('-');
        uint64_t a = 0, b = 0;
        const char* s0 = range.data();
        const char* mid = dash == std::string::npos ? s0 + range.size() : s0 + dash;
        auto r1 = std::from_chars(s0, mid, a);
        b = a;
        auto r2 = r1;
        if (dash != std::string::npos) r2 = std::from_chars(mid + 1, s0 + range.size(), b);
        if (r1.ec != std::errc() || r1.ptr != mid || r2.ec != std::errc() ||
            (dash != std::string::npos && r2.ptr != s0 + range.size()) || b < a ||
            b >= tl.lanes())
          throw BadRequest{"lanes must be lane indexes or ranges (a-b) below " +
                           std::to_string(tl.lanes()) + ", separated by commas"};
        for (uint64_t l = a; l <= b; ++l) lanes.push_back(l);
        i = j + 1;
      }
      return {200, tl.slices_json(number(p, "t0", 0), number(p, "t1", 1),
                                  static_cast<int>(number(p, "px", 1000, 1, 16384)), tracks, lanes)};
    }
    if (what == "timeline/counters")
      return {200, tl.counters_json(number(p, "t0", 0), number(p, "t1", 1),
                                    static_cast<int>(number(p, "px", 1000, 1, 16384)))};
    if (what == "timeline/event") {
      const int64_t s = number(p, "id", -1, 0);
      if (static_cast<uint64_t>(s) >= tl.slices()) return json_error(404, "no slice " + std::to_string(s));
      return {200, tl.event_json(static_cast<uint64_t>(s))};
    }
    if (what == "timeline/search")
      return {200, tl.search_json(text(p, "q", ""), static_cast<int>(number(p, "limit", 200, 0, 10000)))};
    if (what == "timeline/flows")
      return {200, tl.flows_json(number(p, "t0", 0), number(p, "t1", 1),
                                 static_cast<int>(number(p, "limit", 2000, 0, 100000)))};
    return json_error(404, "no endpoint /api/" + what);
  } catch (const BadRequest& b) {
    return json_error(400, b.why);
  } catch (const std::bad_alloc&) {
    return json_error(500, "ptprof view: out of memory");
  } catch (const std::exception& e) {
    return json_error(500, e.what());
  }
}

}  // namespace ptprof::view
