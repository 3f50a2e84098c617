// The trace reader: JSON text in chunks -> ptprof::Trace, one event at a time.
//
// The parser was chosen by measurement: bench/bench_parsers.cpp on the 640 MB trace that
// bench_reader generates (ptprof's schema: stacks, inputs, GPU events), one thread of this
// project's 2-core AMD EPYC VM, MB/s of JSON on CPU time, each candidate doing the same small
// work with every key, string and number, no Trace built: nlohmann's SAX interface 200 (188
// from an ifstream), RapidJSON 1.1's Reader 570 in memory (524 through its chunked
// FileReadStream), simdjson 3.0.1's On-Demand API 517 (it needs the whole document in memory,
// padded: it cannot stream one document), this reader's own cursor (json_cursor.h) 1034
// streamed from the file. The whole reader, building the Trace, reads that file at ~400 MB/s,
// ~250 MB/s gzip'ed (bench_reader; Kineto's own traces in ../shared/traces: ~550 MB/s). The
// cursor wins because it dispatches on the few keys of the schema instead of calling back per
// token, hands out strings as views into its buffer, skips what the trace does not keep without
// decoding it, and gives numbers as their text, so the ns are exact without a detour through a
// double; and it adds no dependency.
//
// Memory, at its peak: a constant of ~0.4 MiB (JsonCursor::kBufferBytes, plus for gzip
// kGzipInputBytes and zlib's state and 32 KiB window), plus scratch reused from event to event
// as large as the largest single event's strings and input lists, plus what the Trace itself
// holds: its events and memory events (collected in chunks of 4096, each its own allocation,
// freed as it is moved into the final vector: no vector doubling to 3x the size), its names,
// stacks and input lists, each distinct one once, and one hash-table entry per distinct stack
// and input list to find them. Trace::rebuild_tree() and attribute_memory() then take about
// 16 bytes per event while they run. Measured by bench_reader on the 640 MB trace (1.0M
// events): the reading process grows by 225 MB, plain or gzip'ed, for a Trace of 204 MB.
#include "trace/trace_reader.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ptprof/error.h"
#include "trace/arg_keys.h"
#include "trace/distributed_info.h"
#include "trace/flight_dump.h"
#include "trace/json_cursor.h"
#include "trace/json_writer.h"
#include "trace/reader_error.h"

namespace ptprof {
Trace Trace::load(const std::string& path) {
  return detail::read_trace(path);
}
}  // namespace ptprof

