// fwd_bwd.h: autograd's links from a forward op to the backward op that ran for it, as
// PyTorch's profiler draws them (the "fwdbwd" flows of its traces), and the sequence numbers
// its autograd::engine::evaluate_function ops carry.
//
// Both are worked out from what every recorded op already has (its sequence number, its own
// and its forward thread's logical ids), so a trace stores neither: the writer draws the links,
// the reader takes back the logical thread ids the links imply (traces do not carry them).
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

#include "ptprof/event.h"

namespace ptprof::detail {

// The prefix of the ops autograd's engine records around each backward node.
constexpr std::string_view kEvaluateFunctionPrefix = "autograd::engine::evaluate_function: ";

struct FwdBwdLink {
  std::size_t forward;   // index of the forward op
  std::size_t backward;  // index of the backward node op autograd ran for it
};

// PyTorch's rule (profiler_kineto.cpp, generateForwardBackwardLink), over CPU ops in start
// order: a forward op (a sequence number, no forward thread) stands for its (logical thread,
// sequence number) until a later-started one with the same pair; a backward node op (a forward
// thread; not an evaluate_function op) links to the one standing for (its forward thread, its
// sequence number) when it starts. Ops without a logical thread id (read from a trace that
// had no links) take part in none. In the order the backward ops start: Kineto's flow ids
// are the positions from 1.
std::vector<FwdBwdLink> fwd_bwd_links(const std::vector<Event>& events);

// An evaluate_function op takes the sequence number and forward thread of the backward node
// it runs (its first child, when that is one), as PyTorch's profiler gives it them
// (collection.cpp, set_autograd_evaluate). Needs parents (Trace::rebuild_tree).
void number_evaluate_functions(std::vector<Event>& events);

}  // namespace ptprof::detail
