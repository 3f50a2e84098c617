#include "trace/trace_builder.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cmath>
#include <cstring>
#include <functional>
#include <future>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ptprof/error.h"
#include "trace/arg_lookup.h"
#include "trace/chunked.h"
#include "trace/decimal.h"
#include "trace/distributed_info.h"
#include "trace/event_boundary.h"
#include "trace/json_writer.h"
#include "trace/op_input_text.h"
#include "trace/raw_event.h"
#include "trace/strict_json.h"
#include "trace/trace_reader.h"
#include "trace/trace_vocabulary.h"

namespace ptprof::detail {

namespace {

constexpr Wide kMaxEventDuration = kMaxEventDurationNs;

// A double as the model's float: beyond float's range the cast is undefined, so infinity.
float to_float(double d) {
  constexpr double kMax = std::numeric_limits<float>::max();
  if (d > kMax) return std::numeric_limits<float>::infinity();
  if (d < -kMax) return -std::numeric_limits<float>::infinity();
  return static_cast<float>(d);
}

bool same_input(const OpInput& a, const OpInput& b) {
  return a.kind == b.kind && a.dtype == b.dtype && a.sizes == b.sizes && a.strides == b.strides &&
         a.list_sizes == b.list_sizes && a.concrete == b.concrete &&
         std::memcmp(&a.scalar, &b.scalar, sizeof(double)) == 0;
}

std::size_t hash_inputs(const OpInput* in, std::size_t n) {
  std::size_t h = n;
  auto mix = [&h](std::size_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
  const std::hash<std::string_view> hs;
  for (std::size_t i = 0; i < n; ++i) {
    mix(static_cast<std::size_t>(in[i].kind));
    mix(hs(in[i].dtype));
    for (int64_t d : in[i].sizes) mix(static_cast<std::size_t>(d));
    mix(in[i].strides.size());
    for (int64_t d : in[i].strides) mix(static_cast<std::size_t>(d));
    for (const auto& l : in[i].list_sizes) {
      mix(l.size());
      for (int64_t d : l) mix(static_cast<std::size_t>(d));
    }
    mix(hs(in[i].concrete));
  }
  return h;
}

// Whether `frames` joined with ';' is `joined`.
bool same_stack(const std::vector<std::string>& frames, std::string_view joined) {
  if (frames.empty()) return joined.empty();
  std::size_t pos = 0;
  for (std::size_t i = 0; i < frames.size(); ++i) {
    if (i > 0) {
      if (pos >= joined.size() || joined[pos] != ';') return false;
      ++pos;
    }
    if (joined.compare(pos, frames[i].size(), frames[i]) != 0) return false;
    pos += frames[i].size();
  }
  return pos == joined.size();
}

struct Flow {
  bool start;
  uint64_t id;
  int64_t pid, tid, ts;
};

// Metadata values are written into the top-level object as they are; the writer takes JSON
// text nested no deeper than its bound, one level being the top-level object.
constexpr int kMaxMetadataDepth = JsonWriter::kMaxDepth - 1;

// deviceProperties' keys as Kineto writes them (CUDA's; ROCm's extra ones are skipped).
struct DeviceField {
  std::string_view key;
  int64_t DeviceProperties::*wide;
  int32_t DeviceProperties::*narrow;
};
constexpr DeviceField kDeviceFields[] = {
    {"id", nullptr, &DeviceProperties::id},
    {"totalGlobalMem", &DeviceProperties::total_global_mem, nullptr},
    {"computeMajor", nullptr, &DeviceProperties::compute_major},
    {"computeMinor", nullptr, &DeviceProperties::compute_minor},
    {"maxThreadsPerBlock", nullptr, &DeviceProperties::max_threads_per_block},
    {"maxThreadsPerMultiprocessor", nullptr, &DeviceProperties::max_threads_per_multiprocessor},
    {"regsPerBlock", nullptr, &DeviceProperties::regs_per_block},
    {"warpSize", nullptr, &DeviceProperties::warp_size},
    {"sharedMemPerBlock", &DeviceProperties::shared_mem_per_block, nullptr},
    {"numSms", nullptr, &DeviceProperties::num_sms},
    {"regsPerMultiprocessor", nullptr, &DeviceProperties::regs_per_multiprocessor},
    {"sharedMemPerBlockOptin", &DeviceProperties::shared_mem_per_block_optin, nullptr},
    {"sharedMemPerMultiprocessor", &DeviceProperties::shared_mem_per_multiprocessor, nullptr},
};

class SecondHalf;

class TraceBuilder {
 public:
  TraceBuilder(JsonCursor& in, const ParallelRead* parallel) : in_(in), parallel_(parallel) {}

  Trace build() {
    const int c = in_.peek();
    if (c != '{')
      in_.fail_at(in_.offset(), c < 0 ? "not valid JSON: the input is empty"
                                      : "the top level is not a JSON object");
    in_.begin_object();
    bool first = true;
    std::string_view key;
    while (in_.next_member(first, key, std::string::npos)) top_level_member(key);
    in_.expect_end();
    if (!have_events_) in_.fail_at(in_.offset(), "the trace has no \"traceEvents\" array");
    finish();
    return std::move(t_);
  }

  // The second reader's part (SecondHalf): from the event at the cursor to the end of
  // traceEvents, with the first reader's base time; stops when `cancelled`.
  void second_half(bool have_base, int64_t base, const std::atomic<bool>& cancelled) {
    second_ = true;
    have_base_ = have_base;
    base_ = base;
    bool first = false;
    do {
      if (cancelled.load(std::memory_order_relaxed)) throw Error("cancelled");
      event();
      ++index_;
    } while (in_.next_element(first));
  }

 private:
  // ---- top level ---------------------------------------------------------------------------
  void top_level_member(std::string_view key) {
    in_.peek();  // errors point at the value, not the whitespace before it
    if (key == "traceEvents") {
      if (have_events_) in_.fail_at(in_.offset(), "\"traceEvents\" appears twice");
      if (in_.peek() != '[') in_.fail_at(in_.offset(), "\"traceEvents\" is not an array");
      have_events_ = true;
      events();
    } else if (key == "baseTimeNanoseconds") {
      const uint64_t at = in_.offset();
      if (have_base_) in_.fail_at(at, "\"baseTimeNanoseconds\" appears twice");
      const IntValue v = in_.peek() == '-' || is_digit(static_cast<char>(in_.peek()))
                             ? parse_int(in_.number())
                             : IntValue{};
      if (!v.has || (!v.negative && v.magnitude > static_cast<uint64_t>(kInt64Max)))
        in_.fail_at(at, "\"baseTimeNanoseconds\" is not an int64 integer");
      have_base_ = true;
      base_ = v.i64(0);
      base_offset_ = at;
      base_after_events_ = have_events_;
    } else if (key == "deviceProperties") {
      device_properties();
    } else if (key == "schemaVersion" || key == "displayTimeUnit" || key == "traceName") {
      in_.skip();  // the writer writes its own
    } else {
      // Kept as written: the writer puts it back verbatim.
      const uint64_t at = in_.offset();
      std::string& v = t_.metadata[std::string(key)];
      v.clear();
      in_.capture(v);
      if (strict_json(&v) > kMaxMetadataDepth)
        in_.fail_at(at, "a top-level value nests arrays and objects deeper than " +
                            std::to_string(kMaxMetadataDepth) + " (the most ptprof writes)");
      if (key == "distributedInfo") distributed_info();
    }
  }

  // Trace::distributed from the value just kept; the text stays in the metadata only where
  // the writer would not give it back byte for byte (keys, order or spacing of its own).
  void distributed_info() {
    auto it = t_.metadata.find("distributedInfo");
    t_.distributed = parse_distributed_info(it->second);
    if (t_.distributed && distributed_info_json(*t_.distributed) == it->second)
      t_.metadata.erase(it);
  }

  void device_properties() {
    if (in_.peek() != '[') return in_.skip();
    in_.begin_array();
    bool first = true;
    while (in_.next_element(first)) {
      if (in_.peek() != '{') {
        in_.skip();
        continue;
      }
      DeviceProperties d;
      in_.begin_object();
      bool f = true;
      std::string_view k;
      while (in_.next_member(f, k)) {
        if (k == "name") {
          if (in_.peek() == '"') {
            d.name = std::string(in_.string());
          } else {
            in_.skip();
          }
          continue;
        }
        const DeviceField* field = nullptr;
        for (const DeviceField& candidate : kDeviceFields)
          if (k == candidate.key) field = &candidate;
        if (field == nullptr) {
          in_.skip();
          continue;
        }
        const IntValue v = int_value();
        if (field->wide) d.*(field->wide) = v.i64(d.*(field->wide));
        if (field->narrow) d.*(field->narrow) = static_cast<int32_t>(v.i64(d.*(field->narrow)));
      }
      t_.devices.push_back(std::move(d));
    }
  }

  // ---- values ------------------------------------------------------------------------------
  // An integer value; anything else is skipped and gives nothing.
  IntValue int_value() {
    const int c = in_.peek();
    if (c == '-' || is_digit(static_cast<char>(c))) return parse_int(in_.number());
    in_.skip();
    return IntValue{};
  }

  // A double value, or Kineto's "inf"/"nan" strings.
  bool double_value(double* out) {
    const int c = in_.peek();
    if (c == '-' || is_digit(static_cast<char>(c))) {
      const std::string_view s = in_.number();
      const auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
      if (r.ec == std::errc::result_out_of_range)
        *out = (s[0] == '-' ? -1.0 : 1.0) * std::numeric_limits<double>::infinity();
      return true;
    }
    if (c == '"') {
      std::string_view s;
      if (!in_.short_string(16, s)) return false;
      if (s == "inf" || s == "-inf" || s == "nan") {
        *out = s == "nan" ? std::nan("")
                          : (s[0] == '-' ? -1 : 1) * std::numeric_limits<double>::infinity();
        return true;
      }
      return false;
    }
    in_.skip();
    return false;
  }

  int64_t id_value() {
    const int c = in_.peek();
    if (c == '"') {
      std::string_view s;
      return in_.short_string(64, s) ? id_from_text(s) : 0;
    }
    return int_value().i64(0);
  }

  void time_value(TimeField* f) {
    const int c = in_.peek();
    f->offset = in_.offset();
    if (c == '-' || is_digit(static_cast<char>(c))) {
      f->state = us_to_ns(in_.number(), &f->ns) ? TimeField::kOk : TimeField::kOutOfRange;
    } else {
      in_.skip();
      f->state = TimeField::kNotNumber;
    }
  }

  // Strings the trace keeps go to `out`; anything else is skipped (false).
  bool string_value(std::string* out) {
    if (in_.peek() != '"') {
      in_.skip();
      return false;
    }
    out->assign(in_.string());
    return true;
  }

  // An array of integers into `out` (other elements are skipped).
  void int_array(std::vector<int64_t>* out) {
    in_.begin_array();
    bool first = true;
    while (in_.next_element(first)) {
      const IntValue v = int_value();
      if (v.has) out->push_back(v.i64(0));
    }
  }

  void triple(int32_t out[3]) {
    if (in_.peek() != '[') return in_.skip();
    in_.begin_array();
    bool first = true;
    int i = 0;
    while (in_.next_element(first)) {
      const IntValue v = int_value();
      if (i < 3) out[i++] = static_cast<int32_t>(v.i64(0));
    }
  }

  OpInput& input(std::size_t i) {
    while (ev_.n_inputs <= i) {
      if (ev_.n_inputs == inputs_.size()) inputs_.emplace_back();
      reset_input(inputs_[ev_.n_inputs++]);
    }
    return inputs_[i];
  }

  // One of the four record_shapes lists, element i going to input i.
  void input_list(Arg which) {
    if (in_.peek() != '[') return in_.skip();
    ev_.has_inputs = true;
    in_.begin_array();
    bool first = true;
    std::size_t i = 0;
    while (in_.next_element(first)) {
      OpInput& in = input(i++);
      switch (which) {
        case Arg::kInputType:
          string_value(&in.dtype);
          break;
        case Arg::kConcreteInputs:
          string_value(&in.concrete);
          break;
        case Arg::kInputStrides:
          if (in_.peek() == '[') {
            int_array(&in.strides);
          } else {
            in_.skip();
          }
          break;
        default: {  // dims: a tensor's sizes, or a list of them for a TensorList
          if (in_.peek() != '[') {
            in_.skip();
            break;
          }
          in_.begin_array();
          bool f = true;
          while (in_.next_element(f)) {
            if (in_.peek() == '[') {
              in.list_sizes.emplace_back();
              int_array(&in.list_sizes.back());
            } else {
              const IntValue v = int_value();
              if (v.has) in.sizes.push_back(v.i64(0));
            }
          }
        }
      }
    }
  }

  void args() {
    if (in_.peek() != '{') return in_.skip();
    ev_.has_args = true;
    in_.begin_object();
    bool first = true;
    std::string_view key;
    while (in_.next_member(first, key)) {
      const Arg a = arg_of(key);
      switch (a) {
        case Arg::kUnknown:
          in_.skip();
          break;
        case Arg::kInputDims:
        case Arg::kInputType:
        case Arg::kInputStrides:
        case Arg::kConcreteInputs:
          input_list(a);
          break;
        case Arg::kCallStack:
          ev_.has_stack = string_value(&ev_.stack);
          break;
        case Arg::kCapturedBy:
          ev_.has_captured_by = string_value(&ev_.captured_by);
          break;
        case Arg::kCaptureRanges:
          ev_.has_capture_ranges = string_value(&ev_.capture_ranges);
          break;
        case Arg::kCollName:
        case Arg::kDtype:
        case Arg::kInSplit:
        case Arg::kOutSplit:
        case Arg::kPgName:
        case Arg::kPgDesc:
        case Arg::kPgRanks: {
          CollectiveInfo& c = ev_.coll;
          std::string* to = a == Arg::kCollName   ? &c.name
                            : a == Arg::kDtype    ? &c.dtype
                            : a == Arg::kInSplit  ? &c.in_split
                            : a == Arg::kOutSplit ? &c.out_split
                            : a == Arg::kPgName   ? &c.pg_name
                            : a == Arg::kPgDesc   ? &c.pg_desc
                                                  : &c.pg_ranks;
          ev_.has_coll |= string_value(to);
          break;
        }
        case Arg::kInNelems:
        case Arg::kOutNelems:
        case Arg::kGroupSize:
        case Arg::kRank:
        case Arg::kGlobalRankStart:
        case Arg::kGlobalRankStride:
        case Arg::kSeq:
          ev_.ints[static_cast<int>(a)] = int_value();
          ev_.has_coll |= ev_.ints[static_cast<int>(a)].has;
          break;
        case Arg::kName:
        case Arg::kLabels:
          ev_.has_text = string_value(&ev_.text);
          break;
        case Arg::kFinished:
          if (in_.peek() == 't' || in_.peek() == 'f') {
            ev_.has_finished = true;
            ev_.finished = in_.boolean();
          } else {
            in_.skip();
          }
          break;
        case Arg::kBlocksPerSm:
        case Arg::kWarpsPerSm: {
          const int i = a == Arg::kBlocksPerSm ? 0 : 1;
          ev_.has_double[i] = double_value(&ev_.doubles[i]);
          break;
        }
        case Arg::kGrid:
          triple(ev_.grid);
          break;
        case Arg::kBlock:
          triple(ev_.block);
          break;
        default:
          ev_.ints[static_cast<int>(a)] = int_value();
          break;
      }
    }
  }

  // ---- traceEvents -------------------------------------------------------------------------
  void events();  // after SecondHalf

  std::string where() const { return "traceEvents[" + std::to_string(index_) + "]"; }

  void event() {
    const int c = in_.peek();
    const uint64_t at = in_.offset();
    if (c != '{') in_.fail_at(at, where() + " is not an object");
    ev_.reset();
    in_.begin_object();
    bool first = true;
    std::string_view key;
    while (in_.next_member(first, key)) {
      switch (key.size()) {
        case 2:
          if (key == "ph") {
            std::string_view s;
            ev_.ph = 0;  // not one character: no phase the model knows
            if (in_.peek() != '"') {
              in_.skip();
            } else if (in_.short_string(1, s) && s.size() == 1) {
              ev_.ph = s[0];
            }
            continue;
          }
          if (key == "ts") {
            time_value(&ev_.ts);
            continue;
          }
          if (key == "id") {
            ev_.id = int_value();
            continue;
          }
          break;
        case 3:
          if (key == "cat") {
            std::string_view s;
            ev_.has_cat = false;
            if (in_.peek() == '"') {
              ev_.has_cat = true;
              // Longer than any category: kept only as "some string", matched by nothing.
              if (in_.short_string(64, s)) {
                ev_.cat.resize(s.size());
                for (std::size_t i = 0; i < s.size(); ++i) ev_.cat[i] = lower(s[i]);
              } else {
                ev_.cat.assign("?");
              }
            } else {
              in_.skip();
            }
            continue;
          }
          if (key == "pid") {
            ev_.has_pid = true;
            ev_.pid = id_value();
            continue;
          }
          if (key == "tid") {
            ev_.tid = id_value();
            continue;
          }
          if (key == "dur") {
            time_value(&ev_.dur);
            continue;
          }
          break;
        case 4:
          if (key == "name") {
            ev_.has_name = string_value(&ev_.name);
            continue;
          }
          if (key == "args") {
            args();
            continue;
          }
          break;
        default:
          break;
      }
      in_.skip();
    }
    switch (ev_.ph) {
      case 'X':
        complete_event(at);
        break;
      case 'i':
        if (ev_.has_name && ev_.name == "[memory]") memory_event(at);
        break;
      case 's':
      case 'f':
        flow_event();
        break;
      case 'M':
        metadata_event();
        break;
      default:
        break;
    }
  }

  // baseTimeNanoseconds + ts as an int64 ns time (the base is 0 until it is read; where it
  // comes after traceEvents, finish() adds it).
  int64_t time_of(const TimeField& f, const char* field) {
    if (f.state == TimeField::kNotNumber)
      in_.fail_at(f.offset, where() + ": \"" + field + "\" is not a number");
    if (f.state == TimeField::kOutOfRange)
      in_.fail_at(f.offset, where() + ": \"" + field + "\" is out of range");
    const Wide t = Wide{base_} + f.ns;
    if (t < kInt64Min || t > kInt64Max)
      in_.fail_at(f.offset, where() + ": \"" + field +
                                "\" is out of range: baseTimeNanoseconds + ts is not an int64 "
                                "ns time");
    note_time(t, f.offset);
    return static_cast<int64_t>(t);
  }

  // start + dur, dur non-negative, the end an int64 ns time.
  int64_t end_of(int64_t start, const TimeField& f, bool bounded) {
    if (f.state == TimeField::kNotNumber)
      in_.fail_at(f.offset, where() + ": \"dur\" is not a number");
    const Wide d = f.ns;
    if (f.state == TimeField::kOutOfRange)
      in_.fail_at(f.offset, where() + ": \"dur\" is out of range");
    if (d < 0) in_.fail_at(f.offset, where() + ": \"dur\" is negative");
    if ((bounded && d > kMaxEventDuration) || Wide{start} + d > kInt64Max)
      in_.fail_at(f.offset, where() + ": \"dur\" is out of range");
    const Wide end = Wide{start} + d;
    note_time(end, f.offset);
    return static_cast<int64_t>(end);
  }

  // The earliest and latest times seen, for adding a base that comes after the events.
  void note_time(Wide t, uint64_t offset) {
    if (have_base_) return;
    if (t < min_time_) {
      min_time_ = t;
      min_time_at_ = offset;
    }
    if (t > max_time_) {
      max_time_ = t;
      max_time_at_ = offset;
    }
  }

  void complete_event(uint64_t at) {
    if (!ev_.has_cat) in_.fail_at(at, where() + " (an X event) has no \"cat\" string");
    if (!ev_.has_name) in_.fail_at(at, where() + " has no \"name\" string");
    if (ev_.ts.state == TimeField::kAbsent || ev_.dur.state == TimeField::kAbsent)
      in_.fail_at(at, where() + " lacks \"ts\" or \"dur\"");
    if (ev_.cat == "trace") {
      window_start_ = time_of(ev_.ts, "ts");
      window_end_ = end_of(window_start_, ev_.dur, false);
      have_window_ = true;
      const std::string_view n = ev_.name;
      const auto open = n.rfind(" (");
      if (open != std::string_view::npos && n.size() > open + 3 && n.back() == ')')
        window_index_ = parse_int(n.substr(open + 2, n.size() - open - 3)).i64(0);
      return;
    }
    if (ev_.cat == "python_function") {
      python_function();
      return;
    }
    EventKind kind;
    if (!kind_of(ev_.cat, &kind)) return;
    // What the legacy categories merged, which ptprof's tensorboard layout writes too
    // (Trace::SaveOptions::tensorboard): a driver call is "cu" and a capital ("cuLaunchKernel"),
    // a runtime call "cuda..."; steps and data-loader ranges are user ranges.
    if (kind == EventKind::CudaRuntime && ev_.cat == "runtime" && ev_.name.size() > 2 &&
        ev_.name[0] == 'c' && ev_.name[1] == 'u' && ev_.name[2] >= 'A' && ev_.name[2] <= 'Z')
      kind = EventKind::CudaDriver;
    if (kind == EventKind::CpuOp && (is_step_name(ev_.name) || is_dataloader_name(ev_.name)))
      kind = EventKind::UserAnnotation;
    Event e;
    e.kind = kind;
    e.name = t_.intern(ev_.name);
    e.start_ns = time_of(ev_.ts, "ts");
    e.duration_ns = end_of(e.start_ns, ev_.dur, true) - e.start_ns;
    e.pid = ev_.pid;
    e.tid = ev_.tid;
    e.external_id = ev_.arg(Arg::kExternalId).u64(0);
    e.correlation = ev_.arg(Arg::kCorrelation).u64(0);
    e.record_function_id = ev_.arg(Arg::kRecordFunctionId).u64(0);
    e.sequence_nr = ev_.arg(Arg::kSequenceNumber).i64(-1);
    e.fwd_thread_id = ev_.arg(Arg::kFwdThreadId).u64(0);
    e.finished = !ev_.has_finished || ev_.finished;
    e.flops = ev_.arg(Arg::kFlops).u64(0);
    e.cbid = static_cast<int32_t>(ev_.arg(Arg::kCbid).i64(0));
    e.device = static_cast<int32_t>(ev_.arg(Arg::kDevice).i64(-1));
    e.stream = ev_.arg(Arg::kStream).i64(-1);
    const uint32_t context = static_cast<uint32_t>(ev_.arg(Arg::kContext).u64(0));
    if (kind == EventKind::Kernel) {
      KernelInfo& k = e.kernel;
      std::copy(ev_.grid, ev_.grid + 3, k.grid);
      std::copy(ev_.block, ev_.block + 3, k.block);
      k.registers_per_thread = static_cast<int32_t>(ev_.arg(Arg::kRegisters).i64(0));
      k.shared_memory = static_cast<int32_t>(ev_.arg(Arg::kSharedMemory).i64(0));
      k.context = context;
      k.queued = ev_.arg(Arg::kQueued).i64(0);
      if (ev_.has_double[0]) k.blocks_per_sm = to_float(ev_.doubles[0]);
      if (ev_.has_double[1]) k.warps_per_sm = to_float(ev_.doubles[1]);
      k.occupancy_pct = static_cast<int32_t>(ev_.arg(Arg::kOccupancy).i64(0));
    } else if (kind == EventKind::Memcpy || kind == EventKind::Memset) {
      e.transfer.bytes = ev_.arg(Arg::kBytes).u64(0);
      e.transfer.context = context;
      transfer_kinds_from_name(kind, e.name, &e.transfer);
    }
    if (ev_.has_inputs) e.inputs = inputs_index();
    if (ev_.has_stack) e.stack = stack_index(ev_.stack);
    // Kineto always names the collective; a lone "dtype" or "Rank" of some other op is not one.
    if (ev_.has_coll && !ev_.coll.name.empty() &&
        (kind == EventKind::CpuOp || kind == EventKind::Kernel ||
         kind == EventKind::UserAnnotation)) {
      CollectiveInfo c = std::move(ev_.coll);
      c.in_nelems = ev_.arg(Arg::kInNelems).i64(-1);
      c.out_nelems = ev_.arg(Arg::kOutNelems).i64(-1);
      c.group_size = ev_.arg(Arg::kGroupSize).i64(-1);
      c.rank = ev_.arg(Arg::kRank).i64(-1);
      c.global_rank_start = ev_.arg(Arg::kGlobalRankStart).i64(-1);
      c.global_rank_stride = ev_.arg(Arg::kGlobalRankStride).i64(-1);
      c.seq = ev_.arg(Arg::kSeq).i64(-1);
      e.collective = static_cast<int32_t>(t_.collectives.size());
      t_.collectives.push_back(std::move(c));
    }
    if (ev_.arg(Arg::kGraphId).has && (kind == EventKind::Kernel || kind == EventKind::Memcpy ||
                                       kind == EventKind::Memset))
      e.graph_node = graph_node_index();
    int64_t step;
    if (kind == EventKind::UserAnnotation && step_number(e.name, &step)) steps_.push_back(step);
    events_.push(e);
  }

  // The event's CUDA graph node, one entry per distinct node and capture (replays share it).
  int32_t graph_node_index() {
    GraphNodeInfo g;
    g.graph_id = static_cast<uint32_t>(ev_.arg(Arg::kGraphId).u64(0));
    g.node_id = ev_.arg(Arg::kGraphNode).u64(0);
    std::string key = std::to_string(g.graph_id) + '/' + std::to_string(g.node_id);
    if (ev_.has_captured_by) key += '\0' + ev_.captured_by;
    if (ev_.has_capture_ranges) key += '\1' + ev_.capture_ranges;
    auto [it, fresh] = graph_nodes_.try_emplace(std::move(key), 0);
    if (!fresh) return it->second;
    if (ev_.has_captured_by) g.captured_by = t_.intern(ev_.captured_by);
    if (ev_.has_capture_ranges) {
      std::string_view rest = ev_.capture_ranges;
      while (!rest.empty()) {
        const std::size_t semi = rest.find(';');
        const std::string_view r = rest.substr(0, semi);
        if (!r.empty()) g.capture_ranges.push_back(t_.intern(r));
        if (semi == std::string_view::npos) break;
        rest.remove_prefix(semi + 1);
      }
    }
    it->second = static_cast<int32_t>(t_.graph_nodes.size());
    t_.graph_nodes.push_back(std::move(g));
    return it->second;
  }

  // torch.profiler's Python tracer: kept for the report's torch rules (Trace::python_functions).
  void python_function() {
    PythonFunction p;
    p.name = t_.intern(ev_.name);
    p.start_ns = time_of(ev_.ts, "ts");
    p.duration_ns = end_of(p.start_ns, ev_.dur, true) - p.start_ns;
    p.pid = ev_.pid;
    p.tid = ev_.tid;
    python_functions_.push(p);
  }

  void memory_event(uint64_t at) {
    if (!ev_.has_args || ev_.ts.state == TimeField::kAbsent)
      in_.fail_at(at, where() + " ([memory]) lacks \"args\" or \"ts\"");
    MemoryEvent m;
    m.time_ns = time_of(ev_.ts, "ts");
    m.pid = ev_.pid;
    m.tid = ev_.tid;
    m.address = ev_.arg(Arg::kAddr).u64(0);
    m.bytes = ev_.arg(Arg::kMemBytes).i64(0);
    m.total_allocated = ev_.arg(Arg::kTotalAllocated).i64(0);
    m.total_reserved = ev_.arg(Arg::kTotalReserved).i64(0);
    m.device_type = static_cast<int8_t>(ev_.arg(Arg::kDeviceType).i64(0));
    m.device_index = static_cast<int8_t>(ev_.arg(Arg::kDeviceId).i64(-1));
    memory_events_.push(m);
  }

  void flow_event() {
    if (!ev_.has_cat || !ev_.id.has || ev_.ts.state == TimeField::kAbsent) return;
    if (ev_.cat == "fwdbwd") return fwdbwd_flow();
    if (!is_launch_flow(ev_.cat)) return;
    Flow f{ev_.ph == 's', ev_.id.u64(0), ev_.pid, ev_.tid, time_of(ev_.ts, "ts")};
    if (second_ && events_.size() == 0) return head_flows_.push_back({false, f, {}, index_});
    // Kineto and ptprof write a flow right after the event it starts or ends.
    if (Event* e = events_.last(); e && attach(*e, f)) return;
    pending_flows_.push_back(f);
  }

  // A forward/backward link's end, kept only for the logical thread ids it implies
  // (take_logical_threads); the writer draws the links again (fwd_bwd.h). Kineto writes it
  // right after its op.
  void fwdbwd_flow() {
    if (second_ && events_.size() == 0)
      return head_flows_.push_back(
          {true, Flow{ev_.ph == 's', ev_.id.u64(0), ev_.pid, ev_.tid, 0}, ev_.ts, index_});
    const Event* e = events_.last();
    if (e == nullptr || e->pid != ev_.pid || e->tid != ev_.tid ||
        e->start_ns != time_of(ev_.ts, "ts"))
      return;
    fwdbwd_.push_back({ev_.id.u64(0), events_.size() - 1, ev_.ph == 's'});
  }

  static bool attach(Event& e, const Flow& f) {
    if (e.correlation != f.id || e.pid != f.pid || e.tid != f.tid || e.start_ns != f.ts)
      return false;
    (f.start ? e.flow_start : e.flow_end) = true;
    return true;
  }

  void metadata_event() {
    if (!ev_.has_name || !ev_.has_text || !ev_.has_pid) return;
    if (ev_.name == "process_name") {
      process_names_.emplace_back(ev_.pid, ev_.text);
    } else if (ev_.name == "process_labels") {
      process_labels_.emplace_back(ev_.pid, ev_.text);
    } else if (ev_.name == "thread_name" && ev_.text.rfind("stream ", 0) != 0) {
      thread_names_.push_back({ev_.pid, ev_.tid, ev_.text});
    }
  }

  // ---- shared tables -----------------------------------------------------------------------
  // Equal lists share one Trace::op_inputs entry, as the session shares them.
  int32_t inputs_index() {
    for (std::size_t i = 0; i < ev_.n_inputs; ++i) finish_input(inputs_[i]);
    return inputs_index(inputs_.data(), ev_.n_inputs);
  }

  int32_t inputs_index(const OpInput* in, std::size_t n) {
    const std::size_t h = hash_inputs(in, n);
    auto [it, inserted] = inputs_heads_.try_emplace(h, -1);
    // A bounded walk: crafted collisions cost a duplicate entry, never quadratic time.
    int probes = 0;
    for (int32_t i = it->second; i >= 0 && probes < 8; i = inputs_next_[i], ++probes) {
      const auto& known = t_.op_inputs[i];
      if (known.size() == n && std::equal(known.begin(), known.end(), in, same_input)) return i;
    }
    const auto index = static_cast<int32_t>(t_.op_inputs.size());
    t_.op_inputs.emplace_back(in, in + n);
    inputs_next_.push_back(it->second);
    it->second = index;
    return index;
  }

  int32_t stack_index(std::string_view joined) {
    const std::size_t h = std::hash<std::string_view>()(joined);
    auto [it, inserted] = stack_heads_.try_emplace(h, -1);
    int probes = 0;
    for (int32_t i = it->second; i >= 0 && probes < 8; i = stack_next_[i], ++probes)
      if (same_stack(t_.stacks[i], joined)) return i;
    const auto index = static_cast<int32_t>(t_.stacks.size());
    std::vector<std::string> frames;
    if (!joined.empty()) {
      for (std::size_t pos = 0;;) {
        const auto semi = joined.find(';', pos);
        frames.emplace_back(joined.substr(pos, semi - pos));
        if (semi == std::string_view::npos) break;
        pos = semi + 1;
      }
    }
    t_.stacks.push_back(std::move(frames));
    stack_next_.push_back(it->second);
    it->second = index;
    return index;
  }

  // ---- the second reader's events -----------------------------------------------------------
  // Takes what the second reader read from where this one stands, as if this one had read
  // it: its tables' entries found in this one's (or added), its events' indexes into them
  // mapped, its lists appended after this one's.
  void absorb(TraceBuilder& b) {
    // Flows before its first event follow this reader's last one: as event() would take them.
    const uint64_t here = index_;
    for (const HeadFlow& h : b.head_flows_) {
      index_ = here + h.index;
      const Event* e = events_.last();
      if (!h.fwdbwd) {
        if (e == nullptr || !attach(*events_.last(), h.flow)) pending_flows_.push_back(h.flow);
      } else if (e != nullptr && e->pid == h.flow.pid && e->tid == h.flow.tid &&
                 e->start_ns == time_of(h.ts, "ts")) {
        fwdbwd_.push_back({h.flow.id, events_.size() - 1, h.flow.start});
      }
    }
    index_ = here + b.index_;
    // The earliest and latest times: the first seen of equal ones, as note_time keeps them.
    if (b.min_time_ < min_time_ || (b.min_time_ == min_time_ && b.min_time_at_ < min_time_at_)) {
      min_time_ = b.min_time_;
      min_time_at_ = b.min_time_at_;
    }
    if (b.max_time_ > max_time_ || (b.max_time_ == max_time_ && b.max_time_at_ < max_time_at_)) {
      max_time_ = b.max_time_;
      max_time_at_ = b.max_time_at_;
    }

    std::vector<int32_t> inputs(b.t_.op_inputs.size());
    for (std::size_t i = 0; i < inputs.size(); ++i)
      inputs[i] = inputs_index(b.t_.op_inputs[i].data(), b.t_.op_inputs[i].size());
    std::vector<int32_t> stacks(b.t_.stacks.size());
    std::string joined;
    for (std::size_t i = 0; i < stacks.size(); ++i) {
      joined.clear();
      for (const std::string& f : b.t_.stacks[i]) (joined.empty() ? joined : joined += ';') += f;
      stacks[i] = stack_index(joined);
    }
    const auto collectives = static_cast<int32_t>(t_.collectives.size());
    for (CollectiveInfo& c : b.t_.collectives) t_.collectives.push_back(std::move(c));
    // Names: the second reader's interned views, each interned here once.
    std::unordered_map<const char*, std::string_view> names;
    auto name = [&](std::string_view v) {
      if (v.data() == nullptr) return v;
      auto [it, fresh] = names.try_emplace(v.data());
      if (fresh) it->second = t_.intern(v);
      return it->second;
    };
    std::vector<const std::string*> node_keys(b.t_.graph_nodes.size());
    for (const auto& [key, i] : b.graph_nodes_) node_keys[static_cast<std::size_t>(i)] = &key;
    std::vector<int32_t> nodes(node_keys.size());
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      auto [it, fresh] = graph_nodes_.try_emplace(*node_keys[i], 0);
      if (fresh) {
        GraphNodeInfo g = std::move(b.t_.graph_nodes[i]);
        g.captured_by = name(g.captured_by);
        for (std::string_view& r : g.capture_ranges) r = name(r);
        it->second = static_cast<int32_t>(t_.graph_nodes.size());
        t_.graph_nodes.push_back(std::move(g));
      }
      nodes[i] = it->second;
    }

    b.events_.for_each([&](Event& e) {
      e.name = name(e.name);
      if (e.inputs >= 0) e.inputs = inputs[static_cast<std::size_t>(e.inputs)];
      if (e.stack >= 0) e.stack = stacks[static_cast<std::size_t>(e.stack)];
      if (e.collective >= 0) e.collective += collectives;
      if (e.graph_node >= 0) e.graph_node = nodes[static_cast<std::size_t>(e.graph_node)];
    });
    for (FwdBwdEnd f : b.fwdbwd_) {
      f.event += events_.size();
      fwdbwd_.push_back(f);
    }
    events_.append(std::move(b.events_));
    memory_events_.append(std::move(b.memory_events_));
    b.python_functions_.for_each([&](PythonFunction& p) { p.name = name(p.name); });
    python_functions_.append(std::move(b.python_functions_));
    pending_flows_.insert(pending_flows_.end(), b.pending_flows_.begin(), b.pending_flows_.end());
    steps_.insert(steps_.end(), b.steps_.begin(), b.steps_.end());
    for (auto& p : b.process_names_) process_names_.push_back(std::move(p));
    for (auto& p : b.process_labels_) process_labels_.push_back(std::move(p));
    for (auto& th : b.thread_names_) thread_names_.push_back(std::move(th));
    if (b.have_window_) {
      have_window_ = true;
      window_start_ = b.window_start_;
      window_end_ = b.window_end_;
      window_index_ = b.window_index_;
    }
  }

  // ---- after the document ------------------------------------------------------------------
  void finish() {
    events_.move_into(t_.events);
    memory_events_.move_into(t_.memory_events);
    python_functions_.move_into(t_.python_functions);
    if (base_after_events_) rebase();
    resolve_pending_flows();
    take_logical_threads();
    if (have_window_) {
      t_.window_start_ns = window_start_;
      t_.window_end_ns = window_end_;
      t_.window_index = window_index_;
    } else if (!t_.events.empty()) {
      // From the first event, not 0: a trace can lie before 1970.
      t_.window_start_ns = t_.events.front().start_ns;
      t_.window_end_ns = t_.events.front().start_ns + t_.events.front().duration_ns;
      for (const Event& e : t_.events) {
        t_.window_start_ns = std::min(t_.window_start_ns, e.start_ns);
        t_.window_end_ns = std::max(t_.window_end_ns, e.start_ns + e.duration_ns);
      }
    }
    std::sort(steps_.begin(), steps_.end());
    steps_.erase(std::unique(steps_.begin(), steps_.end()), steps_.end());
    t_.steps = std::move(steps_);
    process_and_threads();
    special_metadata();
    t_.rebuild_tree();
    t_.attribute_memory();
  }

  // baseTimeNanoseconds after traceEvents (Kineto from 2024-05 to 2025-03): the times were
  // read as offsets, which must fit int64 themselves; the base moves them all.
  void rebase() {
    if (base_ == 0) return;
    if (Wide{base_} + min_time_ < kInt64Min)
      in_.fail_at(min_time_at_, "baseTimeNanoseconds (at byte " + std::to_string(base_offset_) +
                                    ") + this time is not an int64 ns time");
    if (Wide{base_} + max_time_ > kInt64Max)
      in_.fail_at(max_time_at_, "baseTimeNanoseconds (at byte " + std::to_string(base_offset_) +
                                    ") + this time is not an int64 ns time");
    for (Event& e : t_.events) e.start_ns += base_;
    for (MemoryEvent& m : t_.memory_events) m.time_ns += base_;
    for (PythonFunction& p : t_.python_functions) p.start_ns += base_;
    for (Flow& f : pending_flows_) f.ts += base_;
    window_start_ += base_;
    window_end_ += base_;
  }

  // Traces carry no logical (RecordFunction) thread ids, which the forward/backward links
  // are drawn from: a link's forward op ran on the thread its backward node names, and so did
  // every op of that OS thread.
  void take_logical_threads() {
    if (fwdbwd_.empty()) return;
    std::unordered_map<uint64_t, std::size_t> forward_of;  // link id -> forward op
    for (const FwdBwdEnd& f : fwdbwd_)
      if (f.start) forward_of.emplace(f.id, f.event);
    std::map<std::pair<int64_t, int64_t>, uint64_t> logical;  // (pid, tid) -> logical id
    for (const FwdBwdEnd& f : fwdbwd_) {
      auto it = forward_of.find(f.id);
      if (f.start || it == forward_of.end()) continue;
      const Event& backward = t_.events[f.event];
      const Event& forward = t_.events[it->second];
      if (backward.fwd_thread_id != 0)
        logical.emplace(std::make_pair(forward.pid, forward.tid), backward.fwd_thread_id);
    }
    for (Event& e : t_.events) {
      if (e.thread_id != 0 || (e.kind != EventKind::CpuOp && e.kind != EventKind::UserAnnotation))
        continue;
      auto it = logical.find({e.pid, e.tid});
      if (it != logical.end()) e.thread_id = it->second;
    }
  }

  // Flows that did not follow their event: matched by correlation id.
  void resolve_pending_flows() {
    if (pending_flows_.empty()) return;
    std::unordered_multimap<uint64_t, std::size_t> wanted;  // correlation -> flow
    for (std::size_t i = 0; i < pending_flows_.size(); ++i) wanted.emplace(pending_flows_[i].id, i);
    for (Event& e : t_.events) {
      auto range = wanted.equal_range(e.correlation);
      for (auto it = range.first; it != range.second; ++it) attach(e, pending_flows_[it->second]);
    }
  }

  void process_and_threads() {
    const std::string* name = nullptr;
    bool found = false;
    for (const auto& [pid, label] : process_labels_) {
      if (label == "CPU") {
        t_.pid = pid;
        found = true;
        break;
      }
    }
    if (!found && !process_names_.empty()) {
      t_.pid = process_names_.front().first;
      found = true;
    }
    if (!found) {
      for (const Event& e : t_.events) {
        if (e.kind == EventKind::CpuOp || e.kind == EventKind::UserAnnotation) {
          t_.pid = e.pid;
          break;
        }
      }
    }
    for (const auto& [pid, n] : process_names_) {
      if (pid == t_.pid) {
        name = &n;
        break;
      }
    }
    if (name) t_.process_name = *name;
    for (const ThreadName& th : thread_names_) {
      if (th.pid != t_.pid) continue;
      // "thread <tid> (<name>)", as Kineto and ptprof label threads.
      std::string_view label = th.label;
      const std::string prefix = "thread " + std::to_string(th.tid) + " (";
      if (label.size() > prefix.size() && label.compare(0, prefix.size(), prefix) == 0 &&
          label.back() == ')')
        label = label.substr(prefix.size(), label.size() - prefix.size() - 1);
      t_.threads.push_back(ThreadInfo{th.tid, 0, std::string(label)});
    }
  }

  // ptprof's own metadata, which also has a field of its own in the model.
  void special_metadata() {
    auto it = t_.metadata.find("ptprof_gpu_unavailable");
    if (it != t_.metadata.end()) {
      MemorySource src(it->second);
      JsonCursor c(src, in_.what() + " (ptprof_gpu_unavailable)");
      if (c.peek() == '"') t_.gpu_unavailable_reason = std::string(c.string());
    }
    it = t_.metadata.find("ptprof_dropped_events");
    if (it != t_.metadata.end()) {
      MemorySource src(it->second);
      JsonCursor c(src, in_.what() + " (ptprof_dropped_events)");
      if (c.peek() != '{') return;
      c.begin_object();
      bool first = true;
      std::string_view key;
      while (c.next_member(first, key)) {
        std::string k(key);
        const int ch = c.peek();
        if (ch == '-' || is_digit(static_cast<char>(ch))) {
          const IntValue v = parse_int(c.number());
          if (v.has && !v.negative) {
            t_.dropped_by_kind[k] = v.magnitude;
            t_.dropped_events += v.magnitude;
          }
        } else {
          c.skip();
        }
      }
    }
  }

  struct ThreadName {
    int64_t pid, tid;
    std::string label;
  };

  JsonCursor& in_;
  const ParallelRead* parallel_;
  bool second_ = false;  // the second reader of a parallel read
  // The second reader's flows before its first event: they may follow the first's last one.
  struct HeadFlow {
    bool fwdbwd;
    Flow flow;     // a launch flow's whole; a fwdbwd one's but the time, which is `ts`
    TimeField ts;  // read only where the serial reader would read it (fwdbwd_flow)
    uint64_t index;
  };
  std::vector<HeadFlow> head_flows_;
  Trace t_;
  RawEvent ev_;
  std::vector<OpInput> inputs_;  // the current event's, reused
  uint64_t index_ = 0;           // of the current element of traceEvents
  bool have_events_ = false;
  bool have_base_ = false;
  bool base_after_events_ = false;
  int64_t base_ = 0;
  uint64_t base_offset_ = 0;
  Wide min_time_ = kInt64Max;
  Wide max_time_ = kInt64Min;
  uint64_t min_time_at_ = 0;
  uint64_t max_time_at_ = 0;
  bool have_window_ = false;
  int64_t window_start_ = 0;
  int64_t window_end_ = 0;
  int64_t window_index_ = 0;
  Chunked<Event> events_;
  Chunked<MemoryEvent> memory_events_;
  Chunked<PythonFunction> python_functions_;
  std::vector<Flow> pending_flows_;
  struct FwdBwdEnd {
    uint64_t id;
    std::size_t event;  // its op's position in the trace's events
    bool start;
  };
  std::vector<FwdBwdEnd> fwdbwd_;
  std::vector<int64_t> steps_;
  std::vector<std::pair<int64_t, std::string>> process_names_;
  std::vector<std::pair<int64_t, std::string>> process_labels_;
  std::vector<ThreadName> thread_names_;
  std::unordered_map<std::size_t, int32_t> inputs_heads_;
  std::vector<int32_t> inputs_next_;
  std::unordered_map<std::size_t, int32_t> stack_heads_;
  std::vector<int32_t> stack_next_;
  std::unordered_map<std::string, int32_t> graph_nodes_;  // see graph_node_index()
};

// The second thread of a parallel read: from the first event it finds after a byte offset to
// the end of traceEvents, into a builder of its own, which the first reader absorbs when it
// arrives exactly at that event. Where it never does (the offset fell inside an event, or
// traceEvents ended first), or the second reader failed, the first reads on itself: the
// Trace, and any error, are the same as one reader's.
class SecondHalf {
 public:
  SecondHalf(std::unique_ptr<ByteSource> source, const std::string& what, uint64_t from,
             bool have_base, int64_t base)
      : source_(std::move(source)), cursor_(*source_, what) {
    std::future<uint64_t> start = start_.get_future();
    thread_ = std::thread([this, from, have_base, base] {
      bool told = false;
      try {
        const uint64_t at = guess_event_start(*source_, from);
        if (at != 0) {
          cursor_.seek(at);
          builder_ = std::make_unique<TraceBuilder>(cursor_, nullptr);
        }
        told = true;
        start_.set_value(at != 0 ? at : UINT64_MAX);
        if (at == 0) return;
        builder_->second_half(have_base, base, cancelled_);
        end_ = cursor_.offset();
        ok_ = true;
      } catch (...) {  // the first reader reads it, and says what is wrong
        if (!told) start_.set_value(UINT64_MAX);
      }
    });
    // Known before the first reader goes on, so that it cannot pass it unknowing: the guess
    // reads a MiB at most.
    start_at_ = start.get();
  }
  ~SecondHalf() {
    cancelled_ = true;
    if (thread_.joinable()) thread_.join();
  }
  SecondHalf(const SecondHalf&) = delete;
  SecondHalf& operator=(const SecondHalf&) = delete;

