#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <type_traits>

#include "ptprof/error.h"
#include "trace/json_writer.h"

using ptprof::detail::JsonWriter;

namespace {

std::string escaped(std::string_view s) {
  std::string out;
  JsonWriter::escape_into(out, s);
  return out;
}

TEST(JsonWriter, HostileStringsRoundTripThroughAStrictParser) {
  const std::string cases[] = {
      "plain",
      "quote \" inside",
      "back\\slash C:\\path\\to",
      "new\nline\ttab\rcr\bbs\fff",
      std::string("nul\0byte", 8),
      "\x01\x1f control",
      "utf8: h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x94\xa5",
      "</script><script>alert(1)</script>",
      "{\"json\": [1, 2]}",
  };
  for (const std::string& s : cases) {
    const std::string text = escaped(s);
    const auto parsed = nlohmann::json::parse(text);
    EXPECT_EQ(parsed.get<std::string>(), s) << text;
  }
}

TEST(JsonWriter, InvalidUtf8BecomesReplacementCharacter) {
  const std::string bad =
      "a\xff"
      "b\xc3"
      "c\xed\xa0\x80"
      "d\xc0\xaf";  // stray, cut, surrogate, overlong
  const auto parsed = nlohmann::json::parse(escaped(bad));
  EXPECT_EQ(parsed.get<std::string>(),
            "a\xef\xbf\xbd"
            "b\xef\xbf\xbd"
            "c\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
            "d\xef\xbf\xbd\xef\xbf\xbd");
}

TEST(JsonWriter, ControlCharactersUseShortOrUnicodeEscapes) {
  EXPECT_EQ(escaped("\n"), "\"\\n\"");
  EXPECT_EQ(escaped(std::string(1, '\x01')), "\"\\u0001\"");
  EXPECT_EQ(escaped("\x7f"), "\"\x7f\"");  // DEL is legal in JSON strings
}

TEST(JsonWriter, MicrosecondsHaveExactlyThreeDecimals) {
  auto us = [](int64_t ns) {
    JsonWriter w;
    w.value_us(ns);
    return w.take();
  };
  EXPECT_EQ(us(0), "0.000");
  EXPECT_EQ(us(1), "0.001");
  EXPECT_EQ(us(999), "0.999");
  EXPECT_EQ(us(1000), "1.000");
  EXPECT_EQ(us(4458676416788066), "4458676416788.066");
  EXPECT_EQ(us(-1500), "-1.500");
  EXPECT_EQ(us(std::numeric_limits<int64_t>::min()), "-9223372036854775.808");
  JsonWriter w;
  w.value_us(std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(w.take(), "18446744073709551.615");
}

TEST(JsonWriter, NestingAndCommas) {
  JsonWriter w;
  w.begin_object();
  w.key("a").value(int64_t{1});
  w.key("b").begin_array().value("x").value(2.5).value(true).null().end_array();
  w.key("c").begin_object().end_object();
  w.key("d").value(uint64_t{18446744073709551615ull});
  w.newline().key("e").raw("[1, 2]");
  w.end_object();
  const auto j = nlohmann::json::parse(w.buffer());
  EXPECT_EQ(j["a"], 1);
  EXPECT_EQ(j["b"][0], "x");
  EXPECT_EQ(j["b"][1], 2.5);
  EXPECT_TRUE(j["b"][3].is_null());
  EXPECT_TRUE(j["c"].empty());
  EXPECT_EQ(j["d"].get<uint64_t>(), 18446744073709551615ull);
  EXPECT_EQ(j["e"][1], 2);
}

TEST(JsonWriter, NonFiniteNumbersAreWrittenAsStrings) {
  JsonWriter w;
  w.begin_array().value(1.0 / 0.0).value(0.0 / 0.0).end_array();
  const auto j = nlohmann::json::parse(w.buffer());
  EXPECT_EQ(j[0], "inf");
  EXPECT_EQ(j[1], "nan");
}

class CountingSink : public ptprof::detail::Sink {
 public:
  void write(const char* data, std::size_t size) override {
    out.append(data, size);
    ++writes;
  }
  std::string out;
  int writes = 0;
};

TEST(JsonWriter, LargeOutputGoesThroughTheSinkInBlocks) {
  CountingSink sink;
  JsonWriter w(&sink);
  w.begin_array();
  for (int i = 0; i < 300000; ++i) {
    w.value("an event name that takes some room");
    w.maybe_flush();
  }
  w.end_array();
  w.flush();
  EXPECT_GT(sink.writes, 5);
  const auto j = nlohmann::json::parse(sink.out);
  EXPECT_EQ(j.size(), 300000u);
}

// Misuse that would make invalid JSON is an error, never output.
TEST(JsonWriter, NestingDeeperThanTheLimitIsAnError) {
  JsonWriter w;
  for (int i = 0; i < 64; ++i) w.begin_array();  // as deep as the writer goes
  try {
    w.begin_object();
    FAIL() << "a 65th level was accepted";
  } catch (const ptprof::Error& e) {
    EXPECT_NE(std::string(e.what()).find("deeper than 64"), std::string::npos) << e.what();
  }
  JsonWriter ok;
  for (int i = 0; i < 64; ++i) ok.begin_array();
  for (int i = 0; i < 64; ++i) ok.end_array();
  EXPECT_EQ(nlohmann::json::parse(ok.buffer()).dump(), std::string(64, '[') + std::string(64, ']'));
}

template <typename T, typename = void>
struct KeyAccepts : std::false_type {};
template <typename T>
struct KeyAccepts<T, std::void_t<decltype(std::declval<JsonWriter&>().key(std::declval<T>()))>>
    : std::true_type {};

TEST(JsonWriter, KeysFromArraysThatAreNotLiteralsAreErrors) {
  // A mutable buffer does not compile as a key (it would be written whole, unescaped)...
  EXPECT_FALSE((KeyAccepts<char(&)[16]>::value));
  EXPECT_TRUE((KeyAccepts<const char(&)[3]>::value));
  EXPECT_TRUE((KeyAccepts<const char*>::value));
  EXPECT_TRUE((KeyAccepts<std::string>::value));
  // ...and a const array whose text does not fill it is rejected when used.
  static const char padded[16] = "name";
  JsonWriter w;
  w.begin_object();
  EXPECT_THROW(w.key(padded), ptprof::Error);
  static const char unterminated[4] = {'a', 'b', 'c', 'd'};
  EXPECT_THROW(w.key(unterminated), ptprof::Error);
  // A literal that needs escaping is escaped.
  JsonWriter q;
  q.begin_object().key("say \"hi\"\n").value(int64_t{1}).end_object();
  EXPECT_EQ(nlohmann::json::parse(q.buffer())["say \"hi\"\n"], 1);
}

TEST(JsonWriter, StructuralMisuseIsAnError) {
  auto fails = [](const std::function<void(JsonWriter&)>& fn) {
    JsonWriter w;
    try {
      fn(w);
    } catch (const ptprof::Error&) {
      return true;
    }
    return false;
  };
  EXPECT_TRUE(fails([](JsonWriter& w) { w.key("k"); }));  // a key outside an object
  EXPECT_TRUE(fails([](JsonWriter& w) { w.begin_array().key("k"); }));
  EXPECT_TRUE(fails([](JsonWriter& w) { w.begin_object().value(int64_t{1}); }));  // no key
  EXPECT_TRUE(fails([](JsonWriter& w) { w.begin_object().key("a").key("b"); }));
  EXPECT_TRUE(fails([](JsonWriter& w) { w.begin_object().key("a").end_object(); }));
  EXPECT_TRUE(fails([](JsonWriter& w) { w.begin_object().end_array(); }));
  EXPECT_TRUE(fails([](JsonWriter& w) { w.begin_array().end_object(); }));
  EXPECT_TRUE(fails([](JsonWriter& w) { w.end_array(); }));
  EXPECT_TRUE(fails([](JsonWriter& w) { w.value(int64_t{1}).value(int64_t{2}); }));
  EXPECT_TRUE(fails([](JsonWriter& w) { w.begin_array().end_array().begin_array(); }));
  EXPECT_TRUE(fails([](JsonWriter& w) { w.begin_array().raw("[1,"); }));
  EXPECT_TRUE(fails([](JsonWriter& w) { w.begin_array().raw(""); }));
  EXPECT_TRUE(fails([](JsonWriter& w) { w.begin_array().raw("1 2"); }));
  EXPECT_FALSE(
      fails([](JsonWriter& w) { w.begin_array().raw(" {\"a\": [1, 2.5e-3]} ").end_array(); }));
}

// nlohmann's verdict, or -1 where it cannot say: a number too large for a double ("1e999",
// valid JSON) stops it before the rest of the text.
int strict_parser_accepts(const std::string& text) {
  try {
    const nlohmann::json parsed = nlohmann::json::parse(text);
    (void)parsed;
  } catch (const nlohmann::json::out_of_range&) {
    return -1;
  } catch (const nlohmann::json::parse_error&) {
    return 0;
  }
  return 1;
}

// json_problem (what raw() and Trace::metadata are checked with) accepts exactly what a strict
// parser accepts: nlohmann's, on random sequences of JSON fragments, valid and broken.
TEST(JsonProblem, AgreesWithAStrictParser) {
  const char* fragments[] = {"{",          "}",           "[",         "]",       ",",
                             ":",          " ",           "\n",        "\"k\"",   "\"\"",
                             "\"a\\\"b\"", "\"\\u00e9\"", "\"\\uzz\"", "\"\\q\"", "\"\xc3\xa9\"",
                             "\"\xff\"",   "\"\x01\"",    "\"open",    "0",       "-0",
                             "12",         "01",          "1.5",       "1.",      ".5",
                             "-",          "1e5",         "1E-2",      "1e",      "+1",
                             "true",       "false",       "null",      "tru",     "nul",
                             "NaN",        "\xc3\xa9",    "x",         "/",       "\t",
                             "\r"};
  const std::size_t n = sizeof(fragments) / sizeof(fragments[0]);
  std::mt19937 rng(15);
  int accepted = 0;
  for (int i = 0; i < 200000; ++i) {
    std::string text;
    const int parts = 1 + static_cast<int>(rng() % 8);
    for (int k = 0; k < parts; ++k) text += fragments[rng() % n];
    const int theirs = strict_parser_accepts(text);
    if (theirs < 0) continue;
    const bool ours = ptprof::detail::json_problem(text, 64).empty();
    ASSERT_EQ(ours, theirs == 1) << "\"" << text
                                 << "\": " << ptprof::detail::json_problem(text, 64);
    accepted += ours;
  }
  EXPECT_GT(accepted, 1000);  // the comparison covered valid texts too
  // NUL, which nlohmann takes for the end of the text.
  EXPECT_NE(ptprof::detail::json_problem(std::string("1\0", 2), 64), "");
  EXPECT_NE(ptprof::detail::json_problem(std::string("\"\0\"", 3), 64), "");
  // The depth bound.
  EXPECT_EQ(ptprof::detail::json_problem("[[1]]", 2), "");
  EXPECT_EQ(ptprof::detail::json_problem("[[[1]]]", 2),
            "arrays and objects nested deeper than 2 at byte 2");
  EXPECT_EQ(ptprof::detail::json_problem("{\"a\": 1,}", 8), "expected a key string at byte 8");
}

// The one number formatter of the writers: printf's digits in the "C" locale.
TEST(NumberText, MatchesPrintfInTheCLocale) {
  std::mt19937_64 rng(15);
  char buf[512];
  for (int i = 0; i < 100000; ++i) {
    double v;
    switch (i % 4) {
      case 0:
        v = static_cast<double>(rng() % 100000000) / 1000.0;
        break;  // exact ties
      case 1:
        v = std::ldexp(static_cast<double>(rng() % (1ull << 53)), -40);
        break;
      case 2:
        v = -static_cast<double>(rng() % 1000000) / 8.0;
        break;
      default:
        v = std::ldexp(static_cast<double>(rng() % 1000), static_cast<int>(rng() % 80) - 40);
    }
    for (int decimals : {0, 1, 2, 3}) {
      std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
      ASSERT_EQ(ptprof::detail::format_fixed(v, decimals), buf) << v;
    }
    std::snprintf(buf, sizeof buf, "%g", v);
    ASSERT_EQ(ptprof::detail::format_general(v), buf) << v;
  }
  EXPECT_EQ(ptprof::detail::format_fixed(1e300, 2).size(), 304u);
}

}  // namespace
