// Computation / communication per step, TensorBoard's Distributed overview
// (OverallParser.aggregate): how much of each step computed, communicated, did both at once, or
// neither. Computation is the breakdown's Kernel role (kernels not launched by a communication
// op; without any such kernel, its CPU Exec role: host ops), communication its Communication
// role (nccl:/gloo: ops and the kernels they launched), overlap both at once.
#include "analysis/report/analysis.h"

namespace ptprof::detail {

void comm_overlap(Analysis& a) {
  Report& r = a.r;
  if (!r.breakdown_determined || r.steps.empty()) return;
  const bool gpu = a.facts.any_compute_kernel;
  r.comm_overlap_basis = gpu ? "kernels" : "host_ops";
  const Intervals& computation = gpu ? a.facts.kernel_role : a.facts.cpu_exec_role;
  const Intervals& communication = a.facts.comm_role;
  const Intervals both = intersect(computation, communication);
  for (const Report::Step& s : r.steps) {
    Report::StepOverlap o;
    o.step = s.name;
    const int64_t comp = total_within(computation, s.start_ns, s.end_ns);
    const int64_t com = total_within(communication, s.start_ns, s.end_ns);
    o.overlap_ns = total_within(both, s.start_ns, s.end_ns);
    o.computation_ns = comp - o.overlap_ns;
    o.communication_ns = com - o.overlap_ns;
    o.other_ns = s.total_ns() + o.overlap_ns - comp - com;
    r.comm_overlap.push_back(o);
  }
}

}  // namespace ptprof::detail