  // Where its first event is; UINT64_MAX where it found none.
  uint64_t start() const { return start_at_; }
  // Waits for it: its builder, or null where it failed.
  TraceBuilder* join() {
    thread_.join();
    return ok_ ? builder_.get() : nullptr;
  }
  // Just after the ']' that ends traceEvents.
  uint64_t end() const { return end_; }

 private:
  std::unique_ptr<ByteSource> source_;
  JsonCursor cursor_;
  std::unique_ptr<TraceBuilder> builder_;
  std::promise<uint64_t> start_;
  uint64_t start_at_ = UINT64_MAX;
  std::atomic<bool> cancelled_{false};
  bool ok_ = false;
  uint64_t end_ = 0;
  std::thread thread_;
};

void TraceBuilder::events() {
  in_.begin_array();
  // A second thread reads the later part of a large plain file's events: three fifths, as
  // this one also takes them over and finishes the Trace (measured on 740k events: its half
  // and the rest 1.65 s, the second's half 1.19 s).
  if (parallel_ != nullptr && parallel_->taken != nullptr) *parallel_->taken = false;
  std::unique_ptr<SecondHalf> second;
  if (parallel_ != nullptr && in_.source().seekable_size() >= parallel_->min_bytes) {
    const uint64_t size = in_.source().seekable_size();
    try {
      if (auto reader = in_.source().another_reader())
        second = std::make_unique<SecondHalf>(
            std::move(reader), in_.what(),
            std::max(in_.offset(), parallel_->at != 0 ? parallel_->at : size / 5 * 2), have_base_,
            base_);
    } catch (const std::system_error&) {  // no thread to be had: one reads it all
    }
  }
  bool first = true;
  while (in_.next_element(first)) {
    if (second) {
      in_.peek();
      const uint64_t at = in_.offset();
      if (at >= second->start()) {
        if (TraceBuilder* b = at == second->start() ? second->join() : nullptr) {
          absorb(*b);
          if (parallel_->taken != nullptr) *parallel_->taken = true;
          const uint64_t end = second->end();
          second.reset();
          in_.seek(end);
          return;
        }
        second.reset();  // not an event's start after all, or it failed: read on here
      }
    }
    event();
    ++index_;
  }
}

}  // namespace

Trace build_trace(JsonCursor& in, const ParallelRead* parallel) {
  return TraceBuilder(in, parallel).build();
}

}  // namespace ptprof::detail