namespace ptprof::detail {

namespace {

using Wide = __int128;
constexpr Wide kInt64Min = std::numeric_limits<int64_t>::min();
constexpr Wide kInt64Max = std::numeric_limits<int64_t>::max();
constexpr Wide kMaxEventDuration = kMaxEventDurationNs;

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// A JSON number's text in µs -> exact ns: the decimal digits shifted by three places and the
// exponent, rounded half away from zero where more than three decimals remain. False where
// the magnitude reaches 1e36 ns, far outside any int64 ns time.
bool decimal_us_to_ns(std::string_view text, Wide* out) {
  std::size_t i = 0;
  const bool negative = i < text.size() && text[i] == '-';
  if (negative) ++i;
  std::string digits;  // integer and fraction digits, leading zeros dropped
  int64_t scale = 3;   // value = digits * 10^scale ns
  bool in_fraction = false;
  for (; i < text.size() && text[i] != 'e' && text[i] != 'E'; ++i) {
    const char c = text[i];
    if (c == '.') {
      in_fraction = true;
      continue;
    }
    if (!is_digit(c)) return false;
    if (in_fraction) --scale;
    if (!digits.empty() || c != '0') digits.push_back(c);
  }
  if (i < text.size()) {  // exponent; saturated, any |e| beyond 1e6 is out of range anyway
    ++i;
    const bool exp_negative = i < text.size() && text[i] == '-';
    if (i < text.size() && (text[i] == '-' || text[i] == '+')) ++i;
    int64_t e = 0;
    for (; i < text.size(); ++i) {
      if (!is_digit(text[i])) return false;
      e = std::min<int64_t>(e * 10 + (text[i] - '0'), 1000000);
    }
    scale += exp_negative ? -e : e;
  }
  if (digits.empty()) {
    *out = 0;
    return true;
  }
  const int64_t n = static_cast<int64_t>(digits.size());
  const int64_t kept = n + std::min<int64_t>(scale, 0);  // digits left of the ns point
  if (kept + std::max<int64_t>(scale, 0) > 36) return false;
  Wide v = 0;
  for (int64_t k = 0; k < kept; ++k) v = v * 10 + (digits[k] - '0');
  for (int64_t k = 0; k < scale; ++k) v *= 10;
  if (kept >= 0 && kept < n && digits[kept] >= '5') ++v;  // the first dropped digit rounds
  *out = negative ? -v : v;
  return true;
}

// The same, fast for what Kineto and ptprof write ("123", "123.4", "123.456"); anything else
// (more decimals, exponents, huge) goes the general way above.
bool us_to_ns(std::string_view s, Wide* out) {
  const char* p = s.data();
  const char* e = p + s.size();
  const bool negative = p < e && *p == '-';
  if (negative) ++p;
  const char* digits = p;
  uint64_t v = 0;
  while (p < e && is_digit(*p) && p - digits < 18) v = v * 10 + static_cast<uint64_t>(*p++ - '0');
  Wide ns;
  if (p == e) {
    ns = Wide{v} * 1000;
  } else if (*p == '.' && e - p <= 4) {
    ++p;
    uint64_t frac = 0;
    int k = 0;
    for (; p < e && is_digit(*p); ++p, ++k) frac = frac * 10 + static_cast<uint64_t>(*p - '0');
    if (p != e) return decimal_us_to_ns(s, out);
    for (; k < 3; ++k) frac *= 10;
    ns = Wide{v} * 1000 + frac;
  } else {
    return decimal_us_to_ns(s, out);
  }
  *out = negative ? -ns : ns;
  return true;
}

// An integer's value and sign, or nothing for a number with a fraction or exponent (old
// readers ignored those too) or beyond 64 bits.
struct IntValue {
  bool has = false;
  bool negative = false;
  uint64_t magnitude = 0;

  int64_t i64(int64_t fallback) const {
    if (!has) return fallback;
    if (negative) return static_cast<int64_t>(uint64_t{0} - magnitude);
    return magnitude > static_cast<uint64_t>(kInt64Max) ? fallback
                                                        : static_cast<int64_t>(magnitude);
  }
  // Negative values keep their two's-complement bits, as the old reader's casts did.
  uint64_t u64(uint64_t fallback) const {
    if (!has) return fallback;
    return negative ? uint64_t{0} - magnitude : magnitude;
  }
};

IntValue parse_int(std::string_view s) {
  IntValue v;
  std::size_t i = 0;
  if (i < s.size() && s[i] == '-') {
    v.negative = true;
    ++i;
  }
  if (i == s.size()) return IntValue{};
  uint64_t m = 0;
  for (; i < s.size(); ++i) {
    if (!is_digit(s[i])) return IntValue{};
    const uint64_t d = static_cast<uint64_t>(s[i] - '0');
    if (m > (std::numeric_limits<uint64_t>::max() - d) / 10) return IntValue{};
    m = m * 10 + d;
  }
  // -2^63 is the most negative int64; below it there is no value to keep.
  if (v.negative && m > uint64_t{1} << 63) return IntValue{};
  v.has = true;
  v.magnitude = m;
  return v;
}

// A pid or tid: an integer, or one written as a string by older Kineto ("1234",
// "stream 7", "stream 7 annotations"): its first integer. Other strings ("Spans") are 0.
int64_t id_from_text(std::string_view s) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (!is_digit(s[i])) continue;
    std::size_t j = i;
    while (j < s.size() && is_digit(s[j])) ++j;
    const bool negative = i > 0 && s[i - 1] == '-';
    const IntValue v = parse_int(s.substr(negative ? i - 1 : i, j - i + (negative ? 1 : 0)));
    return v.i64(0);
  }
  return 0;
}

// N of a step range's name "ProfilerStep#N", as the session writes it: 1 to 18 digits, no
// leading zero (a user range that only looks like one, "ProfilerStep#07", is no step).
bool step_number(std::string_view name, int64_t* step) {
  constexpr std::string_view kPrefix = "ProfilerStep#";
  if (name.rfind(kPrefix, 0) != 0) return false;
  const std::string_view digits = name.substr(kPrefix.size());
  if (digits.empty() || digits.size() > 18 || (digits.size() > 1 && digits[0] == '0')) return false;
  int64_t n = 0;
  for (char c : digits) {
    if (!is_digit(c)) return false;
    n = n * 10 + (c - '0');
  }
  *step = n;
  return true;
}

