#include "trace/distributed_info.h"

#include <charconv>

#include "ptprof/error.h"
#include "trace/byte_source.h"
#include "trace/json_cursor.h"
#include "trace/json_writer.h"

namespace ptprof::detail {

namespace {

std::string quoted(const std::string& s) {
  std::string out;
  JsonWriter::escape_into(out, s);
  return out;
}

// An integer value, or none (and the value skipped) for anything else.
std::optional<int64_t> int_value(JsonCursor& in) {
  const int c = in.peek();
  if (c != '-' && (c < '0' || c > '9')) {
    in.skip();
    return std::nullopt;
  }
  const std::string_view text = in.number();
  int64_t v = 0;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  if (r.ec != std::errc() || r.ptr != text.data() + text.size()) return std::nullopt;
  return v;
}

void string_value(JsonCursor& in, std::string* out) {
  if (in.peek() == '"') {
    *out = std::string(in.string());
  } else {
    in.skip();
  }
}

ProcessGroupInfo group(JsonCursor& in) {
  ProcessGroupInfo g;
  in.begin_object();
  bool first = true;
  std::string_view key;
  while (in.next_member(first, key)) {
    if (key == "pg_name") {
      string_value(in, &g.name);
    } else if (key == "pg_desc") {
      string_value(in, &g.desc);
    } else if (key == "backend_config") {
      string_value(in, &g.backend_config);
    } else if (key == "pg_size") {
      if (auto v = int_value(in)) g.size = *v;
    } else if (key == "ranks" && in.peek() == '[') {
      in.begin_array();
      bool f = true;
      while (in.next_element(f))
        if (auto v = int_value(in)) g.ranks.push_back(*v);
    } else {
      in.skip();
    }
  }
  return g;
}

}  // namespace

std::string distributed_info_json(const DistributedInfo& d) {
  std::string s = "{";
  auto member = [&s](const char* key, const std::string& value) {
    if (s.size() > 1) s += ", ";
    s += '"' + std::string(key) + "\": " + value;
  };
  if (!d.backend.empty()) member("backend", quoted(d.backend));
  if (d.rank >= 0) member("rank", std::to_string(d.rank));
  if (d.world_size >= 0) member("world_size", std::to_string(d.world_size));
  if (!d.groups.empty()) {
    member("pg_count", std::to_string(d.groups.size()));
    member("pg_config", "[");
    for (std::size_t i = 0; i < d.groups.size(); ++i) {
      const ProcessGroupInfo& g = d.groups[i];
      s += (i ? ", " : "");
      s += "{\"pg_name\": " + quoted(g.name) + ", \"pg_desc\": " + quoted(g.desc) +
           ", \"backend_config\": " + quoted(g.backend_config) +
           ", \"pg_size\": " + std::to_string(g.size) + ", \"ranks\": [";
      for (std::size_t k = 0; k < g.ranks.size(); ++k)
        s += (k ? ", " : "") + std::to_string(g.ranks[k]);
      s += "]}";
    }
    s += ']';
  }
  if (!d.nccl_version.empty()) member("nccl_version", quoted(d.nccl_version));
  return s + "}";
}

std::optional<DistributedInfo> parse_distributed_info(std::string_view json) {
  MemorySource source(json);
  JsonCursor in(source, "distributedInfo");
  if (in.peek() != '{') return std::nullopt;
  DistributedInfo d;
  try {
    in.begin_object();
    bool first = true;
    std::string_view key;
    while (in.next_member(first, key)) {
      if (key == "backend") {
        string_value(in, &d.backend);
      } else if (key == "rank") {
        if (auto v = int_value(in)) d.rank = *v;
      } else if (key == "world_size") {
        if (auto v = int_value(in)) d.world_size = *v;
      } else if (key == "pg_config" && in.peek() == '[') {
        in.begin_array();
        bool f = true;
        while (in.next_element(f)) {
          if (in.peek() == '{') {
            d.groups.push_back(group(in));
          } else {
            in.skip();
          }
        }
      } else if (key == "nccl_version") {
        string_value(in, &d.nccl_version);
      } else {
        in.skip();  // pg_count follows from pg_config
      }
    }
  } catch (const Error&) {
    return std::nullopt;  // not JSON: the reader checked it already, so never in a trace
  }
  return d;
}

}  // namespace ptprof::detail
