#include "trace/stacks_export.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "ptprof/error.h"
#include "ptprof/trace.h"
#include "trace/chrome_trace.h"
#include "trace/json_writer.h"

namespace ptprof::detail {

// ---- Collapsed stacks ------------------------------------------------------------------------

namespace {

void append_frame(std::string& out, std::string_view frame) {
  for (char c : frame) out += (c == ' ' || c == ';' || c == '\t' || c == '\n') ? '_' : c;
}

}  // namespace

std::vector<StackSample> stack_samples(const Trace& t, const std::string& metric) {
  const bool cpu = metric == "self_cpu_time_total";
  const bool device = metric == "self_cuda_time_total" || metric == "self_device_time_total";
  if (!cpu && !device)
    throw Error("ptprof: export_stacks: unknown metric \"" + metric +
                "\"; valid metrics: self_cpu_time_total, self_cuda_time_total "
                "(also spelled self_device_time_total)");
  std::unordered_map<uint64_t, int64_t> device_ns;  // External id -> GPU time it launched
  if (device) {
    for (const Event& e : t.events) {
      if ((e.kind == EventKind::Kernel || e.kind == EventKind::Memcpy ||
           e.kind == EventKind::Memset) &&
          e.external_id != 0 && e.duration_ns > 0)
        device_ns[e.external_id] += e.duration_ns;
    }
  }
  // Summed per (stack, name): a stack is shared by many events, so its frames are walked once
  // per name rather than once per event.
  struct Key {
    int32_t stack;
    std::string_view name;
    bool operator==(const Key& o) const { return stack == o.stack && name == o.name; }
  };
  struct KeyHash {
    std::size_t operator()(const Key& k) const {
      return std::hash<std::string_view>()(k.name) * 31 + static_cast<std::size_t>(k.stack);
    }
  };
  std::unordered_map<Key, std::size_t, KeyHash> index;
  std::vector<StackSample> out;
  for (const Event& e : t.events) {
    if (e.stack < 0 || static_cast<std::size_t>(e.stack) >= t.stacks.size()) continue;
    int64_t ns = 0;
    if (cpu) {
      ns = e.self_ns;
    } else if (e.external_id != 0) {
      auto it = device_ns.find(e.external_id);
      if (it != device_ns.end()) ns = it->second;
    }
    if (ns <= 0) continue;
    auto [it, inserted] = index.emplace(Key{e.stack, e.name}, out.size());
    if (inserted) out.push_back({e.stack, e.name, 0});
    out[it->second].ns += ns;
  }
  return out;
}

std::string collapsed_stacks(const Trace& t, const std::string& metric) {
  // Lines with the same text (stacks that differ only in what append_frame maps to '_') merge.
  std::unordered_map<std::string, int64_t> merged;
  std::string key;
  for (const StackSample& sample : stack_samples(t, metric)) {
    key.clear();
    for (const std::string& frame : t.stacks[sample.stack]) {
      append_frame(key, frame);
      key += ';';
    }
    append_frame(key, sample.name);
    merged[key] += sample.ns;
  }
  std::vector<std::pair<std::string_view, int64_t>> lines;
  lines.reserve(merged.size());
  for (const auto& [stack, ns] : merged) lines.emplace_back(stack, ns);
  std::sort(lines.begin(), lines.end());
  std::string out;
  for (const auto& [stack, ns] : lines) {
    const int64_t us = ns / 1000;
    if (us <= 0) continue;
    out += stack;
    out += ' ';
    out += std::to_string(us);
    out += '\n';
  }
  return out;
}

// ---- SVG flame graph -------------------------------------------------------------------------

namespace {

struct FlameNode {
  int64_t value = 0;
  std::map<std::string, std::unique_ptr<FlameNode>> children;  // sorted, as flamegraph.pl
};

// The first `max_chars` code points of `s` (UTF-8), so a clipped label stays valid text.
std::string clip(std::string_view s, std::size_t max_chars) {
  std::size_t i = 0, chars = 0;
  while (i < s.size() && chars < max_chars) {
    ++i;
    while (i < s.size() && (static_cast<unsigned char>(s[i]) & 0xc0) == 0x80) ++i;
    ++chars;
  }
  return std::string(s.substr(0, i));
}

std::size_t code_points(std::string_view s) {
  std::size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xc0) != 0x80;
  return n;
}

uint32_t fnv1a(std::string_view s) {
  uint32_t h = 2166136261u;
  for (char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 16777619u;
  }
  return h;
}

// Coordinates and percentages with `decimals` decimals, whatever the process locale.
std::string fmt(int decimals, double v) {
  return format_fixed(v, decimals);
}

struct FlameLayout {
  static constexpr double kWidth = 1200, kPad = 10, kFrame = 16, kTop = 50, kBottom = 10;
  static constexpr double kFontSize = 12, kCharWidth = 0.59 * kFontSize, kMinWidth = 0.1;
  int64_t total = 0;
  int depth = 0;  // deepest level (0: "all")
  double height = 0;

