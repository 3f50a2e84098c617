#include "view/table_codec.h"

#include <cstdint>
#include <cstring>

#include "ptprof/error.h"

namespace ptprof::view {

namespace {

class Out {
 public:
  void i64(int64_t v) { s_.append(reinterpret_cast<const char*>(&v), sizeof(v)); }
  void u8(uint8_t v) { s_.push_back(static_cast<char>(v)); }
  void f64(double v) { s_.append(reinterpret_cast<const char*>(&v), sizeof(v)); }
  void str(const std::string& v) {
    i64(static_cast<int64_t>(v.size()));
    s_ += v;
  }
  void ints(const std::vector<int64_t>& v) {
    i64(static_cast<int64_t>(v.size()));
    for (int64_t x : v) i64(x);
  }
  std::string take() { return std::move(s_); }

 private:
  std::string s_;
};

class In {
 public:
  explicit In(std::string_view s) : s_(s) {}
  int64_t i64() {
    int64_t v = 0;
    take(&v, sizeof(v));
    return v;
  }
  uint8_t u8() {
    uint8_t v = 0;
    take(&v, 1);
    return v;
  }
  double f64() {
    double v = 0;
    take(&v, sizeof(v));
    return v;
  }
  std::size_t count(std::size_t min_bytes_each) {
    const int64_t n = i64();
    if (n < 0 || static_cast<uint64_t>(n) > (s_.size() - pos_) / (min_bytes_each ? min_bytes_each : 1))
      bad();
    return static_cast<std::size_t>(n);
  }
  std::string str() {
    const std::size_t n = count(1);
    std::string v(s_.substr(pos_, n));
    pos_ += n;
    return v;
  }
  std::vector<int64_t> ints() {
    std::vector<int64_t> v(count(8));
    for (int64_t& x : v) x = i64();
    return v;
  }

 private:
  [[noreturn]] static void bad() { throw Error("ptprof view: a damaged table entry in the index"); }
  void take(void* dst, std::size_t n) {
    if (s_.size() - pos_ < n) bad();
    std::memcpy(dst, s_.data() + pos_, n);
    pos_ += n;
  }
  std::string_view s_;
  std::size_t pos_ = 0;
};

}  // namespace

std::string encode_inputs(const std::vector<OpInput>& inputs) {
  Out o;
  o.i64(static_cast<int64_t>(inputs.size()));
  for (const OpInput& in : inputs) {
    o.u8(static_cast<uint8_t>(in.kind));
    o.str(in.dtype);
    o.ints(in.sizes);
    o.ints(in.strides);
    o.i64(static_cast<int64_t>(in.list_sizes.size()));
    for (const auto& l : in.list_sizes) o.ints(l);
    o.str(in.concrete);
    o.f64(in.scalar);
  }
  return o.take();
}

std::vector<OpInput> decode_inputs(std::string_view bytes) {
  In in(bytes);
  std::vector<OpInput> out(in.count(1));
  for (OpInput& x : out) {
    x.kind = static_cast<OpInput::Kind>(in.u8());
    x.dtype = in.str();
    x.sizes = in.ints();
    x.strides = in.ints();
    x.list_sizes.resize(in.count(8));
    for (auto& l : x.list_sizes) l = in.ints();
    x.concrete = in.str();
    x.scalar = in.f64();
  }
  return out;
}

std::string encode_stack(const std::vector<std::string>& frames) {
  Out o;
  o.i64(static_cast<int64_t>(frames.size()));
  for (const std::string& f : frames) o.str(f);
  return o.take();
}

std::vector<std::string> decode_stack(std::string_view bytes) {
  In in(bytes);
  std::vector<std::string> out(in.count(8));
  for (std::string& f : out) f = in.str();
  return out;
}

std::string encode_collective(const CollectiveInfo& c) {
  Out o;
  for (const std::string* s : {&c.name, &c.dtype, &c.in_split, &c.out_split, &c.pg_name,
                               &c.pg_desc, &c.pg_ranks})
    o.str(*s);
  for (int64_t v : {c.in_nelems, c.out_nelems, c.group_size, c.rank, c.global_rank_start,
                    c.global_rank_stride, c.seq})
    o.i64(v);
  return o.take();
}

CollectiveInfo decode_collective(std::string_view bytes) {
  In in(bytes);
  CollectiveInfo c;
  for (std::string* s : {&c.name, &c.dtype, &c.in_split, &c.out_split, &c.pg_name, &c.pg_desc,
                         &c.pg_ranks})
    *s = in.str();
  for (int64_t* v : {&c.in_nelems, &c.out_nelems, &c.group_size, &c.rank, &c.global_rank_start,
                     &c.global_rank_stride, &c.seq})
    *v = in.i64();
  return c;
}

}  // namespace ptprof::view
