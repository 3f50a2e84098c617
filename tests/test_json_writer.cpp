#include <gtest/gtest.h>

#include <limits>
#include <nlohmann/json.hpp>
#include <string>

#include "json_writer.h"

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
  const std::string bad = "a\xff" "b\xc3" "c\xed\xa0\x80" "d\xc0\xaf";  // stray, cut, surrogate, overlong
  const auto parsed = nlohmann::json::parse(escaped(bad));
  EXPECT_EQ(parsed.get<std::string>(),
            "a\xef\xbf\xbd" "b\xef\xbf\xbd" "c\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
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
  void write(const char* data, std::size_t size) override { out.append(data, size); ++writes; }
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

}  // namespace