// A double as the model's float: beyond float's range the cast is undefined, so infinity.
float to_float(double d) {
  constexpr double kMax = std::numeric_limits<float>::max();
  if (d > kMax) return std::numeric_limits<float>::infinity();
  if (d < -kMax) return -std::numeric_limits<float>::infinity();
  return static_cast<float>(d);
}

char lower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

// Categories by their lower-cased name (Kineto wrote "gpu_user_Annotation" for a while, and
// consumers compare without case). The capitalized ones are PyTorch 1.8-1.9's (Kineto's
// output before its ActivityType names); "User" was its GPU user span ("stream N user").
bool kind_of(std::string_view cat, EventKind* kind) {
  static const std::pair<std::string_view, EventKind> kCats[] = {
      {"cpu_op", EventKind::CpuOp},
      {"operator", EventKind::CpuOp},
      {"user_annotation", EventKind::UserAnnotation},
      {"kernel", EventKind::Kernel},
      {"gpu_memcpy", EventKind::Memcpy},
      {"memcpy", EventKind::Memcpy},
      {"gpu_memset", EventKind::Memset},
      {"memset", EventKind::Memset},
      {"cuda_runtime", EventKind::CudaRuntime},
      {"runtime", EventKind::CudaRuntime},
      {"cuda_driver", EventKind::CudaDriver},
      {"cuda_sync", EventKind::CudaSync},
      {"gpu_user_annotation", EventKind::GpuUserAnnotation},
      {"user", EventKind::GpuUserAnnotation},
      {"overhead", EventKind::Overhead},
  };
  for (const auto& [name, k] : kCats) {
    if (cat == name) {
      *kind = k;
      return true;
    }
  }
  return false;
}

// Flows from a CPU launch to its GPU activity, by the names Kineto has given them: "ac2g"
// since late 2022, "async_cpu_to_gpu"/"async_gpu" before, "async" (PyTorch 1.8). Forward/
// backward links ("fwdbwd") are not kept but drawn again from the ops (fwd_bwd.h).
bool is_launch_flow(std::string_view cat) {
  return cat == "ac2g" || cat == "async_cpu_to_gpu" || cat == "async_gpu" || cat == "async";
}

// CUPTI's copy and memory kinds by the names in a copy's or memset's event name
// ("Memcpy HtoD (Pageable -> Device)", "Memset (Device)"), which is where the trace keeps them.
uint8_t index_of(std::string_view name, const std::string_view* names, int n) {
  for (int i = 0; i < n; ++i)
    if (name == names[i]) return static_cast<uint8_t>(i);
  return 0;
}
constexpr std::string_view kCopyKinds[] = {"<unknown>", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
                                           "AtoD",      "DtoA", "DtoD", "HtoH", "PtoP"};
constexpr std::string_view kMemoryKinds[] = {"Unknown",       "Pageable",      "Pinned",
                                             "Device",        "Array",         "Managed",
                                             "Device Static", "Managed Static"};

void transfer_kinds_from_name(EventKind kind, std::string_view name, TransferInfo* t) {
  const auto open = name.find(" (");
  if (open == std::string_view::npos || name.empty() || name.back() != ')') return;
  const std::string_view inner = name.substr(open + 2, name.size() - open - 3);
  if (kind == EventKind::Memset) {
    if (name.substr(0, open) == "Memset") t->dst_kind = index_of(inner, kMemoryKinds, 8);
    return;
  }
  if (name.rfind("Memcpy ", 0) != 0) return;
  const auto arrow = inner.find(" -> ");
  if (arrow == std::string_view::npos) return;
  t->copy_kind = index_of(name.substr(7, open - 7), kCopyKinds, 11);
  t->src_kind = index_of(inner.substr(0, arrow), kMemoryKinds, 8);
  t->dst_kind = index_of(inner.substr(arrow + 4), kMemoryKinds, 8);
}

