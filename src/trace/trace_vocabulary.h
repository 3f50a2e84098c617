// trace_vocabulary.h: what the names in a trace mean to the model: event categories, flow
// categories, step names, CUPTI's copy and memory kinds in a copy's name. The reader asks for
// every event, so the per-event lookups are inline.
#pragma once

#include <cstdint>
#include <string_view>
#include <utility>

#include "ptprof/event.h"
#include "trace/decimal.h"

namespace ptprof::detail {

// N of a step range's name "ProfilerStep#N", as the session writes it: 1 to 18 digits, no
// leading zero (a user range that only looks like one, "ProfilerStep#07", is no step).
inline bool step_number(std::string_view name, int64_t* step) {
  constexpr std::string_view kPrefix = "ProfilerStep#";
  if (name.rfind(kPrefix, 0) != 0) return false;
  const std::string_view digits = name.substr(kPrefix.size());
  if (digits.empty() || digits.size() > 18 || (digits.size() > 1 && digits[0] == '0')) return false;
  int64_t n = 0;
  for (char c : digits) {
    if (!is_digit(c)) return false;
    n = n * 10 + (c - '0');
  }
  *step = n;
  return true;
}

inline char lower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

// Categories by their lower-cased name (Kineto wrote "gpu_user_Annotation" for a while, and
// consumers compare without case). The capitalized ones are PyTorch 1.8-1.9's (Kineto's
// output before its ActivityType names); "User" was its GPU user span ("stream N user").
// Forced inline: GCC leaves a header function this size out of line, a call per event.
__attribute__((always_inline)) inline bool kind_of(std::string_view cat, EventKind* kind) {
  static const std::pair<std::string_view, EventKind> kCats[] = {
      {"cpu_op", EventKind::CpuOp},
      {"operator", EventKind::CpuOp},
      {"user_annotation", EventKind::UserAnnotation},
      {"kernel", EventKind::Kernel},
      {"gpu_memcpy", EventKind::Memcpy},
      {"memcpy", EventKind::Memcpy},
      {"gpu_memset", EventKind::Memset},
      {"memset", EventKind::Memset},
      {"cuda_runtime", EventKind::CudaRuntime},
      {"runtime", EventKind::CudaRuntime},
      {"cuda_driver", EventKind::CudaDriver},
      {"cuda_sync", EventKind::CudaSync},
      {"gpu_user_annotation", EventKind::GpuUserAnnotation},
      {"user", EventKind::GpuUserAnnotation},
      {"overhead", EventKind::Overhead},
  };
  for (const auto& [name, k] : kCats) {
    if (cat == name) {
      *kind = k;
      return true;
    }
  }
  return false;
}

// Flows from a CPU launch to its GPU activity, by the names Kineto has given them: "ac2g"
// since late 2022, "async_cpu_to_gpu"/"async_gpu" before, "async" (PyTorch 1.8). Forward/
// backward links ("fwdbwd") are not kept but drawn again from the ops (fwd_bwd.h).
inline bool is_launch_flow(std::string_view cat) {
  return cat == "ac2g" || cat == "async_cpu_to_gpu" || cat == "async_gpu" || cat == "async";
}

// CUPTI's copy and memory kinds by the names in a copy's or memset's event name
// ("Memcpy HtoD (Pageable -> Device)", "Memset (Device)"), which is where the trace keeps them.
void transfer_kinds_from_name(EventKind kind, std::string_view name, TransferInfo* t);

}  // namespace ptprof::detail
