// The markup writer every page and SVG goes through (src/render/markup.h), and the helpers
// around it: escaping by construction, structure checked, numbers and names as outputs print
// them.
#include <gtest/gtest.h>

#include <string>

#include "ptprof/error.h"
#include "render/format.h"
#include "render/markup.h"
#include "render/svg.h"
#include "trace/json_writer.h"  // Sink
#include "xml_check.h"

namespace ptprof::detail {
namespace {

TEST(Markup, TextAndAttributesAreEscapedWhateverTheyHold) {
  const std::string evil = "a<b>&\"c\" 'd' \x01 \xff \xef\xbf\xbe end";
  Markup m;
  m.open("div", {{"title", evil}, {"data-x", "1"}}).text(evil).empty("br").close("div");
  const std::string out = m.take();
  EXPECT_EQ(out,
            "<div title=\"a&lt;b&gt;&amp;&quot;c&quot; &apos;d&apos; ? \xef\xbf\xbd \xef\xbf\xbd "
            "end\" data-x=\"1\">a&lt;b&gt;&amp;&quot;c&quot; &apos;d&apos; ? \xef\xbf\xbd "
            "\xef\xbf\xbd end<br/></div>");
  EXPECT_EQ(test::xml_problem(out), "");
}

TEST(Markup, WellFormedUtf8IsKept) {
  Markup m;
  m.element("p", "\xc2\xb5s \xe2\x80\x93 \xf0\x9f\x98\x80");  // µs – 😀
  EXPECT_EQ(m.take(), "<p>\xc2\xb5s \xe2\x80\x93 \xf0\x9f\x98\x80</p>");
}

TEST(Markup, NamesMustBePlainNames) {
  for (const char* bad : {"", "1a", "a b", "a\"", "a>", "-a", "a=b"}) {
    Markup m;
    EXPECT_THROW(m.open(bad), Error) << bad;
    Markup n;
    EXPECT_THROW(n.empty("p", {{bad, "v"}}), Error) << bad;
  }
  Markup ok;
  ok.empty("svg:rect", {{"data-total-ns", "1"}, {"aria-label", "x"}, {"xml:lang", "en"}});
  EXPECT_EQ(ok.take(), "<svg:rect data-total-ns=\"1\" aria-label=\"x\" xml:lang=\"en\"/>");
}

TEST(Markup, ElementsCloseByNameInOrder) {
  Markup m;
  m.open("a").open("b");
  EXPECT_THROW(m.close("a"), Error);  // <b> is the innermost
  m.close("b");
  EXPECT_THROW(m.take(), Error);  // <a> still open
  m.close("a");
  EXPECT_EQ(m.take(), "<a><b></b></a>");
  Markup none;
  EXPECT_THROW(none.close("p"), Error);
}

TEST(Markup, CharacterReferencesAndStyleSheets) {
  Markup m;
  m.open("p").char_ref(8211).close("p");
  EXPECT_EQ(m.take(), "<p>&#8211;</p>");
  Markup bad;
  EXPECT_THROW(bad.char_ref(0x1), Error);
  EXPECT_THROW(bad.char_ref(0xFFFE), Error);
  EXPECT_THROW(bad.char_ref(0xD800), Error);
  Markup css;
  css.style("p{color:red}");
  EXPECT_EQ(css.take(), "<style>p{color:red}</style>");
  Markup evil;
  EXPECT_THROW(evil.style("p{}</style><script>"), Error);
  EXPECT_THROW(evil.style("]]>"), Error);
}

TEST(Markup, WritesThroughASinkInBlocks) {
  struct Collect : Sink {
    std::string got;
    int writes = 0;
    void write(const char* data, std::size_t size) override {
      got.append(data, size);
      ++writes;
    }
  } sink;
  Markup m(&sink);
  m.open("list");
  const std::string item(1000, 'x');
  for (int i = 0; i < 3000; ++i) {
    m.element("i", item);
    m.maybe_flush();
  }
  m.close("list");
  m.finish();
  EXPECT_GT(sink.writes, 1);
  EXPECT_EQ(sink.got.size(), 13 + 3000 * (item.size() + 7));
  EXPECT_EQ(sink.got.substr(0, 9), "<list><i>");
}

TEST(Format, TimesSharesAndShortNames) {
  EXPECT_EQ(ms(1234567), "1.235 ms");
  EXPECT_EQ(ms(0), "0.000 ms");
  EXPECT_EQ(pct(0.1234), "12.3%");
  EXPECT_EQ(pct(1), "100.0%");
  EXPECT_EQ(shorten("abcdef", 6), "abcdef");
  EXPECT_EQ(shorten("abcdefg", 6), "abc...");
  // A name is never cut inside a UTF-8 character: "ab" + "µ" (2 bytes) + "cdef".
  EXPECT_EQ(shorten("ab\xc2\xb5"
                    "cdef",
                    6),
            "ab...");
  EXPECT_EQ(shorten("a\xe2\x80\x93zzzz", 7), "a\xe2\x80\x93...");
  EXPECT_EQ(shorten("a\xe2\x80\x93zzzz", 6), "a...");
}

TEST(Svg, AxisStepsPathsAndLines) {
  EXPECT_DOUBLE_EQ(nice_step(10, 10), 1);
  EXPECT_DOUBLE_EQ(nice_step(25, 10), 2);
  EXPECT_DOUBLE_EQ(nice_step(0.04, 8), 0.005);
  EXPECT_DOUBLE_EQ(nice_step(900, 10), 100);
  EXPECT_EQ(SvgPath(1).move(1, 2.26).v(3).h(4.04).close().str(), "M1.0,2.3 V3.0 H4.0 Z");
  Markup m;
  Svg svg(m, 2);
  svg.line("grid", 0, 1, 2, 3);
  svg.text("axis", 1, 2, "end", "a<b");
  svg.text("", 1, 2, "", "c");
  EXPECT_EQ(m.take(),
            "<line class=\"grid\" x1=\"0.00\" y1=\"1.00\" x2=\"2.00\" y2=\"3.00\"/>"
            "<text class=\"axis\" x=\"1.00\" y=\"2.00\" text-anchor=\"end\">a&lt;b</text>"
            "<text x=\"1.00\" y=\"2.00\">c</text>");
}

}  // namespace
}  // namespace ptprof::detail
