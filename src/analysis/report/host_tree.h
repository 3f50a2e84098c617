// host_tree.h: the host's ranges (operators, user ranges) and Python calls of a trace as one
// tree per thread, children in start order: the event tree torch.profiler's pattern matchers
// walk (parent, children, siblings). Built on first use by the rules that need it.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "ptprof/trace.h"

namespace ptprof::detail {

class HostTree {
 public:
  explicit HostTree(const Trace& t);

  struct List {  // a run of node ids
    const int32_t* first = nullptr;
    int32_t size = 0;
    const int32_t* begin() const { return first; }
    const int32_t* end() const { return first + size; }
    bool empty() const { return size == 0; }
    int32_t operator[](int32_t i) const { return first[i]; }
    int32_t back() const { return first[size - 1]; }
  };

  int32_t size() const { return static_cast<int32_t>(nodes_.size()); }
  std::string_view name(int32_t n) const {
    return is_python(n) ? python(n).name : t_.events[static_cast<std::size_t>(event(n))].name;
  }
  int64_t start(int32_t n) const {
    return is_python(n) ? python(n).start_ns
                        : t_.events[static_cast<std::size_t>(event(n))].start_ns;
  }
  int64_t end(int32_t n) const;
  // The node's event in Trace::events; -1 for a Python call.
  int64_t event(int32_t n) const { return nodes_[n].event >= 0 ? nodes_[n].event : -1; }
  bool is_python(int32_t n) const { return nodes_[n].event < 0; }
  int32_t parent(int32_t n) const { return nodes_[n].parent; }  // -1: top level
  List children(int32_t n) const;
  // The list `n` is in (its parent's children, or its thread's top-level nodes) and its place.
  List siblings(int32_t n) const;
  int32_t position(int32_t n) const { return nodes_[n].position; }
  int32_t prev_sibling(int32_t n) const;  // -1: none
  int32_t next_sibling(int32_t n) const;
  // Calls visit(k) for each node k below `n`, depth first; into k's own children only while
  // visit returns true.
  template <typename Visit>
  void below(int32_t n, Visit visit) const {
    std::vector<int32_t> todo(children(n).begin(), children(n).end());
    while (!todo.empty()) {
      const int32_t k = todo.back();
      todo.pop_back();
      if (!visit(k)) continue;
      for (int32_t child : children(k)) todo.push_back(child);
    }
  }
  // Every sibling list: each node's children, and each thread's top-level nodes.
  int32_t lists() const { return static_cast<int32_t>(lists_.size()); }
  List list(int32_t k) const { return {ids_.data() + lists_[k].offset, lists_[k].size}; }
  // The node of a host range of Trace::events, -1 for any other event.
  int32_t node_of_event(int64_t event) const;

 private:
  struct Node {
    int64_t event;  // >= 0: Trace::events; < 0: Trace::python_functions[-1 - event]
    int32_t parent = -1;
    int32_t position = 0;  // in its sibling list
    int32_t list = 0;      // index of its sibling list in lists_
  };
  const PythonFunction& python(int32_t n) const {
    return t_.python_functions[static_cast<std::size_t>(-1 - nodes_[n].event)];
  }
  int64_t tid(int32_t n) const {
    return is_python(n) ? python(n).tid : t_.events[static_cast<std::size_t>(event(n))].tid;
  }
  struct Span {
    int32_t offset = 0, size = 0;
  };
  bool before(int32_t a, int32_t b) const;
  void link();

  const Trace& t_;
  std::vector<Node> nodes_;
  std::vector<int32_t> ids_;            // every sibling list, one after the other
  std::vector<Span> lists_;             // lists_[k]: the k-th list in ids_
  std::vector<int32_t> children_list_;  // node -> its children's list, -1: none
  std::vector<int32_t> node_of_event_;  // Trace::events index -> node, -1: none
};

}  // namespace ptprof::detail
