#include "cli/trace_reader.h"

#include <zlib.h>

#include <cmath>
#include <fstream>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

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

// Trace microseconds (number with up to 3 decimals) -> ns, rejecting non-finite and huge values.
int64_t us_to_ns(const nlohmann::json& v, const std::string& what) {
  if (!v.is_number()) throw Error("ptprof: " + what + " is not a number");
  const double us = v.get<double>();
  if (!std::isfinite(us) || std::fabs(us) > 9.0e12)
    throw Error("ptprof: " + what + " is out of range");
  return static_cast<int64_t>(std::llround(us * 1000.0));
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
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw Error("ptprof: " + what + " is not valid JSON");
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
    if (*ph == "i" && ev.value("name", "") == "[memory]") {
      auto args = ev.find("args");
      auto ts = ev.find("ts");
      if (args == ev.end() || !args->is_object() || ts == ev.end())
        throw Error("ptprof: " + where + " ([memory]) lacks \"args\" or \"ts\"");
      MemoryEvent m;
      m.time_ns = base + us_to_ns(*ts, where + ".ts");
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
      t.window_start_ns = base + us_to_ns(*ts, where + ".ts");
      t.window_end_ns = t.window_start_ns + us_to_ns(*dur, where + ".dur");
      have_window = true;
      continue;
    }
    EventKind kind;
    if (!kind_of(c, &kind)) continue;
    Event e;
    e.kind = kind;
    e.name = t.intern(name->get<std::string>());
    e.start_ns = base + us_to_ns(*ts, where + ".ts");
    e.duration_ns = us_to_ns(*dur, where + ".dur");
    if (e.duration_ns < 0) throw Error("ptprof: " + where + " has a negative \"dur\"");
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
