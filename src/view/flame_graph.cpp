#include <deque>
#include <map>
#include <memory>
#include <string_view>

#include "ptprof/error.h"
#include "trace/json_writer.h"
#include "trace/stacks_export.h"
#include "view/view_tables.h"

namespace ptprof::view {

namespace {

using detail::JsonWriter;

struct Node {
  int64_t ns = 0;  // this frame and everything above it (summed once the tree is built)
  std::map<std::string_view, std::unique_ptr<Node>> children;
};

// Adds the children's time to each node, deepest first.
int64_t total(Node& n) {
  for (auto& [name, child] : n.children) n.ns += total(*child);
  return n.ns;
}

void write_node(JsonWriter& j, std::string_view name, const Node& n) {
  j.begin_object();
  j.key("name").value(name);
  j.key("value").value_us(n.ns);
  if (!n.children.empty()) {
    j.key("children").begin_array();
    for (const auto& [child, node] : n.children) write_node(j, child, *node);
    j.end_array();
  }
  j.end_object();
}

}  // namespace

// The flame graph's tree: export_stacks' sums (stack_samples), each stack's frames from the
// outermost down to the op's name. Each stack's path is walked once, however many samples
// share it. Nesting as deep as the deepest stack: stacks are cut at ptprof's depth bound when
// recorded, and a tree deeper than the JSON writer allows ends in one node holding the rest of
// the frames (joined by ';').
void write_flame_graphs(const Trace& t, IndexWriter& w) {
  if (t.stacks.empty()) return;
  constexpr std::size_t kMaxFrames = detail::JsonWriter::kMaxDepth / 2 - 3;  // object + array
  for (const char* metric : {"self_cpu_time_total", "self_device_time_total"}) {
    Node root;
    std::deque<std::string> tails;  // the joined frames past kMaxFrames (stable: keys view them)
    std::vector<Node*> node_of_stack(t.stacks.size(), nullptr);
    auto child = [](Node* n, std::string_view frame) {
      auto& c = n->children[frame];
      if (!c) c = std::make_unique<Node>();
      return c.get();
    };
    for (const detail::StackSample& sample : detail::stack_samples(t, metric)) {
      const auto s = static_cast<std::size_t>(sample.stack);
      const std::vector<std::string>& frames = t.stacks[s];
      Node* n = node_of_stack[s];
      if (!n) {
        n = &root;
        for (std::size_t i = 0; i < frames.size() && i + 1 < kMaxFrames; ++i) n = child(n, frames[i]);
        node_of_stack[s] = n;
      }
      if (frames.size() + 1 > kMaxFrames) {  // the rest of the frames and the name, as one
        std::string tail;
        for (std::size_t i = kMaxFrames - 1; i < frames.size(); ++i) tail.append(frames[i]).push_back(';');
        tail.append(sample.name);
        tails.push_back(std::move(tail));
        n = child(n, tails.back());
      } else {
        n = child(n, sample.name);
      }
      n->ns += sample.ns;
    }
    total(root);
    JsonWriter j;
    j.begin_object();
    j.key("metric").value(metric);
    j.key("unit").value("us");
    j.key("tree");
    write_node(j, "all", root);
    j.end_object();
    w.add(std::string("flame.") + metric, j.buffer());
  }
}

}  // namespace ptprof::view
