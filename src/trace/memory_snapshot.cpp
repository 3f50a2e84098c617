// MemorySnapshot: the pickle's plain data (trace/pickle_reader.h) -> the typed snapshot.
#include "ptprof/memory_snapshot.h"

#include <fstream>
#include <iterator>
#include <sstream>
#include <unordered_map>
#include <utility>

#include "ptprof/error.h"
#include "trace/pickle_reader.h"

namespace ptprof {

namespace {

using detail::PickleNode;
using Kind = PickleNode::Kind;

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::kNone: return "None";
    case Kind::kBool: return "a bool";
    case Kind::kInt: return "an int";
    case Kind::kFloat: return "a float";
    case Kind::kStr: return "a str";
    case Kind::kBytes: return "bytes";
    case Kind::kList: return "a list";
    case Kind::kTuple: return "a tuple";
    case Kind::kDict: return "a dict";
    case Kind::kGlobal: return "a global";
  }
  return "a value";
}

// Builds the snapshot, naming the field at fault in its errors ("segments[2].blocks[0].size").
class SnapshotBuilder {
 public:
  SnapshotBuilder(std::string name, std::size_t input_bytes)
      : name_(std::move(name)),
        // Memo references let a small pickle name one list many times; what is built is held
        // to what an honest snapshot of that size could hold.
        budget_(16 * input_bytes + 1024) {}

  MemorySnapshot build(const PickleNode* root) {
    if (root->kind != Kind::kDict)
      fail("", std::string("the pickle holds ") + kind_name(root->kind) +
                   ", not a snapshot's dict (segments, device_traces)");
    const PickleNode* segments = root->get("segments");
    if (!segments) fail("", "no \"segments\" key: not a CUDA memory snapshot");
    for (std::size_t i = 0; i < list(segments, "segments").size(); ++i)
      out_.segments.push_back(segment(segments->items[i], "segments[" + std::to_string(i) + "]"));
    if (const PickleNode* traces = root->get("device_traces")) {
      const auto& devices = list(traces, "device_traces");
      for (std::size_t d = 0; d < devices.size(); ++d) {
        const std::string where = "device_traces[" + std::to_string(d) + "]";
        std::vector<MemoryTraceEntry> entries;
        const auto& items = list(devices[d], where);
        for (std::size_t k = 0; k < items.size(); ++k)
          entries.push_back(entry(items[k], where + "[" + std::to_string(k) + "]"));
        out_.device_traces.push_back(std::move(entries));
      }
    }
    return std::move(out_);
  }

