// Regression tests of ptprof's parsers on hostile input: each case is an input that the fuzz
// targets of tests/fuzz found to break a parser (or a precision bound the tests rely on),
// fed to the parser the way the `ptprof` command or the session feeds it.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "trace/clock.h"
#include "recording/details.h"
#include "trace/flops.h"
#include "reliability_util.h"

namespace ptprof {
namespace {

// What the fuzz targets require of a parser: it accepts, or rejects with ptprof::Error.
std::string parse_error(const std::string& text) {
  try {
    detail::parse_trace(text, "input");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Builds the details byte format (src/details.h), as the recorder writes it.
class Details {
 public:
  explicit Details(int n_inputs) { put<uint8_t>(static_cast<uint8_t>(n_inputs)); }
  Details& tensor(std::vector<int64_t> sizes) {
    put<uint8_t>(1);  // OpInput::Kind::Tensor
    put<int8_t>(6);   // float
    put<uint8_t>(0);  // no strides
    put<uint8_t>(static_cast<uint8_t>(sizes.size()));
    for (int64_t d : sizes) put(d);
    return *this;
  }
  // A strided tensor whose strides the reader rebuilds from its sizes.
  Details& dense_tensor(std::vector<int64_t> sizes) {
    put<uint8_t>(1);
    put<int8_t>(6);
    put<uint8_t>(2);  // dense strides
    put<uint8_t>(static_cast<uint8_t>(sizes.size()));
    for (int64_t d : sizes) put(d);
    return *this;
  }
  Details& tensor_list(const std::vector<std::vector<int64_t>>& items) {
    put<uint8_t>(2);  // TensorList
    put<uint16_t>(static_cast<uint16_t>(items.size()));
    for (const auto& sizes : items) {
      put<int8_t>(6);
      put<uint8_t>(static_cast<uint8_t>(sizes.size()));
      for (int64_t d : sizes) put(d);
    }
    return *this;
  }
  Details& none() {
    put<uint8_t>(0);
    return *this;
  }
  Details& int_list(std::vector<int64_t> v) {
    put<uint8_t>(4);  // ScalarList
    put<uint8_t>(0);  // of ints
    put<uint16_t>(static_cast<uint16_t>(v.size()));
    for (int64_t x : v) put(x);
    return *this;
  }
  Details& double_list(std::vector<double> v) {
    put<uint8_t>(4);
    put<uint8_t>(1);  // of doubles
    put<uint16_t>(static_cast<uint16_t>(v.size()));
    for (double x : v) put(x);
    return *this;
  }
  Details& int_scalar(int64_t v) {
    put<uint8_t>(3);
    put<uint8_t>(0);
    put(v);
    return *this;
  }
  Details& double_scalar(double v) {
    put<uint8_t>(3);
    put<uint8_t>(1);
    put(v);
    return *this;
  }
  // Ends with "no stack" and decodes.
  detail::DecodedDetails decode() { return detail::decode_details(bytes()); }
  std::string bytes() const { return bytes_ + std::string(2, '\0'); }

 private:
  template <typename T>
  void put(T v) {
    bytes_.append(reinterpret_cast<const char*>(&v), sizeof(v));
  }
  std::string bytes_;
};

constexpr int64_t kHuge = int64_t{1} << 62;

TEST(Parsers, ReaderKeepsNanosecondsWhereDoublesAreCoarse) {
  // Trace times are µs with three decimals relative to a base that moves every ~91 days
  // (Kineto's), so they reach 7.9e12 µs. The reader parsed the number as a double and
  // multiplied by 1000: from 2^42 µs to 2^52 ns (4.398e15 to 4.504e15 ns, about a day of each
  // period) doubles are more than 1/1000 µs apart and a quarter of the times came back 1 ns
  // off, which can also flip the nesting of events that touch. The reader must give back
  // exactly the ns that were written.
  const int64_t base = detail::trace_base_time_ns();
  Trace t;
  t.window_start_ns = base + int64_t{4450000000000000};
  t.window_end_ns = t.window_start_ns + 1000000000;
  for (int i = 0; i < 2000; ++i) {
    Event e;
    e.name = t.intern("op");
    e.start_ns = t.window_start_ns + 1000 + i * 333331;  // a spread of sub-µs remainders
    e.duration_ns = 1 + i * 7;
    e.tid = 1;
    t.events.push_back(e);
  }
  const Trace back = detail::parse_trace(t.to_json(), "round trip");
  ASSERT_EQ(back.events.size(), t.events.size());
  int off = 0;
  for (std::size_t i = 0; i < t.events.size(); ++i) {
    if (back.events[i].start_ns != t.events[i].start_ns ||
        back.events[i].duration_ns != t.events[i].duration_ns) {
      if (++off <= 3)
        ADD_FAILURE() << "event " << i << ": start "
                      << back.events[i].start_ns - t.events[i].start_ns << " ns off, duration "
                      << back.events[i].duration_ns - t.events[i].duration_ns << " ns off";
    }
  }
  EXPECT_EQ(off, 0) << "of " << t.events.size() << " events";
}

// ---- found by fuzz_trace_reader --------------------------------------------------------------

TEST(Parsers, TraceFromAnotherBasePeriodRoundTrips) {
  // fuzz_trace_reader: a trace whose baseTimeNanoseconds lies in another ~91-day period than
  // the process's parses, but to_json() wrote its times relative to the process's own base:
  // far beyond (here ~4e15 µs) what the reader then accepted, so ptprof rejected its own
  // output. Times before the process's base were written as 0 instead.
  const std::string input =
      R"({"baseTimeNanoseconds":5700000000000000000,"traceEvents":[)"
      R"({"ph":"X","cat":"cpu_op","name":"aten::empty","pid":1,"tid":1,"ts":1.0,"dur":2.0}]})";
  const Trace t = detail::parse_trace(input, "input");
  ASSERT_EQ(t.events.size(), 1u);
  EXPECT_EQ(t.events[0].start_ns, 5700000000000001000);
  Trace back;
  ASSERT_NO_THROW(back = detail::parse_trace(t.to_json(), "written back"));
  ASSERT_EQ(back.events.size(), 1u);
  EXPECT_EQ(back.events[0].start_ns, t.events[0].start_ns);
  EXPECT_EQ(back.events[0].duration_ns, 2000);

  Trace early;  // an event one second before the process's current base
  Event e;
  e.name = early.intern("op");
  e.start_ns = detail::trace_base_time_ns() - 1000000000;
  e.duration_ns = 5;
  early.events.push_back(e);
  early.window_start_ns = e.start_ns;
  early.window_end_ns = e.start_ns + 10;
  ASSERT_NO_THROW(back = detail::parse_trace(early.to_json(), "written back"));
  ASSERT_EQ(back.events.size(), 1u);
  EXPECT_EQ(back.events[0].start_ns, e.start_ns);
}

TEST(Parsers, ExtremeBaseTimeIsRejectedNotWrappedAround) {
  // Found while reviewing what fuzz_trace_reader reached: baseTimeNanoseconds + ts overflowed
  // int64_t (undefined; in practice events far in the past). The reader's contract is an
  // Error naming the bad part.
  for (const char* base : {"9223372036854775807", "-9223372036854775807"}) {
    const std::string input = std::string(R"({"baseTimeNanoseconds":)") + base +
                              R"(,"traceEvents":[{"ph":"X","cat":"cpu_op","name":"a",)"
                              R"("ts":-1.5,"dur":1}, {"ph":"X","cat":"cpu_op","name":"b",)"
                              R"("ts":2.5,"dur":1}]})";
    EXPECT_THROW(detail::parse_trace(input, "input"), Error) << base;
  }
}

// ---- found by fuzz_details ----------------------------------------------------------------------
// Op arguments are what the user passed, recorded before the op checks them (an op that then
// throws is still recorded), so they can be anything. The FLOP formulas promise 0 ("unknown")
// for inconsistent or overflowing shapes; the sanitizer build also checks that they get
// there without undefined behaviour.

TEST(Parsers, DoubleListBeyondInt64DecodesWithoutUndefinedBehaviour) {
  // fuzz_details: details.cpp cast each double of a ScalarList to int64_t, undefined for 1e300
  // or NaN (UBSan: "outside the range of representable values").
  const auto d = Details(1).double_list({1e300, std::nan(""), -2.5}).decode();
  ASSERT_EQ(d.inputs.size(), 1u);
  EXPECT_EQ(d.inputs[0].concrete, "[1.0000000000000001e+300, nan, -2.5]");
  ASSERT_EQ(d.inputs[0].sizes.size(), 3u);
  EXPECT_EQ(d.inputs[0].sizes[2], -2);
}

// conv2d(input, weight, bias, stride, padding, dilation, groups)
detail::DecodedDetails conv2d(std::vector<int64_t> x, std::vector<int64_t> w,
                              std::vector<int64_t> padding, int64_t groups) {
  return Details(7)
      .tensor(std::move(x))
      .tensor(std::move(w))
      .none()
      .int_list({1, 1})
      .int_list(std::move(padding))
      .int_list({1, 1})
      .int_scalar(groups)
      .decode();
}

TEST(Parsers, DenseStridesAreRebuiltFromTheSizes) {
  const auto d = Details(5)
                     .dense_tensor({2, 3, 4})
                     .dense_tensor({2, 0, 3})
                     .dense_tensor({})
                     .dense_tensor({kHuge, 4, 4})
                     .dense_tensor({2, kHuge, 8})
                     .decode();
  ASSERT_EQ(d.inputs.size(), 5u);
  EXPECT_EQ(d.inputs[0].strides, (std::vector<int64_t>{12, 4, 1}));
  EXPECT_EQ(d.inputs[1].strides, (std::vector<int64_t>{3, 3, 1}));
  EXPECT_TRUE(d.inputs[2].strides.empty());
  EXPECT_EQ(d.inputs[3].strides, (std::vector<int64_t>{16, 4, 1}));
  // 2^62 * 8 wraps to 0 in the reader exactly as in the writer's check, without overflow.
  EXPECT_EQ(d.inputs[4].strides, (std::vector<int64_t>{0, 8, 1}));
}

TEST(Parsers, UnknownStridesKindIsMalformed) {
  std::string bytes("\x01\x01\x06\x03\x01", 5);  // one tensor, strides kind 3
  bytes.append(8, '\0');
  const auto d = detail::decode_details(bytes);
  EXPECT_TRUE(d.has_inputs);
  EXPECT_TRUE(d.inputs.empty());
}

// The session walks each record's inputs without decoding them to find the section's
// length; that walk must end exactly where the decoder does, on every cut of a record too.
TEST(Parsers, LengthWalkEndsWhereTheDecoderDoes) {
  const std::string full = Details(9)
                               .tensor({4, 8})
                               .tensor_list({{2, 3}, {}, {5}})
                               .dense_tensor({2, 3})
                               .int_scalar(7)
                               .double_list({0.5, 2})
                               .none()
                               .int_list({1, 2, 3})
                               .double_scalar(1.5)
                               .dense_tensor({})
                               .bytes();
  for (std::size_t n = 0; n <= full.size(); ++n) {
    const std::string_view cut(full.data(), n);
    const auto decoded = detail::decode_details(cut, /*keep_inputs=*/true);
    const auto walked = detail::decode_details(cut, /*keep_inputs=*/false);
    EXPECT_EQ(walked.has_inputs, decoded.has_inputs) << "cut at " << n;
    EXPECT_EQ(walked.inputs_bytes, decoded.inputs_bytes) << "cut at " << n;
    EXPECT_TRUE(walked.inputs.empty());
  }
  EXPECT_EQ(detail::decode_details(full, false).inputs_bytes, full.size() - 2);
}

// The stack section: the unwinder writes the frames straight into the arena, 8-aligned, so
// padding of 0-7 bytes may sit between the header and them; the decoder steps over exactly
// that much, and a record cut inside it keeps no frame.
TEST(Parsers, StackSectionSkipsItsPadding) {
  for (std::size_t pad = 0; pad < 8; ++pad) {
    std::string bytes(1, static_cast<char>(detail::kNotCaptured));
    bytes.push_back(2);
    bytes.push_back(static_cast<char>(detail::encode_stack_flags(pad % 2 == 1, pad)));
    bytes.append(pad, '\x5a');
    for (uint64_t a : {uint64_t{0x401234}, uint64_t{0x7f0000001000}})
      bytes.append(reinterpret_cast<const char*>(&a), sizeof a);
    const auto d = detail::decode_details(bytes);
    EXPECT_EQ(d.stack, (std::vector<uint64_t>{0x401234, 0x7f0000001000})) << "pad " << pad;
    EXPECT_EQ(d.stack_truncated, pad % 2 == 1) << "pad " << pad;
    const auto cut = detail::decode_details(std::string_view(bytes.data(), 3 + pad / 2));
    EXPECT_TRUE(cut.stack.empty()) << "pad " << pad;
  }
}

TEST(Parsers, ConvolutionFlopsOfAPlainConvAreCounted) {
  // The baseline the cases below distort: 2 * N * Cout * Cin * k*k * out*out.
  const auto d = conv2d({1, 3, 8, 8}, {4, 3, 3, 3}, {0, 0}, 1);
  EXPECT_EQ(detail::estimate_flops("aten::conv2d", d.inputs), 2u * 4 * 3 * 9 * 6 * 6);
}

TEST(Parsers, ConvolutionFlopsWithOverflowingPaddingAreUnknown) {
  // fuzz_details: flops.cpp's output size (in + 2p - d(k-1) - 1) / s + 1 overflowed int64_t;
  // with this padding it wraps around to an 8-wide input and a plausible count came out.
  const int64_t p = kHuge + (kHuge >> 1);  // 2p = 2^63 + 2^62: wraps to -2^62
  const auto d = conv2d({1, 3, kHuge + 8, 8}, {4, 3, 3, 3}, {p, 0}, 1);
  EXPECT_EQ(detail::estimate_flops("aten::conv2d", d.inputs), 0u);
}

TEST(Parsers, ConvolutionFlopsWithOverflowingGroupsAreUnknown) {
  // fuzz_details: weight[1] * groups (the input channels it implies) overflowed int64_t.
  const auto d = conv2d({1, 4, 8, 8}, {4, kHuge, 3, 3}, {0, 0}, 4);
  EXPECT_EQ(detail::estimate_flops("aten::conv2d", d.inputs), 0u);
}

TEST(Parsers, ConvolutionFlopsWithANonIntegerGroupsScalarAreUnknown) {
  // fuzz_details: a double Scalar for groups (1e300) was cast to int64_t (undefined); in
  // practice it became INT64_MIN, which skipped the channel check, and the conv was counted
  // as if its weight fit its input.
  const auto d = Details(7)
                     .tensor({1, 3, 8, 8})
                     .tensor({4, 3, 3, 3})
                     .none()
                     .int_list({1, 1})
                     .int_list({0, 0})
                     .int_list({1, 1})
                     .double_scalar(1e300)
                     .decode();
  EXPECT_EQ(detail::estimate_flops("aten::conv2d", d.inputs), 0u);
}

TEST(Parsers, ConvolutionFlopsWithANonIntegerStrideAreUnknown) {
  // fuzz_details: a double stride (Scalar or list) beyond int64_t was cast to int64_t.
  const auto d = Details(7)
                     .tensor({1, 3, 8, 8})
                     .tensor({4, 3, 3, 3})
                     .none()
                     .double_scalar(-1e300)
                     .int_list({0, 0})
                     .double_list({1e300})
                     .int_scalar(1)
                     .decode();
  EXPECT_EQ(detail::estimate_flops("aten::conv2d", d.inputs), 0u);
}

}  // namespace
}  // namespace ptprof
