#include "trace/op_input_text.h"

#include <charconv>
#include <cstdint>
#include <limits>
#include <string_view>
#include <vector>

#include "trace/decimal.h"

namespace ptprof::detail {

namespace {

// The value of a Scalar input from its text as PyTorch prints it ("1", "0.5", "True", "nan").
double scalar_value(std::string_view s) {
  if (s == "True") return 1;
  if (s == "False") return 0;
  const IntValue i = parse_int(s);
  if (i.has)
    return i.negative ? -static_cast<double>(i.magnitude) : static_cast<double>(i.magnitude);
  double d = 0;
  const char* b = s.data();
  if (!s.empty() && s[0] == '+') ++b;
  const auto r = std::from_chars(b, s.data() + s.size(), d);
  if (r.ec == std::errc::result_out_of_range)
    return (s[0] == '-' ? -1.0 : 1.0) * std::numeric_limits<double>::infinity();
  return r.ec == std::errc() && r.ptr == s.data() + s.size() ? d : 0;
}

// A ScalarList's values (OpInput::sizes) from its text ("[1, 2]", "[0.5, 1.0]", "[True]"), as
// details.cpp keeps them: ints as they are, doubles truncated, kUnknownListValue where a double
// has no int64.
void scalar_list_values(std::string_view s, std::vector<int64_t>* out) {
  constexpr int64_t kUnknown = std::numeric_limits<int64_t>::min();
  out->clear();
  if (s.size() < 2 || s.front() != '[' || s.back() != ']') return;
  s = s.substr(1, s.size() - 2);
  while (!s.empty()) {
    const auto comma = s.find(',');
    std::string_view item = s.substr(0, comma);
    s = comma == std::string_view::npos ? std::string_view() : s.substr(comma + 1);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (item.empty()) continue;
    const IntValue i = parse_int(item);
    if (i.has) {
      out->push_back(i.i64(kUnknown));
    } else if (item == "True" || item == "False") {
      out->push_back(item == "True");
    } else {
      const double d = scalar_value(item);
      out->push_back(d >= -9223372036854775808.0 && d < 9223372036854775808.0
                         ? static_cast<int64_t>(d)
                         : kUnknown);
    }
  }
}

}  // namespace

void finish_input(OpInput& in) {
  using Kind = OpInput::Kind;
  if (in.dtype == "TensorList" || (!in.list_sizes.empty() && in.sizes.empty())) {
    in.kind = Kind::TensorList;
  } else if (in.dtype == "Scalar") {
    in.kind = Kind::Scalar;
    in.scalar = scalar_value(in.concrete);
    in.sizes.clear();
  } else if (in.dtype == "ScalarList") {
    in.kind = Kind::ScalarList;
    scalar_list_values(in.concrete, &in.sizes);
  } else if (in.dtype.empty() && in.sizes.empty() && in.list_sizes.empty()) {
    in.kind = Kind::None;  // also what an input of kind Other is written as
  } else {
    in.kind = Kind::Tensor;
  }
  if (in.kind != Kind::Tensor) in.strides.clear();
  if (in.kind == Kind::TensorList) in.sizes.clear();
  if (in.kind != Kind::TensorList) in.list_sizes.clear();
}

}  // namespace ptprof::detail
