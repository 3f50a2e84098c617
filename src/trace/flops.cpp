#include "trace/flops.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <string>

#include "trace/op_inputs.h"

namespace ptprof::detail {

namespace {

using Sizes = std::vector<int64_t>;

// A product of sizes that turns into "unknown" (0) on a negative size (symbolic or garbage)
// or on overflow, instead of wrapping around to a plausible-looking number.
class Count {
 public:
  explicit Count(uint64_t v = 1) : v_(v) {}
  Count& operator*=(int64_t x) {
    if (x < 0 || __builtin_mul_overflow(v_, static_cast<uint64_t>(x), &v_)) bad_ = true;
    return *this;
  }
  Count& operator*=(const Count& c) {
    if (c.bad_ || __builtin_mul_overflow(v_, c.v_, &v_)) bad_ = true;
    return *this;
  }
  Count& operator+=(const Count& c) {
    if (c.bad_ || __builtin_add_overflow(v_, c.v_, &v_)) bad_ = true;
    return *this;
  }
  uint64_t get() const { return bad_ ? 0 : v_; }

 private:
  uint64_t v_;
  bool bad_ = false;
};

Count prod(const int64_t* b, const int64_t* e) {
  Count c;
  for (; b != e; ++b) c *= *b;
  return c;
}
Count prod(const Sizes& s) {
  return prod(s.data(), s.data() + s.size());
}

const Sizes* tensor(const std::vector<OpInput>& in, std::size_t i) {
  return i < in.size() && in[i].kind == OpInput::Kind::Tensor ? &in[i].sizes : nullptr;
}

bool absent(const std::vector<OpInput>& in, std::size_t i) {
  return i >= in.size() || in[i].kind == OpInput::Kind::None;
}

// An int argument; nullopt where it is not a Scalar or its value has no int64_t.
std::optional<int64_t> int_arg(const std::vector<OpInput>& in, std::size_t i, int64_t dflt) {
  if (absent(in, i)) return dflt;
  if (in[i].kind == OpInput::Kind::Scalar) return double_to_int64(in[i].scalar);
  return std::nullopt;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::optional<bool> bool_arg(const std::vector<OpInput>& in, std::size_t i, bool dflt) {
  if (absent(in, i)) return dflt;
  if (in[i].kind != OpInput::Kind::Scalar) return std::nullopt;
  const std::string c = lower(in[i].concrete);
  if (c == "true") return true;
  if (c == "false") return false;
  return in[i].scalar != 0;
}

// An int list argument (stride, padding, ...) for `n` spatial dims; a single value applies to
// all of them, as ATen's expand_param_if_needed does.
std::optional<Sizes> int_list(const std::vector<OpInput>& in, std::size_t i, int64_t dflt,
                              std::size_t n) {
  if (absent(in, i)) return Sizes(n, dflt);
  const OpInput& x = in[i];
  if (x.kind == OpInput::Kind::Scalar) {
    const auto v = double_to_int64(x.scalar);
    if (!v) return std::nullopt;
    return Sizes(n, *v);
  }
  if (x.kind != OpInput::Kind::ScalarList) return std::nullopt;
  if (std::find(x.sizes.begin(), x.sizes.end(), kUnknownListValue) != x.sizes.end())
    return std::nullopt;
  if (x.sizes.size() == 1) return Sizes(n, x.sizes[0]);
  if (x.sizes.size() != n) return std::nullopt;
  return x.sizes;
}

// A bool list (output_mask): from the captured values, else parsed from the concrete text
// ("[True, True, False]"). Unknown masks count every output, the common case in training.
std::vector<bool> bool_list(const std::vector<OpInput>& in, std::size_t i, std::size_t n) {
  std::vector<bool> out(n, true);
  if (absent(in, i)) return out;
  const OpInput& x = in[i];
  if (x.kind == OpInput::Kind::ScalarList && x.sizes.size() == n) {
    for (std::size_t k = 0; k < n; ++k) out[k] = x.sizes[k] != 0;
    return out;
  }
  const std::string c = lower(x.concrete);
  std::size_t k = 0;
  for (std::size_t p = 0; p < c.size() && k < n; ++p) {
    if (c.compare(p, 4, "true") == 0 || c[p] == '1') {
      out[k++] = true;
    } else if (c.compare(p, 5, "false") == 0 || c[p] == '0') {
      out[k++] = false;
    } else {
      continue;
    }
    while (p < c.size() && c[p] != ',') ++p;
  }
  return out;
}

// NumPy broadcasting of two shapes; nullopt if they are incompatible.
std::optional<Sizes> broadcast(const Sizes& a, const Sizes& b) {
  Sizes out(std::max(a.size(), b.size()));
  for (std::size_t i = 0; i < out.size(); ++i) {
    const int64_t x = i < a.size() ? a[a.size() - 1 - i] : 1;
    const int64_t y = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (x != y && x != 1 && y != 1) return std::nullopt;
    out[out.size() - 1 - i] = x == 1 ? y : x;
  }
  return out;
}

uint64_t matmul_2d(const Sizes* a, const Sizes* b) {
  if (!a || !b || a->size() != 2 || b->size() != 2 || (*a)[1] != (*b)[0]) return 0;
  Count c(2);
  c *= (*a)[0];
  c *= (*a)[1];
  c *= (*b)[1];
  return c.get();
}

uint64_t matmul_3d(const Sizes* a, const Sizes* b) {
  if (!a || !b || a->size() != 3 || b->size() != 3 || (*a)[0] != (*b)[0] || (*a)[2] != (*b)[1])
    return 0;
  Count c(2);
  for (int64_t x : *a) c *= x;
  c *= (*b)[2];
  return c.get();
}

// torch.matmul's cases: dot, matrix-vector, vector-matrix, and batched with broadcast batch
// dims (a 1-d operand gets a size-1 dim that is dropped again from the result).
uint64_t matmul(const Sizes* a, const Sizes* b) {
  if (!a || !b || a->empty() || b->empty()) return 0;
  const std::size_t da = a->size(), db = b->size();
  const int64_t m = da == 1 ? 1 : (*a)[da - 2];
  const int64_t k = (*a)[da - 1];
  const int64_t k2 = db == 1 ? (*b)[0] : (*b)[db - 2];
  const int64_t n = db == 1 ? 1 : (*b)[db - 1];
  if (k != k2) return 0;
  const Sizes batch_a(a->begin(), a->end() - std::min<std::size_t>(da, 2));
  const Sizes batch_b(b->begin(), b->end() - std::min<std::size_t>(db, 2));
  const auto batch = broadcast(batch_a, batch_b);
  if (!batch) return 0;
  Count c(2);
  c *= prod(*batch);
  c *= m;
  c *= k;
  c *= n;
  return c.get();
}

// aten::linear(input, weight, bias): input (..., in), weight (out, in) or (in).
uint64_t linear(const Sizes* x, const Sizes* w) {
  if (!x || !w || x->empty() || w->empty() || w->size() > 2) return 0;
  const int64_t in = w->back();
  const int64_t out = w->size() == 2 ? (*w)[0] : 1;
  if (x->back() != in) return 0;
  Count c(2);
  c *= prod(x->data(), x->data() + x->size() - 1);
  c *= in;
  c *= out;
  return c.get();
}

// A convolution's output size in one dim, (in + 2p - d(k-1) - 1) / s + 1; nullopt where a step
// overflows int64_t (recorded arguments can be anything) or the stride is not positive.
std::optional<int64_t> conv_out(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) {
  if (s <= 0) return std::nullopt;
  int64_t two_p, k1, span, v;
  if (__builtin_mul_overflow(p, 2, &two_p) || __builtin_sub_overflow(k, 1, &k1) ||
      __builtin_mul_overflow(d, k1, &span) || __builtin_add_overflow(in, two_p, &v) ||
      __builtin_sub_overflow(v, span, &v) || __builtin_sub_overflow(v, 1, &v) ||
      __builtin_add_overflow(v / s, 1, &v))
    return std::nullopt;
  return v;
}

// The "same" padding's output size, ceil(in / s).
std::optional<int64_t> conv_same_out(int64_t in, int64_t s) {
  if (s <= 0) return std::nullopt;
  int64_t v;
  if (__builtin_add_overflow(in, s - 1, &v)) return std::nullopt;
  return v / s;
}

// Where a convolution op keeps its arguments (indexes into the schema; -1: not in it).
struct ConvSchema {
  int stride, padding, dilation, transposed, groups;
  bool always_transposed;
};

// 2 * N * prod(spatial) * prod(kernel) * w[0] * w[1], PyTorch's conv_flop_count: spatial is the
// output's for a convolution and the input's for a transposed one, and w[0] * w[1] is
// Cout * Cin/groups (weight (Cout, Cin/groups, k...)) or Cin * Cout/groups (transposed weight
// (Cin, Cout/groups, k...)).
uint64_t convolution(const std::vector<OpInput>& in, const ConvSchema& s) {
  const Sizes* x = tensor(in, 0);
  const Sizes* w = tensor(in, 1);
  if (!x || !w || w->size() < 3) return 0;
  const std::size_t nd = w->size() - 2;  // spatial dims
  // Unbatched input (C, spatial...) is allowed by conv1d/2d/3d.
  if (x->size() != w->size() && x->size() != w->size() - 1) return 0;
  const bool batched = x->size() == w->size();
  const int64_t n = batched ? (*x)[0] : 1;
  const int64_t channels = (*x)[batched ? 1 : 0];
  const int64_t* x_spatial = x->data() + (batched ? 2 : 1);
  const int64_t* kernel = w->data() + 2;

  bool transposed = s.always_transposed;
  if (s.transposed >= 0) {
    const auto t = bool_arg(in, s.transposed, false);
    if (!t) return 0;
    transposed = *t;
  }
  // ATen requires groups > 0; anything else (a double, a list) is not a valid call, and an
  // unknown groups must not skip the channel check below.
  const auto groups = int_arg(in, s.groups, 1);
  if (!groups || *groups <= 0) return 0;
  // Weights that do not fit the input mean the inputs are not what this schema expects.
  int64_t expected = (*w)[0];
  if (!transposed && __builtin_mul_overflow((*w)[1], *groups, &expected)) return 0;
  if (channels != expected) return 0;

  Count c(2);
  c *= n;
  c *= prod(kernel, kernel + nd);
  c *= (*w)[0];
  c *= (*w)[1];
  if (transposed) {
    c *= prod(x_spatial, x_spatial + nd);
    return c.get();
  }
  // Output size per dim: (in + 2p - d(k-1) - 1) / s + 1, or the conv*d.padding overloads'
  // "same" (output = input for the stride 1 they require) and "valid" (no padding).
  const auto stride = int_list(in, s.stride, 1, nd);
  const auto dilation = int_list(in, s.dilation, 1, nd);
  std::optional<Sizes> padding;
  bool same = false;
  if (!absent(in, s.padding) && in[s.padding].kind != OpInput::Kind::ScalarList &&
      in[s.padding].kind != OpInput::Kind::Scalar) {
    const std::string p = lower(in[s.padding].concrete);
    if (p.find("same") != std::string::npos) {
      same = true;
    } else if (p.find("valid") != std::string::npos) {
      padding = Sizes(nd, 0);
    } else {
      return 0;
    }
  } else {
    padding = int_list(in, s.padding, 0, nd);
  }
  if (!stride || !dilation || (!same && !padding)) return 0;
  for (std::size_t i = 0; i < nd; ++i) {
    const auto out =
        same ? conv_same_out(x_spatial[i], (*stride)[i])
             : conv_out(x_spatial[i], kernel[i], (*stride)[i], (*padding)[i], (*dilation)[i]);
    if (!out || *out <= 0) return 0;
    c *= *out;
  }
  return c.get();
}

// aten::convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation,
// transposed, output_padding, groups, output_mask). grad_input and grad_weight each cost what
// the forward convolution costs. (PyTorch's conv_backward_flop leaves out the 1/groups of
// grad_weight, over-counting grouped and depthwise convolutions; this does not.)
uint64_t convolution_backward(const std::vector<OpInput>& in) {
  const Sizes* gy = tensor(in, 0);
  const Sizes* x = tensor(in, 1);
  const Sizes* w = tensor(in, 2);
  if (!gy || !x || !w || w->size() < 3 || gy->size() != x->size()) return 0;
  if (x->size() != w->size()) return 0;  // the backward op always sees batched tensors
  const auto transposed = bool_arg(in, 7, false);
  if (!transposed) return 0;
  const std::size_t nd = w->size() - 2;
  // The spatial extent the forward formula runs over: grad_output's (= the output's) for a
  // convolution, the input's for a transposed one.
  const Sizes& spatial = *transposed ? *x : *gy;
  Count one(2);
  one *= (*x)[0];
  one *= prod(w->data() + 2, w->data() + 2 + nd);
  one *= (*w)[0];
  one *= (*w)[1];
  one *= prod(spatial.data() + 2, spatial.data() + 2 + nd);
  const std::vector<bool> mask = bool_list(in, 10, 3);
  Count total(0);
  if (mask[0]) total += one;
  if (mask[1]) total += one;
  return total.get();
}

// Attention over (..., L, E) tensors: batch = every dim of q before the last two (B*H).
struct Attention {
  Count batch;
  int64_t lq, lk, e, ev;
};
std::optional<Attention> attention_shapes(const Sizes* q, const Sizes* k, const Sizes* v) {
  if (!q || !k || !v || q->size() < 2 || k->size() < 2 || v->size() < 2) return std::nullopt;
  Attention a;
  a.batch = prod(q->data(), q->data() + q->size() - 2);
  a.lq = (*q)[q->size() - 2];
  a.e = q->back();
  a.lk = (*k)[k->size() - 2];
  a.ev = v->back();
  if (k->back() != a.e || (*v)[v->size() - 2] != a.lk) return std::nullopt;
  return a;
}

// PyTorch's sdpa_flop_count: scores = q @ k^T (2*B*Lq*Lk*E), then scores @ v (2*B*Lq*Lk*Ev).
uint64_t attention(const std::vector<OpInput>& in) {
  const auto a = attention_shapes(tensor(in, 0), tensor(in, 1), tensor(in, 2));
  if (!a) return 0;
  Count c(2);
  c *= a->batch;
  c *= a->lq;
  c *= a->lk;
  int64_t e;
  if (__builtin_add_overflow(a->e, a->ev, &e)) return 0;
  c *= e;
  return c.get();
}

// PyTorch's sdpa_backward_flop_count (grad_out, q, k, v first): the scores recomputed, then
// grad of scores, v, q and k: 2*B*Lq*Lk*(3E + 2Ev).
uint64_t attention_backward(const std::vector<OpInput>& in) {
  const auto a = attention_shapes(tensor(in, 1), tensor(in, 2), tensor(in, 3));
  if (!a) return 0;
  Count c(2);
  c *= a->batch;
  c *= a->lq;
  c *= a->lk;
  int64_t e3, e2, e;
  if (__builtin_mul_overflow(a->e, 3, &e3) || __builtin_mul_overflow(a->ev, 2, &e2) ||
      __builtin_add_overflow(e3, e2, &e))
    return 0;
  c *= e;
  return c.get();
}

// One operation per element of the broadcast result (PyTorch's legacy counter for add/mul).
uint64_t elementwise(const std::vector<OpInput>& in) {
  const Sizes* a = tensor(in, 0);
  if (!a) return 0;
  const Sizes* b = tensor(in, 1);
  if (!b) return prod(*a).get();
  const auto out = broadcast(*a, *b);
  return out ? prod(*out).get() : 0;
}

bool starts_with(std::string_view s, std::string_view p) {
  return s.substr(0, p.size()) == p;
}
bool ends_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

}  // namespace

namespace {

enum class Formula {
  kNone,
  kMm,
  kAddmm,
  kBmm,
  kBaddbmm,
  kMatmul,
  kLinear,
  kConvolution,
  kConvNd,
  kConvTransposeNd,
  kConvolutionBackward,
  kAttention,
  kAttentionBackward,
  kElementwise,
};

// Which formula an op's name takes. One classification for the estimate and for the recorder,
// which keeps the inputs of only these ops when with_flops is on without record_shapes.
Formula formula_of(std::string_view op_name) {
  if (!starts_with(op_name, "aten::")) return Formula::kNone;
  std::string_view op = op_name.substr(6);
  // "aten::add.Tensor" -> "add": RecordFunction names carry no overload, but be lenient.
  if (const auto dot = op.find('.'); dot != std::string_view::npos) op = op.substr(0, dot);
  if (op == "mm") return Formula::kMm;
  if (op == "addmm") return Formula::kAddmm;
  if (op == "bmm") return Formula::kBmm;
  if (op == "baddbmm") return Formula::kBaddbmm;
  if (op == "matmul") return Formula::kMatmul;
  if (op == "linear") return Formula::kLinear;
  if (op == "convolution" || op == "_convolution") return Formula::kConvolution;
  if (op == "conv1d" || op == "conv2d" || op == "conv3d") return Formula::kConvNd;
  if (op == "conv_transpose1d" || op == "conv_transpose2d" || op == "conv_transpose3d")
    return Formula::kConvTransposeNd;
  if (op == "convolution_backward") return Formula::kConvolutionBackward;
  // The fused kernels all take (query, key, value, ...), their backward (grad_out, query, key,
  // value, ...), with (B, H, L, E) tensors.
  if (op == "scaled_dot_product_attention" || starts_with(op, "_scaled_dot_product_"))
    return ends_with(op, "_backward") ? Formula::kAttentionBackward : Formula::kAttention;
  static constexpr std::string_view kElementwise[] = {
      "add",       "add_",     "sub",       "sub_",        "mul",          "mul_",
      "div",       "div_",     "rsub",      "true_divide", "true_divide_", "subtract",
      "subtract_", "multiply", "multiply_", "divide",      "divide_"};
  if (std::find(std::begin(kElementwise), std::end(kElementwise), op) != std::end(kElementwise))
    return Formula::kElementwise;
  return Formula::kNone;
}

}  // namespace

bool has_flops_formula(std::string_view op_name) {
  return formula_of(op_name) != Formula::kNone;
}

uint64_t estimate_flops(std::string_view op_name, const std::vector<OpInput>& in) {
  // Schemas (see ATen/ops/*_ops.h):
  //   convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
  //               groups), _convolution(the same, then benchmark, ...)
  //   conv<N>d(input, weight, bias, stride, padding, dilation, groups)
  //   conv_transpose<N>d(input, weight, bias, stride, padding, output_padding, groups, dilation)
  switch (formula_of(op_name)) {
    case Formula::kMm:
      return matmul_2d(tensor(in, 0), tensor(in, 1));
    case Formula::kAddmm:
      return matmul_2d(tensor(in, 1), tensor(in, 2));
    case Formula::kBmm:
      return matmul_3d(tensor(in, 0), tensor(in, 1));
    case Formula::kBaddbmm:
      return matmul_3d(tensor(in, 1), tensor(in, 2));
    case Formula::kMatmul:
      return matmul(tensor(in, 0), tensor(in, 1));
    case Formula::kLinear:
      return linear(tensor(in, 0), tensor(in, 1));
    case Formula::kConvolution:
      return convolution(in, {3, 4, 5, 6, 8, false});
    case Formula::kConvNd:
      return convolution(in, {3, 4, 5, -1, 6, false});
    case Formula::kConvTransposeNd:
      return convolution(in, {3, 4, 7, -1, 6, true});
    case Formula::kConvolutionBackward:
      return convolution_backward(in);
    case Formula::kAttention:
      return attention(in);
    case Formula::kAttentionBackward:
      return attention_backward(in);
    case Formula::kElementwise:
      return elementwise(in);
    case Formula::kNone:
      break;
  }
  return 0;
}

}  // namespace ptprof::detail