// The value of a Scalar input from its text as PyTorch prints it ("1", "0.5", "True", "nan").
double scalar_value(std::string_view s) {
  if (s == "True") return 1;
  if (s == "False") return 0;
  const IntValue i = parse_int(s);
  if (i.has)
    return i.negative ? -static_cast<double>(i.magnitude) : static_cast<double>(i.magnitude);
  double d = 0;
  const char* b = s.data();
  if (!s.empty() && s[0] == '+') ++b;
  const auto r = std::from_chars(b, s.data() + s.size(), d);
  if (r.ec == std::errc::result_out_of_range)
    return (s[0] == '-' ? -1.0 : 1.0) * std::numeric_limits<double>::infinity();
  return r.ec == std::errc() && r.ptr == s.data() + s.size() ? d : 0;
}

// A ScalarList's values (OpInput::sizes) from its text ("[1, 2]", "[0.5, 1.0]", "[True]"), as
// details.cpp keeps them: ints as they are, doubles truncated, kUnknownListValue where a double
// has no int64.
void scalar_list_values(std::string_view s, std::vector<int64_t>* out) {
  constexpr int64_t kUnknown = std::numeric_limits<int64_t>::min();
  out->clear();
  if (s.size() < 2 || s.front() != '[' || s.back() != ']') return;
  s = s.substr(1, s.size() - 2);
  while (!s.empty()) {
    const auto comma = s.find(',');
    std::string_view item = s.substr(0, comma);
    s = comma == std::string_view::npos ? std::string_view() : s.substr(comma + 1);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (item.empty()) continue;
    const IntValue i = parse_int(item);
    if (i.has) {
      out->push_back(i.i64(kUnknown));
    } else if (item == "True" || item == "False") {
      out->push_back(item == "True");
    } else {
      const double d = scalar_value(item);
      out->push_back(d >= -9223372036854775808.0 && d < 9223372036854775808.0
                         ? static_cast<int64_t>(d)
                         : kUnknown);
    }
  }
}

void reset_input(OpInput& in) {
  in.kind = OpInput::Kind::None;
  in.dtype.clear();
  in.sizes.clear();
  in.strides.clear();
  in.list_sizes.clear();
  in.concrete.clear();
  in.scalar = 0;
}