 private:
  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw Error("ptprof: " + name_ + ": " + (where.empty() ? "" : where + ": ") + what);
  }
  void spend(const std::string& where) {
    if (budget_ == 0)
      fail(where, "the snapshot names more entries than a file of its size holds (shared lists)");
    --budget_;
  }
  const std::vector<const PickleNode*>& list(const PickleNode* n, const std::string& where) {
    if (n->kind != Kind::kList && n->kind != Kind::kTuple)
      fail(where, std::string("expected a list, got ") + kind_name(n->kind));
    return n->items;
  }
  const PickleNode* dict(const PickleNode* n, const std::string& where) {
    if (n->kind != Kind::kDict) fail(where, std::string("expected a dict, got ") + kind_name(n->kind));
    return n;
  }
  // An int field; absent: `fallback`, or an error when required.
  int64_t integer(const PickleNode* d, const char* key, const std::string& where, bool required,
                  int64_t fallback = 0) {
    const PickleNode* v = d->get(key);
    if (!v) {
      if (required) fail(where, std::string("no \"") + key + "\" key");
      return fallback;
    }
    if (v->kind == Kind::kInt) return v->i;
    if (v->kind == Kind::kBool) return v->b ? 1 : 0;
    if (v->kind == Kind::kNone && !required) return fallback;
    fail(where + "." + key, std::string("expected an int, got ") + kind_name(v->kind) +
                                (v->kind == Kind::kFloat ? " (beyond 64 bits?)" : ""));
  }
  // A size in bytes: 0 to 2^56 (64 PiB), so that sums of them stay far from overflow.
  int64_t bytes(const PickleNode* d, const char* key, const std::string& where, bool required,
                int64_t fallback = 0) {
    const int64_t v = integer(d, key, where, required, fallback);
    if (v < 0 || v > (int64_t{1} << 56))
      fail(where + "." + key, "size " + std::to_string(v) + " is not a byte count");
    return v;
  }
  std::string_view str(const PickleNode* d, const char* key, const std::string& where,
                       bool required) {
    const PickleNode* v = d->get(key);
    if (!v) {
      if (required) fail(where, std::string("no \"") + key + "\" key");
      return {};
    }
    if (v->kind != Kind::kStr) fail(where + "." + key, std::string("expected a str, got ") + kind_name(v->kind));
    return v->s;
  }
  bool flag(const PickleNode* d, const char* key, bool fallback) {
    const PickleNode* v = d->get(key);
    if (!v) return fallback;
    if (v->kind == Kind::kBool) return v->b;
    if (v->kind == Kind::kInt) return v->i != 0;
    return fallback;
  }

  // The "frames" of a dict, interned: -1 when absent or empty.
  int32_t stack(const PickleNode* d, const std::string& where) {
    const PickleNode* frames = d->get("frames");
    if (!frames || frames->kind == Kind::kNone) return -1;
    const auto seen = by_node_.find(frames);
    if (seen != by_node_.end()) return seen->second;
    const std::string at = where + ".frames";
    const auto& items = list(frames, at);
    if (items.empty()) return by_node_[frames] = -1;
    std::vector<MemoryFrame> out;
    std::string key;
    for (std::size_t k = 0; k < items.size(); ++k) {
      const std::string fw = at + "[" + std::to_string(k) + "]";
      spend(fw);
      const PickleNode* f = dict(items[k], fw);
      MemoryFrame frame;
      frame.name = std::string(str(f, "name", fw, false));
      frame.filename = std::string(str(f, "filename", fw, false));
      frame.line = integer(f, "line", fw, false);
      key += frame.name;
      key += '\0';
      key += frame.filename;
      key += '\0';
      key += std::to_string(frame.line);
      key += '\n';
      out.push_back(std::move(frame));
    }
    auto [it, inserted] = by_content_.emplace(std::move(key), static_cast<int32_t>(out_.stacks.size()));
    if (inserted) out_.stacks.push_back(std::move(out));
    return by_node_[frames] = it->second;
  }

  MemorySegment segment(const PickleNode* n, const std::string& where) {
    spend(where);
    dict(n, where);
    MemorySegment s;
    s.device = static_cast<int>(integer(n, "device", where, true));
    if (s.device < 0 || s.device > 4096) fail(where + ".device", "device index " + std::to_string(s.device));
    s.address = static_cast<uint64_t>(integer(n, "address", where, true));
    s.total_size = bytes(n, "total_size", where, true);
    s.allocated_size = bytes(n, "allocated_size", where, false);
    s.active_size = bytes(n, "active_size", where, false);
    s.requested_size = bytes(n, "requested_size", where, false);
    s.stream = integer(n, "stream", where, false);
    s.large = str(n, "segment_type", where, false) != "small";
    s.expandable = flag(n, "is_expandable", false);
    s.stack = stack(n, where);
    if (const PickleNode* blocks = n->get("blocks")) {
      const auto& items = list(blocks, where + ".blocks");
      uint64_t address = s.address;
      for (std::size_t k = 0; k < items.size(); ++k) {
        const std::string bw = where + ".blocks[" + std::to_string(k) + "]";
        spend(bw);
        const PickleNode* b = dict(items[k], bw);
        MemoryBlock block;
        block.size = bytes(b, "size", bw, true);
        // Each block's address; where a release leaves it out, blocks tile the segment.
        block.address = static_cast<uint64_t>(integer(b, "address", bw, false, static_cast<int64_t>(address)));
        block.requested_size = bytes(b, "requested_size", bw, false, block.size);
        const std::string_view state = str(b, "state", bw, false);
        block.state = state == "active_allocated" ? MemoryBlockState::kActiveAllocated
                      : (state == "active_pending_free" || state == "active_awaiting_free")
                          ? MemoryBlockState::kActivePendingFree
                          : MemoryBlockState::kInactive;
        block.stack = stack(b, bw);
        address = block.address + static_cast<uint64_t>(block.size);
        s.blocks.push_back(block);
      }
    }
    return s;
  }

  MemoryTraceEntry entry(const PickleNode* n, const std::string& where) {
    spend(where);
    dict(n, where);
    MemoryTraceEntry e;
    const std::string_view action = str(n, "action", where, true);
    static const std::pair<std::string_view, MemoryAction> kActions[] = {
        {"alloc", MemoryAction::kAlloc},
        {"free_requested", MemoryAction::kFreeRequested},
        {"free", MemoryAction::kFreeRequested},
        {"free_completed", MemoryAction::kFreeCompleted},
        {"segment_alloc", MemoryAction::kSegmentAlloc},
        {"segment_free", MemoryAction::kSegmentFree},
        {"segment_map", MemoryAction::kSegmentMap},
        {"segment_unmap", MemoryAction::kSegmentUnmap},
        {"snapshot", MemoryAction::kSnapshot},
        {"oom", MemoryAction::kOom},
    };
    for (const auto& [name, a] : kActions)
      if (action == name) e.action = a;
    e.address = static_cast<uint64_t>(integer(n, "addr", where, false));
    e.size = bytes(n, "size", where, false);
    e.stream = integer(n, "stream", where, false);
    e.time_us = integer(n, "time_us", where, false);
    e.device_free = bytes(n, "device_free", where, false);
    e.stack = stack(n, where);
    return e;
  }

  std::string name_;
  std::size_t budget_;
  MemorySnapshot out_;
  std::unordered_map<const PickleNode*, int32_t> by_node_;
  std::unordered_map<std::string, int32_t> by_content_;
};

}  // namespace

