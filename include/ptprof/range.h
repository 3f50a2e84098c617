// ptprof/range.h: user ranges, recorded as "user_annotation" like torch.profiler's
// record_function.
//
// A Range goes through libtorch's at::RecordFunction with the USER_SCOPE, so it nests with
// ATen ops and is seen by any RecordFunction observer, ptprof or not. When nothing observes
// user scopes it costs one branch.
#pragma once

#include <string_view>

#include <ATen/record_function.h>

namespace ptprof {

class Range {
 public:
  explicit Range(std::string_view name);
  ~Range() = default;
  Range(const Range&) = delete;
  Range& operator=(const Range&) = delete;

 private:
  at::RecordFunction rf_;
};

// Marks one data-loader fetch with the name PyTorch gives it,
// "enumerate(DataLoader)#<iterator>.__next__", so TensorBoard counts it as DataLoader time.
class DataLoaderRange : public Range {
 public:
  explicit DataLoaderRange(std::string_view iterator = "_SingleProcessDataLoaderIter");
};

}  // namespace ptprof

#define PTPROF_CONCAT_INNER_(a, b) a##b
#define PTPROF_CONCAT_(a, b) PTPROF_CONCAT_INNER_(a, b)
// Scoped user range: PTPROF_RANGE("forward");
#define PTPROF_RANGE(name) ::ptprof::Range PTPROF_CONCAT_(ptprof_range_, __COUNTER__)(name)
