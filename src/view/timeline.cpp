#include "view/timeline.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "ptprof/error.h"
#include "ptprof/trace.h"
#include "trace/chrome_trace.h"  // write_event_args
#include "trace/json_writer.h"
#include "view/table_codec.h"

namespace ptprof::view {

namespace {

using detail::JsonWriter;

int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

// The first position in [i, n) of st (sorted) not below `value`, searched from i outwards (an
// exponential search): the next bucket's start is near, and the reads stay near it too, where
// a binary search over the whole lane would miss the cache at each of its ~20 steps.
uint64_t gallop(const int64_t* st, uint64_t i, uint64_t n, int64_t value) {
  uint64_t step = 1, lo = i;
  while (lo + step < n && st[lo + step] < value) {
    lo += step;
    step *= 2;
  }
  const uint64_t hi = std::min(n, lo + step + 1);
  return static_cast<uint64_t>(std::lower_bound(st + lo, st + hi, value) - st);
}

[[noreturn]] void damaged(const std::string& what) {
  throw Error("ptprof view: the index's timeline is damaged (" + what + ")");
}

}  // namespace

Timeline::Timeline(std::shared_ptr<const IndexFile> index) : index_(std::move(index)) {
  const IndexFile& f = *index_;
  lanes_ = f.column<Lane>("tl.lanes");
  start_ = f.column<int64_t>("tl.start");
  dur_ = f.column<int64_t>("tl.dur");
  max64_ = f.column<int64_t>("tl.max64");
  max4096_ = f.column<int64_t>("tl.max4096");
  name_ = f.column<uint32_t>("tl.name");
  detail_ = f.section("tl.detail");
  detail_at_ = f.column<uint64_t>("tl.detail.at");
  flows_ = f.column<Flow>("tl.flows");
  fwdbwd_ = f.column<Flow>("tl.fwdbwd");
  names_ = StringTable(f, "names");
  inputs_ = StringTable(f, "inputs");
  stacks_ = StringTable(f, "stacks");
  collectives_ = StringTable(f, "collectives");
  const uint64_t n = start_.size();
  if (dur_.size() != n || name_.size() != n || detail_at_.size() != n + 1) damaged("column sizes");
  for (uint64_t i = 0; i <= n; i += 4096)  // spot checks; every detail is checked as it is read
    if (detail_at_[i] > detail_.size()) damaged("a detail's offset");
  for (const Lane& l : lanes_) {
    if (l.first > n || l.count > n - l.first) damaged("a lane's slices");
    if (l.max64 + (l.count + kBlock - 1) / kBlock > max64_.size() ||
        l.max4096 + (l.count + kBlock2 - 1) / kBlock2 > max4096_.size())
      damaged("a lane's blocks");
    if (lanes_of_track_.size() <= l.track) {
      if (l.track > n) damaged("a lane's track");
      lanes_of_track_.resize(l.track + 1);
    }
    lanes_of_track_[l.track].push_back(static_cast<uint64_t>(&l - lanes_.begin()));
  }
  for (const Flow& fl : flows_) {
    if (fl.from >= n || fl.to >= n) damaged("a flow");
    max_flow_span_ = std::max(max_flow_span_, start_[fl.to] + dur_[fl.to] - fl.start);
  }
  for (const Flow& fl : fwdbwd_) {
    if (fl.from >= n || fl.to >= n) damaged("a forward/backward link");
    max_fwdbwd_span_ = std::max(max_fwdbwd_span_, start_[fl.to] + dur_[fl.to] - fl.start);
  }
  for (int c = 0;; ++c) {
    const std::string p = "counter." + std::to_string(c);
    if (!f.has(p + ".time")) break;
    Counter k{f.column<int64_t>(p + ".time"), f.column<int64_t>(p + ".allocated"),
              f.column<int64_t>(p + ".reserved")};
    if (k.allocated.size() != k.time.size() || k.reserved.size() != k.time.size())
      damaged("a counter");
    counters_.push_back(k);
  }
}

// The position (in the lane) of the longest slice among [i, j) of lane l, the first of equals.
uint64_t Timeline::longest(const Lane& l, uint64_t i, uint64_t j) const {
  const int64_t* dur = dur_.data + l.first;
  const int64_t* m64 = max64_.data + l.max64;
  const int64_t* m4096 = max4096_.data + l.max4096;
  int64_t best = -1;
  uint64_t at = i;
  int level = 0;
  auto take = [&](int64_t v, uint64_t where, int lvl) {
    if (v > best) {
      best = v;
      at = where;
      level = lvl;
    }
  };
  uint64_t a = i, b = j;
  while (a < b && a % kBlock) take(dur[a], a, 0), ++a;
  while (b > a && b % kBlock) --b, take(dur[b], b, 0);
  uint64_t A = a / kBlock, B = b / kBlock;
  while (A < B && A % kBlock) take(m64[A], A, 1), ++A;
  while (B > A && B % kBlock) --B, take(m64[B], B, 1);
  for (uint64_t C = A / kBlock; C < B / kBlock; ++C) take(m4096[C], C, 2);
  // Down to the slice: the first 64-block of that 4096-block holding the maximum, then the
  // first slice of it. (Bounded: a damaged index must not read past the lane.)
  const uint64_t blocks = (l.count + kBlock - 1) / kBlock;
  if (level == 2) {
    for (uint64_t blk = at * kBlock; blk < std::min(blocks, at * kBlock + kBlock); ++blk)
      if (m64[blk] == best) {
        at = blk;
        level = 1;
        break;
      }
    if (level == 2) return i;
  }
  if (level == 1) {
    const uint64_t first = at * kBlock;
    for (uint64_t s = first; s < std::min(l.count, first + kBlock); ++s)
      if (dur[s] == best) return s;
    return std::min(first, l.count - 1);
  }
  return at;
}

std::string Timeline::slices_json(int64_t t0, int64_t t1, int px,
                                  const std::vector<uint32_t>& tracks,
                                  const std::vector<uint64_t>& only) const {
  px = std::clamp(px, 1, 16384);
  if (t1 <= t0) t1 = t0 + 1;
  const int64_t width = std::max<int64_t>(1, (t1 - t0) / (2 * static_cast<int64_t>(px)));
  std::vector<uint64_t> lanes;
  if (tracks.empty()) {
    for (uint64_t l = 0; l < lanes_.size(); ++l) lanes.push_back(l);
  } else {
    for (uint32_t k : tracks)
      if (k < lanes_of_track_.size())
        lanes.insert(lanes.end(), lanes_of_track_[k].begin(), lanes_of_track_[k].end());
  }
  if (!only.empty()) {
    std::vector<bool> wanted(lanes_.size(), false);
    for (uint64_t l : only)
      if (l < lanes_.size()) wanted[l] = true;
    lanes.erase(std::remove_if(lanes.begin(), lanes.end(), [&](uint64_t l) { return !wanted[l]; }),
                lanes.end());
  }
  JsonWriter w;
  std::vector<uint32_t> used_names;
  std::vector<uint64_t> ids, counts;
  w.begin_object();
  w.key("t0").value(t0);
  w.key("t1").value(t1);
  w.key("bucket_ns").value(width);
  w.key("lanes").begin_array();
  for (uint64_t li : lanes) {
    const Lane& l = lanes_[li];
    const int64_t* st = start_.data + l.first;
    const int64_t* du = dur_.data + l.first;
    ids.clear();
    counts.clear();
    uint64_t i = static_cast<uint64_t>(std::lower_bound(st, st + l.count, t0) - st);
    if (i > 0 && st[i - 1] + du[i - 1] > t0) {
      ids.push_back(i - 1);
      counts.push_back(1);
    }
    while (i < l.count && st[i] < t1) {
      // The bucket's end, or the window's where it ends first.
      const int64_t bucket_end = std::min(t1, (floor_div(st[i], width) + 1) * width);
      const uint64_t j = gallop(st, i, l.count, bucket_end);
      ids.push_back(j - i == 1 ? i : longest(l, i, j));
      counts.push_back(j - i);
      i = j;
    }
    if (ids.empty()) continue;
    w.begin_object();
    w.key("track").value(static_cast<uint64_t>(l.track));
    w.key("depth").value(static_cast<uint64_t>(l.depth));
    w.key("first").value(l.first);
    // Ids and starts as differences from the one before (the first from the lane's first
    // slice and from t0): a page is mostly these numbers, and differences are short.
    w.key("id").begin_array();
    uint64_t prev_id = l.first;
    for (uint64_t s : ids) {
      w.value(l.first + s - prev_id);
      prev_id = l.first + s;
    }
    w.end_array();
    w.key("start").begin_array();
    int64_t prev_start = t0;
    for (uint64_t s : ids) {
      w.value(st[s] - prev_start);
      prev_start = st[s];
    }
    w.end_array();
    w.key("dur").begin_array();
    for (uint64_t s : ids) w.value(du[s]);
    w.end_array();
    w.key("name").begin_array();
    for (uint64_t s : ids) {
      const uint32_t name = name_[l.first + s];
      used_names.push_back(name);
      w.value(name);
    }
    w.end_array();
    w.key("n").begin_array();
    for (uint64_t c : counts) w.value(c);
    w.end_array();
    w.end_object();
  }
  w.end_array();
  std::sort(used_names.begin(), used_names.end());
  used_names.erase(std::unique(used_names.begin(), used_names.end()), used_names.end());
  w.key("names").begin_object();
  for (uint32_t n : used_names) w.key(std::to_string(n)).value(names_[n]);
  w.end_object();
  w.end_object();
  return w.take();
}

std::string Timeline::counters_json(int64_t t0, int64_t t1, int px) const {
  px = std::clamp(px, 1, 16384);
  if (t1 <= t0) t1 = t0 + 1;
  const int64_t width = std::max<int64_t>(1, (t1 - t0) / px);
  JsonWriter w;
  w.begin_object();
  w.key("bucket_ns").value(width);
  w.key("counters").begin_array();
  for (std::size_t c = 0; c < counters_.size(); ++c) {
    const Counter& k = counters_[c];
    const int64_t* tm = k.time.data;
    std::size_t i = static_cast<std::size_t>(std::lower_bound(tm, tm + k.time.size(), t0) - tm);
    w.begin_object();
    w.key("id").value(static_cast<uint64_t>(c));
    w.key("before_allocated").value(i > 0 ? k.allocated[i - 1] : 0);
    w.key("before_reserved").value(i > 0 ? k.reserved[i - 1] : 0);
    std::vector<int64_t> t, lo, hi, last, reserved;
    while (i < k.time.size() && tm[i] < t1) {
      const int64_t bucket = floor_div(tm[i], width);
      int64_t mn = k.allocated[i], mx = mn, rmax = k.reserved[i];
      std::size_t j = i;
      while (j < k.time.size() && floor_div(tm[j], width) == bucket) {
        mn = std::min(mn, k.allocated[j]);
        mx = std::max(mx, k.allocated[j]);
        rmax = std::max(rmax, k.reserved[j]);
        ++j;
      }
      t.push_back(tm[i]);
      lo.push_back(mn);
      hi.push_back(mx);
      last.push_back(k.allocated[j - 1]);
      reserved.push_back(rmax);
      i = j;
    }
    auto array = [&](const char* key, const std::vector<int64_t>& v) {
      w.key(std::string_view(key)).begin_array();
      for (int64_t x : v) w.value(x);
      w.end_array();
    };
    array("t", t);
    array("min", lo);
    array("max", hi);
    array("last", last);
    array("reserved", reserved);
    w.end_object();
  }
  w.end_array();
  w.end_object();
  return w.take();
}

SliceDetail Timeline::detail(uint64_t s) const {
  const uint64_t a = detail_at_[s], b = detail_at_[s + 1];
  if (a > b || b > detail_.size()) damaged("a detail's offset");
  SliceDetail d = decode_detail(detail_.substr(a, b - a));
  if (d.flow > start_.size()) damaged("a flow");
  return d;
}

void Timeline::write_slice(detail::JsonWriter& w, uint64_t s) const {
  const SliceDetail d = detail(s);
  w.begin_object();
  w.key("id").value(s);
  w.key("name").value(names_[name_[s]]);
  w.key("start_ns").value(start_[s]);
  w.key("dur_ns").value(dur_[s]);
  w.key("track").value(static_cast<uint64_t>(d.track));
  w.key("depth").value(static_cast<uint64_t>(d.depth));
  w.end_object();
}

std::string Timeline::event_json(uint64_t id) const {
  if (id >= start_.size()) throw Error("ptprof view: no slice " + std::to_string(id));
  const SliceDetail d = detail(id);
  Trace tables;  // only the entries this event names
  Event e;
  e.kind = static_cast<EventKind>(d.kind);
  e.name = names_[name_[id]];
  e.start_ns = start_[id];
  e.duration_ns = dur_[id];
  e.self_ns = d.self_ns;
  e.external_id = d.external_id;
  e.correlation = d.correlation;
  e.record_function_id = d.record_function_id;
  e.sequence_nr = d.sequence_nr;
  e.fwd_thread_id = d.fwd_thread_id;
  e.thread_id = d.thread_id;
  e.finished = !(d.flags & kUnfinished);
  e.is_async = d.flags & kAsync;
  e.flops = d.flops;
  e.cbid = d.cbid;
  if (d.inputs >= 0 && static_cast<std::size_t>(d.inputs) < inputs_.size()) {
    tables.op_inputs.push_back(decode_inputs(inputs_[d.inputs]));
    e.inputs = 0;
  }
  if (d.stack >= 0 && static_cast<std::size_t>(d.stack) < stacks_.size()) {
    tables.stacks.push_back(decode_stack(stacks_[d.stack]));
    e.stack = 0;
  }
  if (d.collective >= 0 && static_cast<std::size_t>(d.collective) < collectives_.size()) {
    tables.collectives.push_back(decode_collective(collectives_[d.collective]));
    e.collective = 0;
  }
  if (d.gpu) {
    const SliceDetail& g = d;
    for (int i = 0; i < 3; ++i) {
      e.kernel.grid[i] = g.grid[i];
      e.kernel.block[i] = g.block[i];
    }
    e.kernel.registers_per_thread = g.registers_per_thread;
    e.kernel.shared_memory = g.shared_memory;
    e.kernel.blocks_per_sm = g.blocks_per_sm;
    e.kernel.warps_per_sm = g.warps_per_sm;
    e.kernel.occupancy_pct = g.occupancy_pct;
    e.kernel.queued = g.queued;
    e.kernel.context = g.context;
    e.device = g.device;
    e.stream = g.stream;
    e.transfer.bytes = g.bytes;
    e.transfer.context = g.transfer_context;
    e.transfer.copy_kind = g.copy_kind;
    e.transfer.src_kind = g.src_kind;
    e.transfer.dst_kind = g.dst_kind;
  }
  JsonWriter w;
  w.begin_object();
  w.key("id").value(id);
  w.key("name").value(e.name);
  w.key("cat").value(category(e.kind));
  w.key("start_ns").value(e.start_ns);
  w.key("dur_ns").value(e.duration_ns);
  if (!is_gpu(e.kind)) w.key("self_ns").value(e.self_ns);
  w.key("track").value(static_cast<uint64_t>(d.track));
  w.key("depth").value(static_cast<uint64_t>(d.depth));
  w.key("flow");
  if (d.flow > 0) {
    write_slice(w, d.flow - 1);
  } else {
    w.null();
  }
  detail::write_event_args(w, tables, e, id);
  w.end_object();
  return w.take();
}

std::string Timeline::search_json(std::string_view query, int limit) const {
  auto lower = [](char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); };
  std::string q;
  for (char c : query) q.push_back(lower(c));
  std::vector<bool> match(names_.size(), false);
  bool any = false;
  for (std::size_t i = 0; i < names_.size() && !q.empty(); ++i) {
    const std::string_view name = names_[i];
    auto it = std::search(name.begin(), name.end(), q.begin(), q.end(),
                          [&](char a, char b) { return lower(a) == b; });
    match[i] = it != name.end();
    any |= match[i];
  }
  std::vector<uint64_t> hits;
  uint64_t total = 0;
  if (any) {
    // The first `limit` by start: keep the earliest `limit` seen (a bounded max-heap).
    auto later = [&](uint64_t a, uint64_t b) { return start_[a] < start_[b]; };
    const std::size_t cap = static_cast<std::size_t>(std::max(limit, 0));
    for (uint64_t s = 0; s < name_.size(); ++s) {
      if (!match[name_[s]]) continue;
      ++total;
      if (cap == 0) continue;
      if (hits.size() < cap) {
        hits.push_back(s);
        std::push_heap(hits.begin(), hits.end(), later);
      } else if (start_[s] < start_[hits.front()]) {
        std::pop_heap(hits.begin(), hits.end(), later);
        hits.back() = s;
        std::push_heap(hits.begin(), hits.end(), later);
      }
    }
    std::sort_heap(hits.begin(), hits.end(), later);
  }
  JsonWriter w;
  w.begin_object();
  w.key("query").value(query);
  w.key("total").value(total);
  w.key("matches").begin_array();
  for (uint64_t s : hits) write_slice(w, s);
  w.end_array();
  w.end_object();
  return w.take();
}

