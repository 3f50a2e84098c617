#include "view/timeline_index.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ptprof/error.h"
#include "trace/chrome_trace.h"  // earliest_time_ns
#include "trace/fwd_bwd.h"
#include "trace/json_writer.h"
#include "trace/memory_timeline.h"
#include "view/string_table.h"
#include "view/slice_detail.h"
#include "view/table_codec.h"
#include "view/timeline_format.h"

namespace ptprof::view {

namespace {

using detail::JsonWriter;

// GPU activity sits on its device's stream; everything else (CUPTI's overhead too, which
// Kineto writes on the host) on its host thread.
bool on_gpu(const Event& e) { return is_gpu(e.kind) && e.kind != EventKind::Overhead; }

struct TrackKey {
  bool gpu = false;
  int64_t pid = 0, tid = 0;
  bool operator<(const TrackKey& o) const {
    if (gpu != o.gpu) return !gpu;  // host threads first, as Kineto's sort indexes put them
    if (pid != o.pid) return pid < o.pid;
    // A process's main thread (tid == pid) first.
    const bool main_a = tid == pid, main_b = o.tid == o.pid;
    if (main_a != main_b) return main_a;
    return tid < o.tid;
  }
};

// Appends values to a section in blocks, so no column is held whole.
template <class T>
class ColumnOut {
 public:
  ColumnOut(IndexWriter& w, std::string_view name) : w_(w) { w_.begin(name); }
  void push(const T& v) {
    buf_.push_back(v);
    if (buf_.size() == 8192) flush();
  }
  void close() {
    flush();
    w_.end();
  }