// What the writer's "Input Dims"/"Input type"/"Input Strides"/"Concrete Inputs" say about
// one input: its kind from its type name and the shape of its dims.
void finish_input(OpInput& in) {
  using Kind = OpInput::Kind;
  if (in.dtype == "TensorList" || (!in.list_sizes.empty() && in.sizes.empty())) {
    in.kind = Kind::TensorList;
  } else if (in.dtype == "Scalar") {
    in.kind = Kind::Scalar;
    in.scalar = scalar_value(in.concrete);
    in.sizes.clear();
  } else if (in.dtype == "ScalarList") {
    in.kind = Kind::ScalarList;
    scalar_list_values(in.concrete, &in.sizes);
  } else if (in.dtype.empty() && in.sizes.empty() && in.list_sizes.empty()) {
    in.kind = Kind::None;  // also what an input of kind Other is written as
  } else {
    in.kind = Kind::Tensor;
  }
  if (in.kind != Kind::Tensor) in.strides.clear();
  if (in.kind == Kind::TensorList) in.sizes.clear();
  if (in.kind != Kind::TensorList) in.list_sizes.clear();
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

// Collects in chunks and hands over in one exact allocation: a growing vector would hold up
// to three times the final size while it reallocates.
template <typename T>
class Chunked {
 public:
  T& push(const T& v) {
    if (chunks_.empty() || chunks_.back().size() == kChunk) {
      chunks_.emplace_back();
      chunks_.back().reserve(kChunk);
    }
    chunks_.back().push_back(v);
    ++size_;
    return chunks_.back().back();
  }
  T* last() { return chunks_.empty() ? nullptr : &chunks_.back().back(); }
  std::size_t size() const { return size_; }
  void move_into(std::vector<T>& out) {
    out.reserve(out.size() + size_);
    for (auto& c : chunks_) {
      out.insert(out.end(), c.begin(), c.end());
      std::vector<T>().swap(c);
    }
    chunks_.clear();
    size_ = 0;
  }

 private:
  static constexpr std::size_t kChunk = 4096;
  std::vector<std::vector<T>> chunks_;
  std::size_t size_ = 0;
};

// A time in an event: parsed when read, checked when the event's kind is known.
struct TimeField {
  enum State : uint8_t { kAbsent, kOk, kNotNumber, kOutOfRange } state = kAbsent;
  Wide ns = 0;
  uint64_t offset = 0;
};

// The keys of "args" the model keeps.
enum class Arg : uint8_t {
  kUnknown,
  kExternalId,
  kRecordFunctionId,
  kSequenceNumber,
  kFwdThreadId,
  kInputDims,
  kInputType,
  kInputStrides,
  kConcreteInputs,
  kCallStack,
  kFlops,
  kFinished,
  kCbid,
  kCorrelation,
  kDevice,
  kStream,
  kContext,
  kQueued,
  kRegisters,
  kSharedMemory,
  kBlocksPerSm,
  kWarpsPerSm,
  kGrid,
  kBlock,
  kOccupancy,
  kBytes,
  kName,
  kLabels,
  kTotalReserved,
  kTotalAllocated,
  kMemBytes,
  kAddr,
  kDeviceId,
  kDeviceType,
  // Collectives (CollectiveInfo): numbers here, strings in RawEvent::coll.
  kInNelems,
  kOutNelems,
  kGroupSize,
  kRank,
  kGlobalRankStart,
  kGlobalRankStride,
  kSeq,
  kCollName,
  kDtype,
  kInSplit,
  kOutSplit,
  kPgName,
  kPgDesc,
  kPgRanks,
  // CUDA graphs (GraphNodeInfo): numbers here, strings in RawEvent.
  kGraphId,
  kGraphNode,
  kCapturedBy,
  kCaptureRanges,
  kCount
};

// The keys the model keeps (arg_keys.h's spellings) and the older spellings still read.
struct KeyArg {
  std::string_view key;
  Arg arg = Arg::kUnknown;
};
constexpr KeyArg kKeptArgs[] = {
    {arg_keys::kExternalId, Arg::kExternalId},
    {"external id", Arg::kExternalId},  // older Kineto
    {arg_keys::kRecordFunctionId, Arg::kRecordFunctionId},
    {arg_keys::kSequenceNumber, Arg::kSequenceNumber},
    {arg_keys::kFwdThreadId, Arg::kFwdThreadId},
    {arg_keys::kInputDims, Arg::kInputDims},
    {"Input dims", Arg::kInputDims},  // older Kineto
    {arg_keys::kInputType, Arg::kInputType},
    {arg_keys::kInputStrides, Arg::kInputStrides},
    {arg_keys::kConcreteInputs, Arg::kConcreteInputs},
    {arg_keys::kCallStack, Arg::kCallStack},
    {arg_keys::kFlops, Arg::kFlops},
    {arg_keys::kFinished, Arg::kFinished},
    {arg_keys::kCbid, Arg::kCbid},
    {arg_keys::kCorrelation, Arg::kCorrelation},
    {arg_keys::kDevice, Arg::kDevice},
    {arg_keys::kStream, Arg::kStream},
    {arg_keys::kContext, Arg::kContext},
    {arg_keys::kQueued, Arg::kQueued},
    {arg_keys::kRegisters, Arg::kRegisters},
    {arg_keys::kSharedMemory, Arg::kSharedMemory},
    {arg_keys::kBlocksPerSm, Arg::kBlocksPerSm},
    {arg_keys::kWarpsPerSm, Arg::kWarpsPerSm},
    {arg_keys::kGrid, Arg::kGrid},
    {arg_keys::kBlock, Arg::kBlock},
    {arg_keys::kOccupancy, Arg::kOccupancy},
    {arg_keys::kBytes, Arg::kBytes},
    {arg_keys::kName, Arg::kName},
    {arg_keys::kLabels, Arg::kLabels},
    {arg_keys::kTotalReserved, Arg::kTotalReserved},
    {arg_keys::kTotalAllocated, Arg::kTotalAllocated},
    {arg_keys::kMemBytes, Arg::kMemBytes},
    {arg_keys::kAddr, Arg::kAddr},
    {arg_keys::kDeviceId, Arg::kDeviceId},
    {arg_keys::kDeviceType, Arg::kDeviceType},
    {arg_keys::kInNelems, Arg::kInNelems},
    {arg_keys::kOutNelems, Arg::kOutNelems},
    {arg_keys::kGroupSize, Arg::kGroupSize},
    {arg_keys::kRank, Arg::kRank},
    {arg_keys::kGlobalRankStart, Arg::kGlobalRankStart},
    {arg_keys::kGlobalRankStride, Arg::kGlobalRankStride},
    {arg_keys::kSeq, Arg::kSeq},
    {arg_keys::kCollName, Arg::kCollName},
    {arg_keys::kDtype, Arg::kDtype},
    {arg_keys::kInSplit, Arg::kInSplit},
    {arg_keys::kOutSplit, Arg::kOutSplit},
    {arg_keys::kPgName, Arg::kPgName},
    {arg_keys::kPgDesc, Arg::kPgDesc},
    {arg_keys::kPgRanks, Arg::kPgRanks},
    {arg_keys::kGraphId, Arg::kGraphId},
    {arg_keys::kGraphNode, Arg::kGraphNode},
    {arg_keys::kCapturedBy, Arg::kCapturedBy},
    {arg_keys::kCaptureRanges, Arg::kCaptureRanges},
};
constexpr std::size_t kKeptCount = sizeof(kKeptArgs) / sizeof(kKeptArgs[0]);

constexpr Arg arg_of(std::string_view k) {
  // By length first: one or two comparisons per key, each against a constant the compiler
  // knows (a generic table lookup cost 4x the instructions per key under callgrind).
  switch (k.size()) {
    case 3:
      if (k == arg_keys::kSeq) return Arg::kSeq;
      break;
    case 4:
      if (k == arg_keys::kRank) return Arg::kRank;
      if (k == arg_keys::kCbid) return Arg::kCbid;
      if (k == arg_keys::kGrid) return Arg::kGrid;
      if (k == arg_keys::kName) return Arg::kName;
      if (k == arg_keys::kAddr) return Arg::kAddr;
      break;
    case 5:
      if (k == arg_keys::kFlops) return Arg::kFlops;
      if (k == arg_keys::kBytes) return Arg::kBytes;
      if (k == arg_keys::kBlock) return Arg::kBlock;
      if (k == arg_keys::kMemBytes) return Arg::kMemBytes;
      if (k == arg_keys::kDtype) return Arg::kDtype;
      break;
    case 6:
      if (k == arg_keys::kDevice) return Arg::kDevice;
      if (k == arg_keys::kStream) return Arg::kStream;
      if (k == arg_keys::kQueued) return Arg::kQueued;
      if (k == arg_keys::kLabels) return Arg::kLabels;
      break;
    case 7:
      if (k == arg_keys::kContext) return Arg::kContext;
      break;
    case 8:
      if (k == arg_keys::kFinished) return Arg::kFinished;
      if (k == arg_keys::kGraphId) return Arg::kGraphId;
      break;
    case 9:
      if (k == arg_keys::kDeviceId) return Arg::kDeviceId;
      break;
    case 10:
      if (k == arg_keys::kInputDims || k == "Input dims") return Arg::kInputDims;
      if (k == arg_keys::kInputType) return Arg::kInputType;
      if (k == arg_keys::kCallStack) return Arg::kCallStack;
      if (k == arg_keys::kGroupSize) return Arg::kGroupSize;
      if (k == arg_keys::kGraphNode) return Arg::kGraphNode;
      break;
    case 11:
      if (k == arg_keys::kExternalId || k == "external id") return Arg::kExternalId;
      if (k == arg_keys::kCorrelation) return Arg::kCorrelation;
      if (k == arg_keys::kDeviceType) return Arg::kDeviceType;
      if (k == arg_keys::kCapturedBy) return Arg::kCapturedBy;
      break;
    case 12:
      if (k == arg_keys::kWarpsPerSm) return Arg::kWarpsPerSm;
      break;
    case 13:
      if (k == arg_keys::kFwdThreadId) return Arg::kFwdThreadId;
      if (k == arg_keys::kInputStrides) return Arg::kInputStrides;
      if (k == arg_keys::kSharedMemory) return Arg::kSharedMemory;
      if (k == arg_keys::kBlocksPerSm) return Arg::kBlocksPerSm;
      if (k == arg_keys::kInNelems) return Arg::kInNelems;
      if (k == arg_keys::kInSplit) return Arg::kInSplit;
      break;
    case 14:
      if (k == arg_keys::kTotalReserved) return Arg::kTotalReserved;
      if (k == arg_keys::kOutNelems) return Arg::kOutNelems;
      if (k == arg_keys::kOutSplit) return Arg::kOutSplit;
      if (k == arg_keys::kCaptureRanges) return Arg::kCaptureRanges;
      break;
    case 15:
      if (k == arg_keys::kSequenceNumber) return Arg::kSequenceNumber;
      if (k == arg_keys::kConcreteInputs) return Arg::kConcreteInputs;
      if (k == arg_keys::kTotalAllocated) return Arg::kTotalAllocated;
      if (k == arg_keys::kCollName) return Arg::kCollName;
      break;
    case 17:
      if (k == arg_keys::kGlobalRankStart) return Arg::kGlobalRankStart;
      break;
    case 18:
      if (k == arg_keys::kRecordFunctionId) return Arg::kRecordFunctionId;
      if (k == arg_keys::kGlobalRankStride) return Arg::kGlobalRankStride;
      if (k == arg_keys::kPgName) return Arg::kPgName;
      break;
    case 19:
      if (k == arg_keys::kPgRanks) return Arg::kPgRanks;
      break;
    case 20:
      if (k == arg_keys::kRegisters) return Arg::kRegisters;
      break;
    case 25:
      if (k == arg_keys::kOccupancy) return Arg::kOccupancy;
      if (k == arg_keys::kPgDesc) return Arg::kPgDesc;
      break;
    default:
      break;
  }
  return Arg::kUnknown;
}

// The table and the switch agree: every Arg has a key, no key two Args, and arg_of finds
// each key's Arg (a key put under the wrong length would not be found).
constexpr bool keys_agree() {
  for (std::size_t a = 1; a < static_cast<std::size_t>(Arg::kCount); ++a) {
    bool found = false;
    for (const KeyArg& k : kKeptArgs) found = found || static_cast<std::size_t>(k.arg) == a;
    if (!found) return false;
  }
  for (std::size_t i = 0; i < kKeptCount; ++i) {
    if (arg_of(kKeptArgs[i].key) != kKeptArgs[i].arg) return false;
    for (std::size_t j = i + 1; j < kKeptCount; ++j)
      if (kKeptArgs[i].key == kKeptArgs[j].key) return false;
  }
  return true;
}
static_assert(keys_agree(), "kKeptArgs and arg_of disagree");

// One traceEvents element as read, reused from event to event.
struct RawEvent {
  char ph = 0;  // 'X', 'i', 's', 'f', 'M', ...; 0: absent or not one character
  bool has_cat = false;
  std::string cat;  // lower-cased
  bool has_name = false;
  std::string name;
  bool has_pid = false;
  int64_t pid = 0;
  int64_t tid = 0;
  TimeField ts;
  TimeField dur;
  IntValue id;  // flows
  bool has_args = false;

  IntValue ints[static_cast<int>(Arg::kCount)];
  bool has_double[2] = {false, false};  // blocks per SM, warps per SM
  double doubles[2] = {0, 0};
  bool has_finished = false;
  bool finished = true;
  int32_t grid[3] = {0, 0, 0};
  int32_t block[3] = {0, 0, 0};
  bool has_stack = false;
  std::string stack;
  bool has_text = false;  // M events: args "name" or "labels"
  std::string text;
  bool has_inputs = false;
  std::size_t n_inputs = 0;  // of RawEvent::inputs in use
  bool has_coll = false;     // any collective arg
  CollectiveInfo coll;       // its strings (numbers are in ints)
  bool has_captured_by = false;
  std::string captured_by;
  bool has_capture_ranges = false;
  std::string capture_ranges;  // ';'-joined, as written

  void reset() {
    ph = 0;
    has_cat = has_name = has_pid = has_args = false;
    pid = tid = 0;
    ts = TimeField{};
    dur = TimeField{};
    id = IntValue{};
    for (IntValue& v : ints) v.has = false;
    has_double[0] = has_double[1] = false;
    has_finished = false;
    finished = true;
    std::fill(grid, grid + 3, 0);
    std::fill(block, block + 3, 0);
    has_stack = has_text = has_inputs = false;
    has_captured_by = has_capture_ranges = false;
    n_inputs = 0;
    if (has_coll) {
      has_coll = false;
      coll = CollectiveInfo{};
    }
  }
  const IntValue& arg(Arg a) const { return ints[static_cast<int>(a)]; }
};

struct Flow {
  bool start;
  uint64_t id;
  int64_t pid, tid, ts;
};

// Metadata values are written into the top-level object as they are; the writer takes JSON
// text nested no deeper than its bound, one level being the top-level object.
constexpr int kMaxMetadataDepth = JsonWriter::kMaxDepth - 1;

// A value the cursor captured, made strict JSON where the cursor was lenient (raw control
// characters and invalid UTF-8 in strings, a bare N/A), so that the writer can put it back;
// text that is strict already is left as it is. Returns its nesting depth.
int strict_json(std::string* text) {
  const std::string_view s = *text;
  std::string out;
  bool changed = false;
  bool in_string = false;
  int depth = 0, max_depth = 0;
  std::size_t i = 0, copied = 0;
  auto replace = [&](std::size_t n, std::string_view with) {
    if (!changed) out.reserve(s.size() + 16);
    changed = true;
    out.append(s.data() + copied, i - copied);
    out.append(with);
    i += n;
    copied = i;
  };
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (!in_string) {
      if (c == '"') {
        in_string = true;
      } else if (c == '[' || c == '{') {
        max_depth = std::max(max_depth, ++depth);
      } else if (c == ']' || c == '}') {
        --depth;
      } else if (c == 'N') {  // N/A
        replace(3, "\"N/A\"");
        continue;
      }
      ++i;
    } else if (c == '"') {
      in_string = false;
      ++i;
    } else if (c == '\\') {
      i += s[i + 1] == 'u' ? 6 : 2;  // the cursor checked the escape
    } else if (c < 0x20) {
      char esc[7];
      std::snprintf(esc, sizeof(esc), "\\u%04x", c);
      replace(1, esc);
    } else if (c < 0x80) {
      ++i;
    } else if (const std::size_t n = utf8_sequence(s, i)) {
      i += n;
    } else {
      replace(1, "\\ufffd");  // as the writer writes an invalid byte
    }
  }
  if (changed) {
    out.append(s.data() + copied, s.size() - copied);
    *text = std::move(out);
  }
  return max_depth;
}

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