  double x(int64_t offset) const {
    return kPad + (kWidth - 2 * kPad) * static_cast<double>(offset) / static_cast<double>(total);
  }
  double y(int level) const { return height - kBottom - (level + 1) * kFrame; }
};

int tree_depth(const FlameNode& n) {
  int d = 0;
  for (const auto& [name, child] : n.children) d = std::max(d, 1 + tree_depth(*child));
  return d;
}

void render_frame(Markup& m, const FlameLayout& L, const std::string& name, const FlameNode& node,
                  int level, int64_t offset) {
  const double x0 = L.x(offset), w = L.x(offset + node.value) - x0;
  if (w < FlameLayout::kMinWidth) return;  // and so are all its children
  const double pct = 100.0 * static_cast<double>(node.value) / static_cast<double>(L.total);
  // flamegraph.pl's "hot" palette, from the name's hash so a function keeps its colour.
  const uint32_t h = fnv1a(name);
  const int r = 205 + static_cast<int>(50 * ((h & 0xff) / 255.0));
  const int g = static_cast<int>(230 * (((h >> 8) & 0xff) / 255.0));
  const int b = static_cast<int>(55 * (((h >> 16) & 0xff) / 255.0));
  m.open("g", {{"class", "frame"}});
  m.element("title", name + " (" + std::to_string(node.value) + " us, " + fmt(2, pct) + "%)");
  m.empty("rect", {{"x", fmt(2, x0)},
                   {"y", fmt(1, L.y(level))},
                   {"width", fmt(2, w)},
                   {"height", fmt(1, FlameLayout::kFrame - 1)},
                   {"fill", "rgb(" + std::to_string(r) + "," + std::to_string(g) + "," +
                                std::to_string(b) + ")"},
                   {"rx", "2"},
                   {"ry", "2"}});
  const auto fit = static_cast<std::size_t>((w - 6) / FlameLayout::kCharWidth);
  if (fit >= 3) {
    const std::string label = code_points(name) <= fit ? name : clip(name, fit - 2) + "..";
    m.element("text",
              {{"x", fmt(2, x0 + 3)}, {"y", fmt(1, L.y(level) + FlameLayout::kFrame - 4.5)}},
              label);
  }
  m.close("g").line();
  int64_t child_offset = offset;
  for (const auto& [child_name, child] : node.children) {
    render_frame(m, L, child_name, *child, level + 1, child_offset);
    child_offset += child->value;
  }
}

}  // namespace

std::string flamegraph_svg(const std::string& collapsed, const std::string& title) {
  FlameNode root;
  std::size_t pos = 0;
  while (pos < collapsed.size()) {
    std::size_t eol = collapsed.find('\n', pos);
    if (eol == std::string::npos) eol = collapsed.size();
    std::string_view line(collapsed.data() + pos, eol - pos);
    pos = eol + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const auto space = line.rfind(' ');
    if (space == std::string_view::npos) continue;
    char* end = nullptr;
    const std::string num(line.substr(space + 1));
    const long long v = std::strtoll(num.c_str(), &end, 10);
    if (num.empty() || *end != '\0' || v <= 0) continue;
    root.value += v;
    FlameNode* node = &root;
    std::string_view stack = line.substr(0, space);
    while (true) {
      const auto semi = stack.find(';');
      const std::string frame(stack.substr(0, semi));
      auto& child = node->children[frame];
      if (!child) child = std::make_unique<FlameNode>();
      child->value += v;
      node = child.get();
      if (semi == std::string_view::npos) break;
      stack.remove_prefix(semi + 1);
    }
  }

  FlameLayout L;
  L.total = root.value;
  L.depth = tree_depth(root);
  L.height = FlameLayout::kTop + (L.depth + 1) * FlameLayout::kFrame + FlameLayout::kBottom;
  Markup m;
  m.xml_declaration();
  const std::string width = fmt(0, FlameLayout::kWidth), height = fmt(0, L.height);
  m.open("svg", {{"version", "1.1"},
                 {"xmlns", "http://www.w3.org/2000/svg"},
                 {"width", width},
                 {"height", height},
                 {"viewBox", "0 0 " + width + " " + height}})
      .line();
  m.style(
       "text{font-family:Verdana,sans-serif;font-size:12px;fill:#000}"
       ".title{font-size:17px;text-anchor:middle}.frame:hover rect{stroke:#000;stroke-width:0.5}")
      .line();
  m.element("text", {{"class", "title"}, {"x", fmt(0, FlameLayout::kWidth / 2)}, {"y", "24"}},
            title)
      .line();
  if (L.total == 0) {
    m.element("text", {{"x", fmt(0, FlameLayout::kPad)}, {"y", "44"}}, "No samples").line();
  } else {
    m.element("text", {{"x", fmt(0, FlameLayout::kPad)}, {"y", "44"}},
              "Total " + std::to_string(L.total) + " us; width is time, stacks grow upwards")
        .line();
    render_frame(m, L, "all", root, 0, 0);
  }
  m.close("svg").line();
  return m.take();
}

}  // namespace ptprof::detail

namespace ptprof {

void Trace::export_stacks(const std::string& path, const std::string& metric) const {
  std::string text = detail::collapsed_stacks(*this, metric);  // validates the metric
  const bool any = std::any_of(events.begin(), events.end(), [this](const Event& e) {
    return e.stack >= 0 && static_cast<std::size_t>(e.stack) < stacks.size();
  });
  if (!any)
    throw Error("ptprof: export_stacks(" + path +
                "): the trace has no stacks; record it with Options::with_stack = true");
  const bool svg = path.size() >= 4 && path.compare(path.size() - 4, 4, ".svg") == 0;
  if (svg) {
    std::string title = "ptprof flame graph: " + metric;
    if (!worker_name.empty()) title += " (" + worker_name + ")";
    text = detail::flamegraph_svg(text, title);
  }
  detail::write_file_atomically(path,
                                [&](detail::Sink& sink) { sink.write(text.data(), text.size()); });
}

}  // namespace ptprof