 private:
  void flush() {
    w_.append(buf_.data(), buf_.size() * sizeof(T));
    buf_.clear();
  }
  IndexWriter& w_;
  std::vector<T> buf_;
};

}  // namespace

struct TimelineLayout::Data {
  int64_t origin = 0;
  std::vector<TrackKey> tracks;
  std::vector<uint32_t> track_of;           // event -> track
  std::vector<uint64_t> track_first_lane;   // track -> its first lane (and one past the last)
  std::vector<Lane> lanes;
  std::vector<uint32_t> slices;             // slice id -> event
  std::vector<uint32_t> slice_of;           // event -> slice id
  std::vector<uint32_t> depth;              // event -> depth on its track
  std::vector<Flow> flows;                  // by the launch's start
  std::vector<Flow> fwdbwd;                 // autograd's links, by the forward op's start
};

TimelineLayout::~TimelineLayout() = default;

TimelineLayout::TimelineLayout(const Trace& t) : t_(t), d_(std::make_unique<Data>()) {
  auto& origin = d_->origin;
  auto& tracks = d_->tracks;
  auto& track_of = d_->track_of;
  auto& track_first_lane = d_->track_first_lane;
  auto& lanes = d_->lanes;
  auto& slices = d_->slices;
  auto& slice_of = d_->slice_of;
  auto& depth = d_->depth;
  const std::size_t n = t.events.size();
  // Slice ids are 32-bit here (and 64-bit in the index): 4 billion events is far beyond any
  // trace a machine reads into memory.
  if (n >= (uint64_t{1} << 32)) throw Error("ptprof view: more than 2^32 events in one trace");
  origin = detail::earliest_time_ns(t);

  // ---- tracks ----
  std::map<TrackKey, uint32_t> track_ids;
  for (const Event& e : t.events) track_ids.emplace(TrackKey{on_gpu(e), e.pid, e.tid}, 0);
  for (auto& [key, id] : track_ids) {
    id = static_cast<uint32_t>(tracks.size());
    tracks.push_back(key);
  }
  track_of.resize(n);
  std::vector<uint32_t> per_track(tracks.size() + 1, 0);
  for (std::size_t i = 0; i < n; ++i) {
    const Event& e = t.events[i];
    track_of[i] = track_ids[TrackKey{on_gpu(e), e.pid, e.tid}];
    ++per_track[track_of[i] + 1];
  }
  std::partial_sum(per_track.begin(), per_track.end(), per_track.begin());

  // ---- each track's events by start (longest first at equal starts: parents before
  // children), and their depth: the number of still open slices when it starts ----
  std::vector<uint32_t> order(n);
  {
    std::vector<uint32_t> fill(per_track.begin(), per_track.end() - 1);
    for (std::size_t i = 0; i < n; ++i) order[fill[track_of[i]]++] = static_cast<uint32_t>(i);
  }
  auto before = [&](uint32_t a, uint32_t b) {
    const Event& x = t.events[a];
    const Event& y = t.events[b];
    if (x.start_ns != y.start_ns) return x.start_ns < y.start_ns;
    if (x.duration_ns != y.duration_ns) return x.duration_ns > y.duration_ns;
    return a < b;
  };
  auto end_of = [&](uint32_t i) {
    const Event& e = t.events[i];
    return e.start_ns + std::max<int64_t>(e.duration_ns, 0);
  };
  depth.assign(n, 0);
  std::vector<std::vector<uint32_t>> lane_sizes(tracks.size());
  {
    std::vector<uint32_t> open;
    for (std::size_t k = 0; k < tracks.size(); ++k) {
      auto first = order.begin() + per_track[k], last = order.begin() + per_track[k + 1];
      if (!std::is_sorted(first, last, before)) std::sort(first, last, before);
      open.clear();
      for (auto it = first; it != last; ++it) {
        // Only the innermost open slice is closed at a time: where ranges overlap without
        // nesting, one that ended below a longer one keeps its depth taken, so a lane never
        // holds two overlapping slices.
        while (!open.empty() && end_of(open.back()) <= t.events[*it].start_ns) open.pop_back();
        depth[*it] = static_cast<uint32_t>(open.size());
        open.push_back(*it);
        auto& sizes = lane_sizes[k];
        if (sizes.size() <= depth[*it]) sizes.resize(depth[*it] + 1, 0);
        ++sizes[depth[*it]];
      }
    }
  }

  // ---- lanes: (track, depth), and the slices' order in the columns ----
  track_first_lane.assign(tracks.size() + 1, 0);
  uint64_t pos = 0, pos64 = 0, pos4096 = 0;
  for (std::size_t k = 0; k < tracks.size(); ++k) {
    track_first_lane[k] = lanes.size();
    for (std::size_t d = 0; d < lane_sizes[k].size(); ++d) {
      Lane l;
      l.track = static_cast<uint32_t>(k);
      l.depth = static_cast<uint32_t>(d);
      l.first = pos;
      l.count = lane_sizes[k][d];
      l.max64 = pos64;
      l.max4096 = pos4096;
      pos += l.count;
      pos64 += (l.count + kBlock - 1) / kBlock;
      pos4096 += (l.count + kBlock2 - 1) / kBlock2;
      lanes.push_back(l);
    }
  }
  track_first_lane[tracks.size()] = lanes.size();
  lane_sizes.clear();
  lane_sizes.shrink_to_fit();
  slices.resize(n);
  slice_of.resize(n);
  {
    std::vector<uint64_t> fill(lanes.size());
    for (std::size_t l = 0; l < lanes.size(); ++l) fill[l] = lanes[l].first;
    for (std::size_t k = 0; k < tracks.size(); ++k)
      for (uint64_t j = per_track[k]; j < per_track[k + 1]; ++j) {
        const uint32_t e = order[j];
        const uint64_t s = fill[track_first_lane[k] + depth[e]]++;
        slices[s] = e;
        slice_of[e] = static_cast<uint32_t>(s);
      }
  }
  std::vector<uint32_t>().swap(order);

  // ---- launch flows: a launch (flow_start) and the GPU activity with its correlation ----
  auto& flows = d_->flows;
  {
    std::vector<std::pair<uint64_t, uint32_t>> starts, ends;  // correlation, event
    for (std::size_t i = 0; i < n; ++i) {
      const Event& e = t.events[i];
      if (e.flow_start) starts.emplace_back(e.correlation, static_cast<uint32_t>(i));
      if (e.flow_end) ends.emplace_back(e.correlation, static_cast<uint32_t>(i));
    }
    std::sort(starts.begin(), starts.end());
    std::sort(ends.begin(), ends.end());
    auto s = starts.begin();
    for (const auto& [corr, e] : ends) {
      while (s != starts.end() && s->first < corr) ++s;
      if (s == starts.end()) break;
      if (s->first != corr) continue;
      flows.push_back({t.events[s->second].start_ns - origin, slice_of[s->second], slice_of[e]});
    }
    std::sort(flows.begin(), flows.end(),
              [](const Flow& a, const Flow& b) { return a.start < b.start; });
  }

  // ---- autograd's links: a forward op and the backward node autograd ran for it ----
  auto& fwdbwd = d_->fwdbwd;
  for (const detail::FwdBwdLink& l : detail::fwd_bwd_links(t.events))
    fwdbwd.push_back({t.events[l.forward].start_ns - origin, slice_of[l.forward],
                      slice_of[l.backward]});
  std::sort(fwdbwd.begin(), fwdbwd.end(),
            [](const Flow& a, const Flow& b) { return a.start < b.start; });
}

void TimelineLayout::write(IndexWriter& w) const {
  const Trace& t = t_;
  const std::size_t n = t.events.size();
  const int64_t origin = d_->origin;
  const auto& tracks = d_->tracks;
  const auto& track_of = d_->track_of;
  const auto& track_first_lane = d_->track_first_lane;
  const auto& lanes = d_->lanes;
  const auto& slices = d_->slices;
  const auto& depth = d_->depth;
  const auto& flows = d_->flows;
  const auto& fwdbwd = d_->fwdbwd;
  // ---- columns ----
  w.add_column("tl.lanes", lanes);
  {
    ColumnOut<int64_t> start(w, "tl.start");
    for (uint32_t e : slices) start.push(t.events[e].start_ns - origin);
    start.close();
  }
  {
    ColumnOut<int64_t> dur(w, "tl.dur");
    for (uint32_t e : slices) dur.push(std::max<int64_t>(t.events[e].duration_ns, 0));
    dur.close();
  }
  for (uint64_t block : {kBlock, kBlock2}) {
    ColumnOut<int64_t> max(w, block == kBlock ? "tl.max64" : "tl.max4096");
    for (const Lane& l : lanes)
      for (uint64_t b = 0; b < l.count; b += block) {
        int64_t m = 0;
        for (uint64_t s = l.first + b; s < l.first + std::min(l.count, b + block); ++s)
          m = std::max(m, t.events[slices[s]].duration_ns);
        max.push(m);
      }
    max.close();
  }
  StringTableWriter names;
  {
    std::unordered_map<std::string_view, uint32_t> name_id;
    ColumnOut<uint32_t> col(w, "tl.name");
    for (uint32_t e : slices) {
      const std::string_view name = t.events[e].name;
      auto [it, inserted] = name_id.emplace(name, 0);
      if (inserted) it->second = names.add(name);
      col.push(it->second);
    }
    col.close();
  }
  names.write(w, "names");

  {
    std::vector<uint64_t> partner(flows.empty() && fwdbwd.empty() ? 0 : n, 0);
    for (const auto* list : {&flows, &fwdbwd})
      for (const Flow& f : *list) {
        partner[f.from] = f.to + 1;
        partner[f.to] = f.from + 1;
      }
    std::vector<uint64_t> offsets;
    offsets.reserve(n + 1);
    w.begin("tl.detail");
    std::string buf;
    uint64_t pos = 0;
    for (uint64_t s = 0; s < n; ++s) {
      const Event& e = t.events[slices[s]];
      SliceDetail d;
      d.kind = static_cast<uint8_t>(e.kind);
      d.flags = static_cast<uint8_t>((e.finished ? 0 : kUnfinished) | (e.is_async ? kAsync : 0));
      d.track = track_of[slices[s]];
      d.depth = depth[slices[s]];
      d.self_ns = e.self_ns;
      d.external_id = e.external_id;
      d.correlation = e.correlation;
      d.flops = e.flops;
      d.sequence_nr = e.sequence_nr;
      d.fwd_thread_id = e.fwd_thread_id;
      d.record_function_id = e.record_function_id;
      d.thread_id = e.thread_id;
      d.inputs = e.inputs;
      d.stack = e.stack;
      d.collective = e.collective;
      d.cbid = e.cbid;
      d.flow = partner.empty() ? 0 : partner[s];
      d.gpu = is_gpu(e.kind);
      if (d.gpu) {
        const KernelInfo& k = e.kernel;
        for (int i = 0; i < 3; ++i) {
          d.grid[i] = k.grid[i];
          d.block[i] = k.block[i];
        }
        d.registers_per_thread = k.registers_per_thread;
        d.shared_memory = k.shared_memory;
        d.blocks_per_sm = k.blocks_per_sm;
        d.warps_per_sm = k.warps_per_sm;
        d.occupancy_pct = k.occupancy_pct;
        d.device = e.device;
        d.stream = e.stream;
        d.queued = k.queued;
        d.context = k.context;
        d.transfer_context = e.transfer.context;
        d.bytes = e.transfer.bytes;
        d.copy_kind = e.transfer.copy_kind;
        d.src_kind = e.transfer.src_kind;
        d.dst_kind = e.transfer.dst_kind;
      }
      offsets.push_back(pos);
      const std::size_t before = buf.size();
      encode_detail(d, buf);
      pos += buf.size() - before;
      if (buf.size() >= (1 << 16)) {
        w.append(buf.data(), buf.size());
        buf.clear();
      }
    }
    offsets.push_back(pos);
    w.append(buf.data(), buf.size());
    w.end();
    w.add_column("tl.detail.at", offsets);
  }
  w.add_column("tl.flows", flows);
  w.add_column("tl.fwdbwd", fwdbwd);

  // ---- the tables the details pane decodes one entry of ----
  {
    StringTableWriter inputs, stacks, collectives;
    for (const auto& in : t.op_inputs) inputs.add(encode_inputs(in));
    for (const auto& frames : t.stacks) stacks.add(encode_stack(frames));
    for (const auto& c : t.collectives) collectives.add(encode_collective(c));
    inputs.write(w, "inputs");
    stacks.write(w, "stacks");
    collectives.write(w, "collectives");
  }

  // ---- memory counters (profile_memory), one per device ----
  const std::vector<detail::MemoryCurve> curves = detail::memory_curves(t);
  for (std::size_t c = 0; c < curves.size(); ++c) {
    const std::string p = "counter." + std::to_string(c);
    std::vector<int64_t> times(curves[c].time_ns);
    for (int64_t& x : times) x -= origin;
    w.add_column(p + ".time", times);
    w.add_column(p + ".allocated", curves[c].allocated);
    w.add_column(p + ".reserved", curves[c].reserved);
  }

  // ---- what the page needs to lay the tracks out ----
  std::map<int64_t, std::string> thread_names;
  for (const ThreadInfo& th : t.threads) thread_names[th.tid] = th.name;
  int64_t end = 0;
  for (const Event& e : t.events) end = std::max(end, e.start_ns + std::max<int64_t>(e.duration_ns, 0) - origin);
  for (const auto& c : curves)
    if (!c.time_ns.empty()) end = std::max(end, c.time_ns.back() - origin);
  JsonWriter j;
  j.begin_object();
  j.key("origin_ns").value(origin);
  j.key("end_ns").value(end);
  j.key("tracks").begin_array();
  for (std::size_t k = 0; k < tracks.size(); ++k) {
    const TrackKey& tk = tracks[k];
    j.begin_object();
    j.key("id").value(static_cast<uint64_t>(k));
    j.key("kind").value(tk.gpu ? "stream" : "thread");
    if (tk.gpu) {
      j.key("device").value(tk.pid);
      j.key("stream").value(tk.tid);
      j.key("name").value("stream " + std::to_string(tk.tid));
      j.key("group").value("GPU " + std::to_string(tk.pid));
    } else {
      j.key("pid").value(tk.pid);
      j.key("tid").value(tk.tid);
      auto it = thread_names.find(tk.tid);
      const std::string tname = it != thread_names.end() && !it->second.empty()
                                    ? it->second + " (" + std::to_string(tk.tid) + ")"
                                    : "thread " + std::to_string(tk.tid);
      j.key("name").value(tname);
      j.key("group").value((t.process_name.empty() ? std::string("process") : t.process_name) +
                           " (" + std::to_string(tk.pid) + ")");
    }
    j.key("first_lane").value(track_first_lane[k]);
    j.key("lanes").value(track_first_lane[k + 1] - track_first_lane[k]);
    j.end_object();
  }
  j.end_array();
  j.key("counters").begin_array();
  for (std::size_t c = 0; c < curves.size(); ++c) {
    j.begin_object();
    j.key("id").value(static_cast<uint64_t>(c));
    j.key("name").value("Memory " + curves[c].device);
    j.key("device").value(curves[c].device);
    j.key("peak_allocated").value(curves[c].peak_allocated);
    int64_t peak_reserved = 0;
    for (int64_t r : curves[c].reserved) peak_reserved = std::max(peak_reserved, r);
    j.key("peak_reserved").value(peak_reserved);
    j.key("points").value(static_cast<uint64_t>(curves[c].time_ns.size()));
    j.end_object();
  }
  j.end_array();
  j.key("slices").value(static_cast<uint64_t>(n));
  j.key("flows").value(static_cast<uint64_t>(flows.size()));
  j.key("fwdbwd_flows").value(static_cast<uint64_t>(fwdbwd.size()));
  j.end_object();
  w.add("tl.meta", j.buffer());
}

}  // namespace ptprof::view