MemorySnapshot MemorySnapshot::parse(std::string bytes, const std::string& name) {
  const std::size_t size = bytes.size();
  if (size == 0) throw Error("ptprof: " + name + ": empty file: not a CUDA memory snapshot");
  if (static_cast<uint8_t>(bytes[0]) != 0x80)
    throw Error("ptprof: " + name + ": not a pickle (a memory snapshot starts with byte 0x80)");
  auto doc = detail::read_pickle(std::move(bytes));
  if (!doc.ok()) throw Error("ptprof: " + name + ": bad pickle: " + doc.status().message());
  return SnapshotBuilder(name, size).build((*doc)->root());
}

MemorySnapshot MemorySnapshot::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("ptprof: cannot open " + path);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw Error("ptprof: cannot read " + path);
  return parse(std::move(bytes), path);
}

std::string memory_snapshot_path_for_trace(const std::string& trace_path) {
  static const char* const kSuffixes[] = {".pt.trace.json.gz", ".pt.trace.json", ".json.gz", ".json"};
  const std::size_t slash = trace_path.rfind('/');
  const std::size_t name_at = slash == std::string::npos ? 0 : slash + 1;
  for (const char* suffix : kSuffixes) {
    const std::string s(suffix);
    if (trace_path.size() >= name_at + s.size() + 1 &&
        trace_path.compare(trace_path.size() - s.size(), s.size(), s) == 0)
      return trace_path.substr(0, trace_path.size() - s.size()) + ".memory_snapshot.pickle";
  }
  return trace_path + ".memory_snapshot.pickle";
}

}  // namespace ptprof
