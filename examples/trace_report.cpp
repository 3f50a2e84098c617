// Reads a trace (ptprof's or torch.profiler's, .json or .json.gz) and prints its report: the
// analysis side of ptprof alone, with no libtorch (it links ptprof::core only).
//
//   trace_report TRACE
#include <cstdio>
#include <iostream>

#include "ptprof/error.h"
#include "ptprof/report.h"
#include "ptprof/trace.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s TRACE\n", argv[0]);
    return 2;
  }
  try {
    const ptprof::Trace trace = ptprof::Trace::load(argv[1]);
    std::cout << ptprof::Report(trace).summary();
  } catch (const ptprof::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
  return 0;
}
