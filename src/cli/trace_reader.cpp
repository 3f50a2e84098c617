#include "cli/trace_reader.h"

#include <zlib.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>
#include <vector>

#include "ptprof/error.h"

namespace ptprof::detail {

std::string read_trace_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("ptprof: cannot open " + path);
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (data.size() < 2 || static_cast<unsigned char>(data[0]) != 0x1f ||
      static_cast<unsigned char>(data[1]) != 0x8b)
    return data;
  z_stream zs{};
  if (inflateInit2(&zs, 15 + 32) != Z_OK) throw Error("ptprof: cannot inflate " + path);
  std::string out;
  char buf[1 << 16];
  zs.next_in = reinterpret_cast<Bytef*>(data.data());
  zs.avail_in = static_cast<uInt>(data.size());
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    zs.next_out = reinterpret_cast<Bytef*>(buf);
    zs.avail_out = sizeof(buf);
    rc = inflate(&zs, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      inflateEnd(&zs);
      throw Error("ptprof: " + path + " is not valid gzip (truncated or corrupt)");
    }
    out.append(buf, sizeof(buf) - zs.avail_out);
    if (rc == Z_OK && zs.avail_in == 0 && zs.avail_out != 0) {
      inflateEnd(&zs);
      throw Error("ptprof: " + path + " is truncated gzip");
    }
  }
  inflateEnd(&zs);
  return out;
}

namespace {

using json = nlohmann::json;

// Builds the DOM as nlohmann's parser does, except that a number with a fraction or an
// exponent is kept as its original text (in a binary value, which JSON text cannot produce):
// converting "ts" through a double loses nanoseconds from 2^42 µs on, and ptprof's offsets
// reach 7.9e12 µs. Only "ts" and "dur" are read as non-integers; elsewhere a fraction is
// ignored, as before.
class ExactNumberDom final : public nlohmann::json_sax<json> {
 public:
  json& root() { return root_; }
  bool null() override { return put(nullptr); }
  bool boolean(bool v) override { return put(v); }
  bool number_integer(number_integer_t v) override { return put(v); }
  bool number_unsigned(number_unsigned_t v) override { return put(v); }
  bool number_float(number_float_t, const string_t& text) override {
    return put(json::binary(json::binary_t::container_type(text.begin(), text.end())));
  }
  bool string(string_t& v) override { return put(std::move(v)); }
  bool binary(binary_t& v) override { return put(json::binary(std::move(v))); }
  bool start_object(std::size_t) override { return open(json::object()); }
  bool key(string_t& k) override {
    slot_ = &(*stack_.back())[k];  // a repeated key overwrites, as nlohmann's parser does
    return true;
  }
  bool end_object() override {
    stack_.pop_back();
    return true;
  }
  bool start_array(std::size_t) override { return open(json::array()); }
  bool end_array() override {
    stack_.pop_back();
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }

