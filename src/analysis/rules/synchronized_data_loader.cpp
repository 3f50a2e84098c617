// torch.profiler's SynchronizedDataLoaderPattern: a DataLoader without worker processes, which
// makes each batch on the training thread, in the step.
//
// torch's matcher, kept exactly: the Python tracer's call of torch/utils/data/dataloader.py's
// __iter__ whose first child is its _get_iterator, whose first child is not
// check_worker_number_rationality (which only a loader with workers calls). It needs the
// iterator's creation inside the window and with_stack in Python. ptprof also matches the
// fetches themselves, which every step has: a data-loader range named for the single-process
// iterator ("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", Python's, and
// ptprof::DataLoaderRange's default) in which operators ran on its thread (made the batch there;
// a libtorch DataLoader with workers only waits in it).
#include <string>
#include <string_view>
#include <vector>

#include "analysis/names.h"
#include "analysis/rules/registry.h"
#include "analysis/rules/torch_patterns.h"

namespace ptprof::detail {

namespace {

constexpr std::string_view kDataLoaderPy = "torch/utils/data/dataloader.py";
constexpr std::string_view kSingleProcessNext =
    "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__";

bool dataloader_function(std::string_view name, std::string_view function) {
  return starts_with(name, kDataLoaderPy) && ends_with(name, function);
}

void evaluate(const RuleContext& c, RuleOutput& out) {
  bool any = !c.t.python_functions.empty();
  for (const Event& e : c.t.events) any |= is_host_range(e.kind) && e.name == kSingleProcessNext;
  if (!any) return;
  const HostTree& tree = c.host_tree();
  MatchedEvidence iterators;
  std::vector<int32_t> fetches;     // where the steps load, for the saving
  std::vector<int32_t> next_calls;  // the same as the Python tracer's calls
  for (int32_t n = 0; n < tree.size(); ++n) {
    const std::string_view name = tree.name(n);
    if (tree.is_python(n)) {
      if (dataloader_function(name, ": __next__")) next_calls.push_back(n);
      if (!dataloader_function(name, "__iter__") || tree.children(n).empty()) continue;
      const int32_t get = tree.children(n)[0];
      if (!dataloader_function(tree.name(get), "_get_iterator") || tree.children(get).empty())
        continue;
      if (dataloader_function(tree.name(tree.children(get)[0]), "check_worker_number_rationality"))
        continue;
      iterators.add(c, std::string(name) + ": a DataLoader without workers", n);
    } else if (name == kSingleProcessNext) {
      bool ops = false;
      tree.below(n, [&](int32_t k) {
        ops |= !tree.is_python(k);
        return !ops;
      });
      if (ops) fetches.push_back(n);
    }
  }
  if (iterators.empty() && fetches.empty()) return;
  if (fetches.empty()) fetches = next_calls;
  Report::Finding f;
  f.title = "The DataLoader makes each batch on the training thread (no workers)";
  f.saving_ns_per_step = fetches.empty() ? 0 : cost_per_step(c, fetches);
  if (!fetches.empty()) {
    MatchedEvidence loads;
    for (int32_t n : fetches)
      loads.add(c, std::string(tree.name(n)) + (tree.is_python(n) ? "" : ", ops inside"), n);
    f.evidence = loads.take(c);
  }
  for (auto& e : iterators.take(c)) f.evidence.push_back(std::move(e));
  f.recommendation =
      "Batches are loaded, decoded and collated in the step, on the thread that then trains on "
      "them. Load them in parallel with the step: torch::data::DataLoaderOptions().workers(N) "
      "in libtorch, num_workers > 0 (with pin_memory and persistent_workers) in Python.";
  out.add(std::move(f));
}

}  // namespace

const Rule synchronized_data_loader_rule = {
    "synchronized_data_loader",
    "torch",
    "SynchronizedDataLoaderPattern: the Python call of dataloader.py's __iter__ whose first "
    "child _get_iterator does not begin with check_worker_number_rationality; also a "
    "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__ range with operators inside",
    "the time of those data-loader fetches (0 where only the iterator's creation was seen)",
    {},
    evaluate,
};

}  // namespace ptprof::detail
