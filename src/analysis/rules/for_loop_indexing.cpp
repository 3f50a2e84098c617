// torch.profiler's ForLoopIndexingPattern: a loop that indexes a tensor one element (or row)
// at a time, `for i: t[i] = ...`.
//
// torch's matcher, kept exactly (it walks the tree breadth first, which only matters for the
// `visited` set: it holds later siblings): at an aten::select not visited, the ops from it to
// the next aten::select among its siblings are one iteration; the iterations after it that
// repeat the same names are counted (each one's first op visited); for_loop_min_repeats (10)
// iterations or more is a match. report_all_anti_patterns leaves this matcher out (commented
// out in torch); ptprof reports it.
#include <string>
#include <vector>

#include "analysis/rules/registry.h"
#include "analysis/rules/torch_patterns.h"

namespace ptprof::detail {

namespace {

void evaluate(const RuleContext& c, RuleOutput& out) {
  // Cheap first: most traces have no aten::select at all.
  bool any_select = false;
  for (const Event& e : c.t.events)
    any_select |= e.kind == EventKind::CpuOp && e.name == "aten::select";
  if (!any_select) return;
  const HostTree& tree = c.host_tree();
  std::vector<char> visited(static_cast<std::size_t>(tree.size()), 0);
  MatchedEvidence matched;
  std::vector<int32_t> loop_ops;
  int64_t loops = 0;
  for (int32_t k = 0; k < tree.lists(); ++k) {
    const HostTree::List list = tree.list(k);
    for (int32_t i = 0; i < list.size; ++i) {
      const int32_t first = list[i];
      if (tree.name(first) != "aten::select" || visited[static_cast<std::size_t>(first)]) continue;
      if (list.size - i - 1 <= 1) continue;
      int32_t next_select = -1;
      for (int32_t j = i + 1; j < list.size; ++j) {
        if (tree.name(list[j]) == "aten::select") {
          next_select = j;
          break;
        }
      }
      if (next_select < 0) continue;
      const int32_t width = next_select - i;  // ops in one iteration
      int32_t repeats = 1;
      for (int32_t q = next_select; q < list.size; q += width) {
        bool same = q + width <= list.size;
        for (int32_t o = 0; same && o < width; ++o)
          same = tree.name(list[q + o]) == tree.name(list[i + o]);
        if (!same) break;
        ++repeats;
        visited[static_cast<std::size_t>(list[q])] = 1;
      }
      if (repeats < c.th.for_loop_min_repeats) continue;
      ++loops;
      std::string what;
      for (int32_t o = 0; o < width; ++o)
        what += (o ? ", " : "") + std::string(tree.name(list[i + o]));
      what += " repeated " + std::to_string(repeats) + " times";
      matched.add(c, what, first);
      for (int32_t o = i; o < i + repeats * width; ++o) loop_ops.push_back(list[o]);
    }
  }
  if (matched.empty()) return;
  Report::Finding f;
  f.title = std::to_string(loops) + (loops == 1 ? " loop indexes" : " loops index") +
            " a tensor one element at a time";
  f.saving_ns_per_step = cost_per_step(c, loop_ops);
  f.evidence = matched.take(c);
  f.recommendation =
      "Each iteration runs a few tiny ops (a select and what follows it), each with its own "
      "dispatch and, on the GPU, its own kernel. Do it as one tensor op: index with a tensor of "
      "indices (index_select, index_put_, index_copy_, masked_fill_), slice "
      "(t.index({torch::indexing::Slice(a, b)}) in C++), or compute the values for all rows at "
      "once.";
  out.add(std::move(f));
}

}  // namespace

const Rule for_loop_indexing_rule = {
    "for_loop_indexing",
    "torch",
    "ForLoopIndexingPattern: among sibling ops, an aten::select and the ops up to the next one "
    "repeat, same names, at least `for_loop_min_repeats` times",
    "the time of the loop's ops",
    {"for_loop_min_repeats"},
    evaluate,
};

}  // namespace ptprof::detail
