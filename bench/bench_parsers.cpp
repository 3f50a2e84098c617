// bench_parsers: the JSON parsers the trace reader's was chosen against, on the same trace.
//
//   bench_parsers FILE.json [--reps N]
//
// Each candidate parses the whole (plain) file and hands every key, string and number to the
// same small piece of work (lengths summed, numbers with a fraction converted to exact ns from
// their text, as the reader must), single-threaded; the figure is MB of JSON per second of
// this process's CPU time, the best of N runs (default 3). Candidates: nlohmann's SAX interface
// (in memory, and streamed from an ifstream), RapidJSON's Reader (in memory, and through its
// FileReadStream of 64 KiB chunks), simdjson's On-Demand API (needs the whole document in
// memory, padded: it cannot stream one JSON document), and ptprof's JsonCursor (streamed from
// the file in chunks), plus ptprof's whole reader, which also builds the Trace.
#include <time.h>

#include <rapidjson/filereadstream.h>
#include <rapidjson/memorystream.h>
#include <rapidjson/reader.h>
#include <simdjson.h>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <string_view>

#include "trace/byte_source.h"
#include "trace/json_cursor.h"
#include "trace/trace_reader.h"

namespace {

// What every candidate does with what it parsed.
struct Work {
  uint64_t objects = 0, keys = 0, string_bytes = 0, numbers = 0;
  __int128 sum = 0;
  void key(const char* p, std::size_t n) {
    ++keys;
    string_bytes += n + (n > 0 ? static_cast<unsigned char>(p[0]) & 1 : 0);
  }
  void str(const char* p, std::size_t n) { string_bytes += n + (n > 0 ? p[n - 1] & 1 : 0); }
  // The digits as an exact integer (µs with their decimals -> ns, as the reader does).
  void num(const char* p, std::size_t n) {
    ++numbers;
    std::size_t i = 0;
    const bool negative = n > 0 && p[0] == '-';
    if (negative) ++i;
    __int128 v = 0;
    for (; i < n; ++i) {
      if (p[i] == '.') continue;
      if (p[i] < '0' || p[i] > '9') break;
      v = v * 10 + (p[i] - '0');
    }
    sum += negative ? -v : v;
  }
};

double cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

struct NlohmannSax : nlohmann::json_sax<nlohmann::json> {
  Work& w;
  explicit NlohmannSax(Work& work) : w(work) {}
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override {
    ++w.numbers;
    return true;
  }
  bool number_unsigned(number_unsigned_t) override {
    ++w.numbers;
    return true;
  }
  bool number_float(number_float_t, const string_t& s) override {
    w.num(s.data(), s.size());
    return true;
  }
  bool string(string_t& s) override {
    w.str(s.data(), s.size());
    return true;
  }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override {
    ++w.objects;
    return true;
  }
  bool key(string_t& s) override {
    w.key(s.data(), s.size());
    return true;
  }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }
};

struct RapidHandler : rapidjson::BaseReaderHandler<rapidjson::UTF8<>, RapidHandler> {
  Work& w;
  explicit RapidHandler(Work& work) : w(work) {}
  bool Default() { return true; }
  bool RawNumber(const char* s, rapidjson::SizeType n, bool) {
    w.num(s, n);
    return true;
  }
  bool String(const char* s, rapidjson::SizeType n, bool) {
    w.str(s, n);
    return true;
  }
  bool Key(const char* s, rapidjson::SizeType n, bool) {
    w.key(s, n);
    return true;
  }
  bool StartObject() {
    ++w.objects;
    return true;
  }
  bool EndObject(rapidjson::SizeType) { return true; }
  bool StartArray() { return true; }
  bool EndArray(rapidjson::SizeType) { return true; }
};

void simdjson_visit(simdjson::ondemand::value v, Work& w) {
  using simdjson::ondemand::json_type;
  switch (v.type()) {
    case json_type::object:
      ++w.objects;
      for (auto field : v.get_object()) {
        const std::string_view k = field.unescaped_key();
        w.key(k.data(), k.size());
        simdjson_visit(field.value(), w);
      }
      break;
    case json_type::array:
      for (auto e : v.get_array()) simdjson_visit(e.value(), w);
      break;
    case json_type::string: {
      const std::string_view s = v.get_string();
      w.str(s.data(), s.size());
      break;
    }
    case json_type::number: {
      std::string_view t = v.raw_json_token();
      while (!t.empty() && (t.back() == ' ' || t.back() == '\n' || t.back() == ',' ||
                            t.back() == '}' || t.back() == ']'))
        t.remove_suffix(1);
      w.num(t.data(), t.size());
      break;
    }
    default:
      break;
  }
}

