#include "view/slice_detail.h"

#include <cstring>

#include "ptprof/error.h"

namespace ptprof::view {

namespace {

void put(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}
void put_signed(std::string& out, int64_t v) {  // zigzag: small negatives stay small
  put(out, (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63));
}
uint32_t bits_of(float f) {
  uint32_t b = 0;
  std::memcpy(&b, &f, sizeof(b));
  return b;
}

class Reader {
 public:
  explicit Reader(std::string_view s) : s_(s) {}
  uint64_t get() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= s_.size()) bad();
      const auto b = static_cast<unsigned char>(s_[pos_++]);
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    bad();
  }
  int64_t get_signed() {
    const uint64_t v = get();
    return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1);
  }
  float get_float() {
    const auto b = static_cast<uint32_t>(get());
    float f = 0;
    std::memcpy(&f, &b, sizeof(f));
    return f;
  }

 private:
  [[noreturn]] static void bad() { throw Error("ptprof view: a damaged slice detail in the index"); }
  std::string_view s_;
  std::size_t pos_ = 0;
};

// The fields, in the order written; bit i of the mask says field i differs from its default.
enum Field : uint32_t {
  kFlags, kTrack, kDepth, kSelf, kExternal, kCorrelation, kFlops, kSequence, kFwdThread,
  kRecordFunction, kThread, kInputs, kStack, kCollective, kCbid, kFlow, kGpu,
};

}  // namespace

void encode_detail(const SliceDetail& d, std::string& out) {
  const SliceDetail z;  // the defaults
  uint32_t mask = 0;
  auto mark = [&](Field f, bool differs) { mask |= differs ? 1u << f : 0; };
  mark(kFlags, d.flags != z.flags);
  mark(kTrack, d.track != z.track);
  mark(kDepth, d.depth != z.depth);
  mark(kSelf, d.self_ns != z.self_ns);
  mark(kExternal, d.external_id != z.external_id);
  mark(kCorrelation, d.correlation != z.correlation);
  mark(kFlops, d.flops != z.flops);
  mark(kSequence, d.sequence_nr != z.sequence_nr);
  mark(kFwdThread, d.fwd_thread_id != z.fwd_thread_id);
  mark(kRecordFunction, d.record_function_id != z.record_function_id);
  mark(kThread, d.thread_id != z.thread_id);
  mark(kInputs, d.inputs != z.inputs);
  mark(kStack, d.stack != z.stack);
  mark(kCollective, d.collective != z.collective);
  mark(kCbid, d.cbid != z.cbid);
  mark(kFlow, d.flow != z.flow);
  mark(kGpu, d.gpu);
  out.push_back(static_cast<char>(d.kind));
  put(out, mask);
  if (mask & (1u << kFlags)) put(out, d.flags);
  if (mask & (1u << kTrack)) put(out, d.track);
  if (mask & (1u << kDepth)) put(out, d.depth);
  if (mask & (1u << kSelf)) put_signed(out, d.self_ns);
  if (mask & (1u << kExternal)) put(out, d.external_id);
  if (mask & (1u << kCorrelation)) put(out, d.correlation);
  if (mask & (1u << kFlops)) put(out, d.flops);
  if (mask & (1u << kSequence)) put_signed(out, d.sequence_nr);
  if (mask & (1u << kFwdThread)) put(out, d.fwd_thread_id);
  if (mask & (1u << kRecordFunction)) put(out, d.record_function_id);
  if (mask & (1u << kThread)) put(out, d.thread_id);
  if (mask & (1u << kInputs)) put_signed(out, d.inputs);
  if (mask & (1u << kStack)) put_signed(out, d.stack);
  if (mask & (1u << kCollective)) put_signed(out, d.collective);
  if (mask & (1u << kCbid)) put_signed(out, d.cbid);
  if (mask & (1u << kFlow)) put(out, d.flow);
  if (d.gpu) {
    for (int32_t v : d.grid) put_signed(out, v);
    for (int32_t v : d.block) put_signed(out, v);
    put_signed(out, d.registers_per_thread);
    put_signed(out, d.shared_memory);
    put(out, bits_of(d.blocks_per_sm));
    put(out, bits_of(d.warps_per_sm));
    put_signed(out, d.occupancy_pct);
    put_signed(out, d.device);
    put_signed(out, d.stream);
    put_signed(out, d.queued);
    put(out, d.context);
    put(out, d.transfer_context);
    put(out, d.bytes);
    put(out, d.copy_kind);
    put(out, d.src_kind);
    put(out, d.dst_kind);
  }
}

SliceDetail decode_detail(std::string_view bytes) {
  SliceDetail d;
  if (bytes.empty()) throw Error("ptprof view: a damaged slice detail in the index");
  d.kind = static_cast<uint8_t>(bytes[0]);
  Reader r(bytes.substr(1));
  const auto mask = static_cast<uint32_t>(r.get());
  auto has = [&](Field f) { return (mask & (1u << f)) != 0; };
  if (has(kFlags)) d.flags = static_cast<uint8_t>(r.get());
  if (has(kTrack)) d.track = static_cast<uint32_t>(r.get());
  if (has(kDepth)) d.depth = static_cast<uint32_t>(r.get());
  if (has(kSelf)) d.self_ns = r.get_signed();
  if (has(kExternal)) d.external_id = r.get();
  if (has(kCorrelation)) d.correlation = r.get();
  if (has(kFlops)) d.flops = r.get();
  if (has(kSequence)) d.sequence_nr = r.get_signed();
  if (has(kFwdThread)) d.fwd_thread_id = r.get();
  if (has(kRecordFunction)) d.record_function_id = r.get();
  if (has(kThread)) d.thread_id = r.get();
  if (has(kInputs)) d.inputs = static_cast<int32_t>(r.get_signed());
  if (has(kStack)) d.stack = static_cast<int32_t>(r.get_signed());
  if (has(kCollective)) d.collective = static_cast<int32_t>(r.get_signed());
  if (has(kCbid)) d.cbid = static_cast<int32_t>(r.get_signed());
  if (has(kFlow)) d.flow = r.get();
  d.gpu = has(kGpu);
  if (d.gpu) {
    for (int32_t& v : d.grid) v = static_cast<int32_t>(r.get_signed());
    for (int32_t& v : d.block) v = static_cast<int32_t>(r.get_signed());
    d.registers_per_thread = static_cast<int32_t>(r.get_signed());
    d.shared_memory = static_cast<int32_t>(r.get_signed());
    d.blocks_per_sm = r.get_float();
    d.warps_per_sm = r.get_float();
    d.occupancy_pct = static_cast<int32_t>(r.get_signed());
    d.device = static_cast<int32_t>(r.get_signed());
    d.stream = r.get_signed();
    d.queued = r.get_signed();
    d.context = static_cast<uint32_t>(r.get());
    d.transfer_context = static_cast<uint32_t>(r.get());
    d.bytes = r.get();
    d.copy_kind = static_cast<uint8_t>(r.get());
    d.src_kind = static_cast<uint8_t>(r.get());
    d.dst_kind = static_cast<uint8_t>(r.get());
  }
  return d;
}

}  // namespace ptprof::view