std::string Timeline::flows_json(int64_t t0, int64_t t1, int limit) const {
  JsonWriter w;
  w.begin_object();
  w.key("flows").begin_array();
  int shown = 0;
  bool too_many = false;
  // Each list is in its first end's start order; a flow shows when it overlaps [t0, t1).
  auto add = [&](const Column<Flow>& list, int64_t max_span, uint64_t kind) {
    const Flow* f = list.data;
    const std::size_t n = list.size();
    std::size_t i = static_cast<std::size_t>(
        std::lower_bound(f, f + n, t0 - max_span,
                         [](const Flow& a, int64_t t) { return a.start < t; }) -
        f);
    for (; i < n && f[i].start < t1 && !too_many; ++i) {
      const int64_t end = start_[f[i].to] + dur_[f[i].to];
      if (end < t0) continue;
      if (shown == limit) {
        too_many = true;
        break;
      }
      ++shown;
      w.begin_array();
      w.value(f[i].from).value(f[i].to);
      w.value(start_[f[i].from]).value(start_[f[i].to]);
      const SliceDetail from = detail(f[i].from), to = detail(f[i].to);
      w.value(static_cast<uint64_t>(from.track)).value(static_cast<uint64_t>(from.depth));
      w.value(static_cast<uint64_t>(to.track)).value(static_cast<uint64_t>(to.depth));
      w.value(kind);
      w.end_array();
    }
  };
  add(flows_, max_flow_span_, 0);
  add(fwdbwd_, max_fwdbwd_span_, 1);
  w.end_array();
  w.key("too_many").value(too_many);
  w.end_object();
  return w.take();
}

}  // namespace ptprof::view