 private:
  // The next value goes to the root, the end of the open array, or the key just read.
  // Pointers into an open container stay valid: nothing is added to it until it is closed.
  json* place(json v) {
    if (stack_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    json& top = *stack_.back();
    if (top.is_array()) {
      top.push_back(std::move(v));
      return &top.back();
    }
    *slot_ = std::move(v);
    return slot_;
  }
  bool put(json v) {
    place(std::move(v));
    return true;
  }
  bool open(json container) {
    stack_.push_back(place(std::move(container)));
    return true;
  }

  json root_;
  std::vector<json*> stack_;
  json* slot_ = nullptr;
};

using Wide = __int128;

// A JSON number's text in µs -> exact ns: the decimal digits shifted by three places and the
// exponent, rounded half away from zero where more than three decimals remain (as llround
// did). False where the magnitude reaches 1e36 ns, far outside any int64 ns time.
bool decimal_us_to_ns(const std::string& text, Wide* out) {
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
    if (c < '0' || c > '9') return false;
    if (in_fraction) --scale;
    if (!digits.empty() || c != '0') digits.push_back(c);
  }
  if (i < text.size()) {  // exponent; saturated, any |e| beyond 1e6 is out of range anyway
    ++i;
    const bool exp_negative = i < text.size() && text[i] == '-';
    if (i < text.size() && (text[i] == '-' || text[i] == '+')) ++i;
    int64_t e = 0;
    for (; i < text.size(); ++i) {
      if (text[i] < '0' || text[i] > '9') return false;
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

// Trace microseconds (an integer, or a number kept as text by ExactNumberDom) -> exact ns.
Wide us_to_ns(const json& v, const std::string& what) {
  if (v.is_number_integer()) return Wide{v.get<int64_t>()} * 1000;
  if (v.is_number_unsigned()) return Wide{v.get<uint64_t>()} * 1000;
  if (!v.is_binary()) throw Error("ptprof: " + what + " is not a number");
  const auto& bytes = v.get_binary();
  Wide ns;
  if (!decimal_us_to_ns(std::string(bytes.begin(), bytes.end()), &ns))
    throw Error("ptprof: " + what + " is out of range");
  return ns;
}

constexpr Wide kInt64Min = std::numeric_limits<int64_t>::min();
constexpr Wide kInt64Max = std::numeric_limits<int64_t>::max();

// baseTimeNanoseconds + ts, which must be an int64_t ns time (it overflowed before).
int64_t time_ns(int64_t base, const json& ts, const std::string& what) {
  const Wide t = base + us_to_ns(ts, what);
  if (t < kInt64Min || t > kInt64Max)
    throw Error("ptprof: " + what +
                " is out of range: baseTimeNanoseconds + ts is not an int64 ns time");
  return static_cast<int64_t>(t);
}

// start + dur: dur non-negative, the end an int64_t ns time (a window's dur alone may exceed
// INT64_MAX where it starts before 1970). Events' durations are also kept below ~104 days (the
// old bound), so sums of many of them stay far from overflowing.
int64_t end_ns(int64_t start, const json& dur, const std::string& what, bool bounded) {
  const Wide d = us_to_ns(dur, what);
  if (d < 0) throw Error("ptprof: " + what + " is negative");
  if ((bounded && d > Wide{9000000000000000}) || start + d > kInt64Max)
    throw Error("ptprof: " + what + " is out of range");
  return static_cast<int64_t>(start + d);
}

int64_t int_or(const nlohmann::json& obj, const char* key, int64_t fallback) {
  auto it = obj.find(key);
  if (it == obj.end()) return fallback;
  if (it->is_number_integer()) return it->get<int64_t>();
  if (it->is_number_unsigned()) {
    const auto u = it->get<uint64_t>();
    return u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ? fallback
                                                                          : static_cast<int64_t>(u);
  }
  return fallback;
}

bool kind_of(const std::string& cat, EventKind* kind) {
  static const std::pair<const char*, EventKind> kCats[] = {
      {"cpu_op", EventKind::CpuOp},
      {"operator", EventKind::CpuOp},
      {"user_annotation", EventKind::UserAnnotation},
      {"kernel", EventKind::Kernel},
      {"gpu_memcpy", EventKind::Memcpy},
      {"gpu_memset", EventKind::Memset},
      {"cuda_runtime", EventKind::CudaRuntime},
      {"cuda_driver", EventKind::CudaDriver},
      {"cuda_sync", EventKind::CudaSync},
      {"gpu_user_annotation", EventKind::GpuUserAnnotation},
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

}  // namespace

Trace parse_trace(const std::string& text, const std::string& what) {
  ExactNumberDom dom;
  if (!json::sax_parse(text, &dom)) throw Error("ptprof: " + what + " is not valid JSON");
  const json j = std::move(dom.root());
  if (!j.is_object()) throw Error("ptprof: " + what + ": top level is not a JSON object");
  auto evs = j.find("traceEvents");
  if (evs == j.end() || !evs->is_array())
    throw Error("ptprof: " + what + " has no \"traceEvents\" array");
  const int64_t base = int_or(j, "baseTimeNanoseconds", 0);
  Trace t;
  bool have_window = false;
  std::size_t index = 0;
  for (const auto& ev : *evs) {
    const std::string where = what + ": traceEvents[" + std::to_string(index++) + "]";
    if (!ev.is_object()) throw Error("ptprof: " + where + " is not an object");
    auto ph = ev.find("ph");
    if (ph == ev.end() || !ph->is_string()) continue;
    auto ev_name = ev.find("name");  // not value(): it throws json::type_error for a non-string
    if (*ph == "i" && ev_name != ev.end() && *ev_name == "[memory]") {
      auto args = ev.find("args");
      auto ts = ev.find("ts");
      if (args == ev.end() || !args->is_object() || ts == ev.end())
        throw Error("ptprof: " + where + " ([memory]) lacks \"args\" or \"ts\"");
      MemoryEvent m;
      m.time_ns = time_ns(base, *ts, where + ".ts");
      m.pid = int_or(ev, "pid", 0);
      m.tid = int_or(ev, "tid", 0);
      m.address = static_cast<uint64_t>(int_or(*args, "Addr", 0));
      m.bytes = int_or(*args, "Bytes", 0);
      m.total_allocated = int_or(*args, "Total Allocated", 0);
      m.total_reserved = int_or(*args, "Total Reserved", 0);
      m.device_type = static_cast<int8_t>(int_or(*args, "Device Type", 0));
      m.device_index = static_cast<int8_t>(int_or(*args, "Device Id", -1));
      t.memory_events.push_back(m);
      continue;
    }
    if (*ph != "X") continue;
    auto cat = ev.find("cat");
    auto name = ev.find("name");
    if (cat == ev.end() || !cat->is_string())
      throw Error("ptprof: " + where + " (an X event) has no \"cat\" string");
    if (name == ev.end() || !name->is_string())
      throw Error("ptprof: " + where + " has no \"name\" string");
    auto ts = ev.find("ts");
    auto dur = ev.find("dur");
    if (ts == ev.end() || dur == ev.end())
      throw Error("ptprof: " + where + " lacks \"ts\" or \"dur\"");
    const std::string c = cat->get<std::string>();
    if (c == "Trace") {
      t.window_start_ns = time_ns(base, *ts, where + ".ts");
      t.window_end_ns = end_ns(t.window_start_ns, *dur, where + ".dur", false);
      have_window = true;
      continue;
    }
    EventKind kind;
    if (!kind_of(c, &kind)) continue;
    Event e;
    e.kind = kind;
    e.name = t.intern(name->get<std::string>());
    e.start_ns = time_ns(base, *ts, where + ".ts");
    e.duration_ns = end_ns(e.start_ns, *dur, where + ".dur", true) - e.start_ns;
    e.pid = int_or(ev, "pid", 0);
    e.tid = int_or(ev, "tid", 0);
    auto args = ev.find("args");
    if (args != ev.end() && args->is_object()) {
      e.external_id = static_cast<uint64_t>(int_or(*args, "External id", 0));
      e.correlation = static_cast<uint64_t>(int_or(*args, "correlation", 0));
      e.sequence_nr = int_or(*args, "Sequence number", -1);
      e.device = static_cast<int32_t>(int_or(*args, "device", -1));
      e.stream = int_or(*args, "stream", -1);
    }
    t.events.push_back(e);
  }
  if (!have_window && !t.events.empty()) {
    t.window_start_ns = t.events.front().start_ns;
    // From the first event, not 0: a trace can lie before 1970.
    t.window_end_ns = t.events.front().start_ns + t.events.front().duration_ns;
    for (const Event& e : t.events) {
      t.window_start_ns = std::min(t.window_start_ns, e.start_ns);
      t.window_end_ns = std::max(t.window_end_ns, e.start_ns + e.duration_ns);
    }
  }
  t.rebuild_tree();
  t.attribute_memory();
  return t;
}

}  // namespace ptprof::detail
