// The host tree (host_tree.h). Without Python calls the trace's own nesting (Event::parent,
// Trace::rebuild_tree) is the tree; with them, each thread's ranges and calls are nested again
// by time, as rebuild_tree nests ranges: a node is the child of the innermost open one that
// contains it, a Python call outside an operator that starts and ends with it.
#include "analysis/report/host_tree.h"

#include <algorithm>
#include <map>
#include <numeric>

#include "analysis/report/index.h"

namespace ptprof::detail {

HostTree::HostTree(const Trace& t) : t_(t), node_of_event_(t.events.size(), -1) {
  for (int64_t i = 0; i < static_cast<int64_t>(t.events.size()); ++i) {
    if (!is_host_range(t.events[i].kind)) continue;
    node_of_event_[static_cast<std::size_t>(i)] = static_cast<int32_t>(nodes_.size());
    nodes_.push_back({i});
  }
  const auto ranges = static_cast<int32_t>(nodes_.size());
  for (std::size_t p = 0; p < t.python_functions.size(); ++p)
    nodes_.push_back({-1 - static_cast<int64_t>(p)});
  if (t.python_functions.empty()) {
    for (int32_t n = 0; n < ranges; ++n) {
      const int64_t p = t.events[nodes_[n].event].parent;
      nodes_[n].parent = p >= 0 ? node_of_event(p) : -1;
    }
  } else {
    std::vector<int32_t> order(nodes_.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
      return tid(a) != tid(b) ? tid(a) < tid(b) : before(a, b);
    });
    std::vector<int32_t> open;
    int64_t thread = 0;
    for (int32_t n : order) {
      if (open.empty() || tid(n) != thread) open.clear();
      thread = tid(n);
      const int64_t s = start(n), e = end(n);
      while (!open.empty()) {
        const int32_t top = open.back();
        if (s < end(top) && e <= end(top)) break;
        if (s == start(top) && e == end(top)) break;  // zero length inside
        open.pop_back();
      }
      nodes_[n].parent = open.empty() ? -1 : open.back();
      open.push_back(n);
    }
  }
  link();
}

// Start order; on the same span a Python call first: it encloses the operator it calls.
bool HostTree::before(int32_t a, int32_t b) const {
  if (start(a) != start(b)) return start(a) < start(b);
  if (end(a) != end(b)) return end(a) > end(b);
  if (is_python(a) != is_python(b)) return is_python(a);
  return a < b;
}

int64_t HostTree::end(int32_t n) const {
  if (is_python(n)) return python(n).start_ns + python(n).duration_ns;
  return end_of(t_.events[static_cast<std::size_t>(event(n))]);
}

// Sibling lists in start order: each node's children, and per thread its top-level nodes.
void HostTree::link() {
  children_list_.assign(nodes_.size(), -1);
  std::map<int64_t, int32_t> top_list;  // tid -> list of top-level nodes
  std::vector<int32_t> count;
  auto list_of = [&](int32_t n) {
    const Node& node = nodes_[n];
    if (node.parent >= 0) {
      int32_t& l = children_list_[node.parent];
      if (l < 0) {
        l = static_cast<int32_t>(count.size());
        count.push_back(0);
      }
      return l;
    }
    auto [it, fresh] = top_list.try_emplace(tid(n), static_cast<int32_t>(count.size()));
    if (fresh) count.push_back(0);
    return it->second;
  };
  for (int32_t n = 0; n < size(); ++n) {
    nodes_[n].list = list_of(n);
    nodes_[n].position = count[nodes_[n].list]++;
  }
  lists_.resize(count.size());
  int32_t offset = 0;
  for (std::size_t k = 0; k < count.size(); ++k) {
    lists_[k] = {offset, count[k]};
    offset += count[k];
  }
  ids_.assign(static_cast<std::size_t>(offset), -1);
  for (int32_t n = 0; n < size(); ++n) ids_[lists_[nodes_[n].list].offset + nodes_[n].position] = n;
  for (const Span& l : lists_) {
    int32_t* first = ids_.data() + l.offset;
    if (!std::is_sorted(first, first + l.size, [&](int32_t a, int32_t b) { return before(a, b); }))
      std::sort(first, first + l.size, [&](int32_t a, int32_t b) { return before(a, b); });
    for (int32_t k = 0; k < l.size; ++k) nodes_[first[k]].position = k;
  }
}

HostTree::List HostTree::children(int32_t n) const {
  const int32_t l = children_list_[n];
  if (l < 0) return {};
  return {ids_.data() + lists_[l].offset, lists_[l].size};
}

HostTree::List HostTree::siblings(int32_t n) const {
  const Span& s = lists_[nodes_[n].list];
  return {ids_.data() + s.offset, s.size};
}

int32_t HostTree::prev_sibling(int32_t n) const {
  const int32_t pos = nodes_[n].position;
  return pos > 0 ? siblings(n)[pos - 1] : -1;
}

int32_t HostTree::next_sibling(int32_t n) const {
  const List s = siblings(n);
  const int32_t pos = nodes_[n].position;
  return pos + 1 < s.size ? s[pos + 1] : -1;
}

int32_t HostTree::node_of_event(int64_t event) const {
  return event >= 0 && static_cast<std::size_t>(event) < node_of_event_.size()
             ? node_of_event_[static_cast<std::size_t>(event)]
             : -1;
}

}  // namespace ptprof::detail