class TraceBuilder {
 public:
  explicit TraceBuilder(JsonCursor& in) : in_(in) {}

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
  void events() {
    in_.begin_array();
    bool first = true;
    while (in_.next_element(first)) {
      event();
      ++index_;
    }
  }

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
    // Kineto and ptprof write a flow right after the event it starts or ends.
    if (Event* e = events_.last(); e && attach(*e, f)) return;
    pending_flows_.push_back(f);
  }

  // A forward/backward link's end, kept only for the logical thread ids it implies
  // (take_logical_threads); the writer draws the links again (fwd_bwd.h). Kineto writes it
  // right after its op.
  void fwdbwd_flow() {
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
    const OpInput* in = inputs_.data();
    const std::size_t n = ev_.n_inputs;
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

}  // namespace

Trace read_trace(ByteSource& source, const std::string& what) {
  JsonCursor cursor(source, what);
  return TraceBuilder(cursor).build();
}

Trace read_trace(const std::string& path) {
  // A flight recorder's raw dump (a crash's) is read as the trace it stands for.
  if (is_flight_dump(path)) return flight_trace(read_flight_dump(path));
  const std::unique_ptr<ByteSource> source = open_trace_source(path);
  return read_trace(*source, path);
}

Trace parse_trace(std::string_view text, const std::string& what) {
  MemorySource source(text);
  return read_trace(source, what);
}

std::string read_trace_file(const std::string& path) {
  const std::unique_ptr<ByteSource> source = open_trace_source(path);
  std::string out;
  std::size_t n = 0;
  do {
    out.resize(out.size() + (std::size_t{1} << 20));
    n = source->read(out.data() + out.size() - (std::size_t{1} << 20), std::size_t{1} << 20);
    out.resize(out.size() - (std::size_t{1} << 20) + n);
  } while (n > 0);
  return out;
}

}  // namespace ptprof::detail