void cursor_visit(ptprof::detail::JsonCursor& c, Work& w) {
  const int ch = c.peek();
  if (ch == '{') {
    ++w.objects;
    c.begin_object();
    bool first = true;
    std::string_view key;
    while (c.next_member(first, key)) {
      w.key(key.data(), key.size());
      cursor_visit(c, w);
    }
  } else if (ch == '[') {
    c.begin_array();
    bool first = true;
    while (c.next_element(first)) cursor_visit(c, w);
  } else if (ch == '"') {
    const std::string_view s = c.string();
    w.str(s.data(), s.size());
  } else if (ch == '-' || (ch >= '0' && ch <= '9')) {
    const std::string_view n = c.number();
    w.num(n.data(), n.size());
  } else {
    c.skip();  // true, false, null
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_parsers FILE.json [--reps N]\n");
    return 2;
  }
  const std::string path = argv[1];
  const int reps = argc > 3 && std::string(argv[2]) == "--reps" ? std::atoi(argv[3]) : 3;
  std::string text;
  {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  }
  const double mb = static_cast<double>(text.size()) / 1e6;
  std::printf("bench_parsers: %s, %.1f MB of JSON; MB/s on CPU time, best of %d\n", path.c_str(),
              mb, reps);
  auto measure = [&](const char* name, const std::function<bool(Work&)>& fn) {
    double best = 0;
    Work w;
    bool ok = true;
    for (int r = 0; r < reps; ++r) {
      w = Work{};
      const double c0 = cpu_s();
      ok = fn(w) && ok;
      const double s = cpu_s() - c0;
      if (best == 0 || s < best) best = s;
    }
    std::printf("  %-48s %7.1f MB/s  (%llu objects, %llu keys)%s\n", name, mb / best,
                static_cast<unsigned long long>(w.objects), static_cast<unsigned long long>(w.keys),
                ok ? "" : "  FAILED");
  };
  measure("nlohmann::json::sax_parse, in memory", [&](Work& w) {
    NlohmannSax h(w);
    return nlohmann::json::sax_parse(text, &h);
  });
  measure("nlohmann::json::sax_parse, from an ifstream", [&](Work& w) {
    std::ifstream in(path, std::ios::binary);
    NlohmannSax h(w);
    return nlohmann::json::sax_parse(in, &h);
  });
  measure("RapidJSON Reader, in memory", [&](Work& w) {
    RapidHandler h(w);
    rapidjson::Reader r;
    rapidjson::MemoryStream ms(text.data(), text.size());
    return !r.Parse<rapidjson::kParseNumbersAsStringsFlag>(ms, h).IsError();
  });
  measure("RapidJSON Reader, FileReadStream (64 KiB chunks)", [&](Work& w) {
    FILE* f = std::fopen(path.c_str(), "rb");
    if (!f) return false;
    static char buf[1 << 16];
    rapidjson::FileReadStream fs(f, buf, sizeof(buf));
    RapidHandler h(w);
    rapidjson::Reader r;
    const bool ok = !r.Parse<rapidjson::kParseNumbersAsStringsFlag>(fs, h).IsError();
    std::fclose(f);
    return ok;
  });
  measure("simdjson On-Demand, whole document in memory", [&](Work& w) {
    simdjson::padded_string ps(text);  // the copy with padding it needs is part of its cost
    simdjson::ondemand::parser p(ps.size());
    auto doc = p.iterate(ps);
    simdjson::ondemand::value root;
    if (doc.get_value().get(root)) return false;
    simdjson_visit(root, w);
    return true;
  });
  measure("ptprof JsonCursor, streamed from the file", [&](Work& w) {
    auto src = ptprof::detail::open_trace_source(path);
    ptprof::detail::JsonCursor c(*src, path);
    cursor_visit(c, w);
    c.expect_end();
    return true;
  });
  measure("ptprof read_trace (builds the Trace), streamed", [&](Work& w) {
    const ptprof::Trace t = ptprof::detail::read_trace(path);
    w.objects = t.events.size();
    return true;
  });
  return 0;
}
