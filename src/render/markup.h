// markup.h: the one writer of ptprof's XML, XHTML and SVG (the report page, the memory
// timeline page, the flame graph). Text and attribute values are escaped by the writer, tag
// and attribute names must be plain names, and every element is closed by name, so what it
// writes is well-formed whatever the trace's names hold.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace ptprof::detail {

class Sink;

// Text for XML/HTML content and attribute values: & < > " ' escaped, control characters XML
// does not allow become '?', and bytes that are not well-formed UTF-8, and U+FFFE/U+FFFF
// (which XML forbids), become U+FFFD.
std::string xml_escape(std::string_view s);

// An attribute: a name of ptprof's own and a value, escaped when written.
struct Attr {
  Attr(std::string_view n, std::string v) : name(n), value(std::move(v)) {}
  Attr(std::string_view n, std::string_view v) : name(n), value(v) {}
  Attr(std::string_view n, const char* v) : name(n), value(v) {}
  std::string_view name;
  std::string value;
};
using Attrs = std::initializer_list<Attr>;

class Markup {
 public:
  // Without a sink everything stays in the buffer until take().
  explicit Markup(Sink* sink = nullptr) : sink_(sink) {}

  Markup& open(std::string_view tag, Attrs attrs = {});
  Markup& open(std::string_view tag, const std::vector<Attr>& attrs);
  Markup& close(std::string_view tag);                    // the innermost open element, by its name
  Markup& empty(std::string_view tag, Attrs attrs = {});  // <tag .../>
  Markup& empty(std::string_view tag, const std::vector<Attr>& attrs);
  // <tag ...>text</tag>
  Markup& element(std::string_view tag, Attrs attrs, std::string_view text);
  Markup& element(std::string_view tag, std::string_view text) { return element(tag, {}, text); }
  Markup& text(std::string_view s);
  Markup& line() { return raw_trusted("\n"); }
  // A numeric character reference, for characters spelled in ASCII source: "&#8211;".
  Markup& char_ref(uint32_t code_point);
  Markup& doctype_html() { return raw_trusted("<!DOCTYPE html>\n"); }
  Markup& xml_declaration() {
    return raw_trusted("<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n");
  }
  // <style>css</style>: CSS of ptprof's own, which must not contain "</" or "]]>".
  Markup& style(std::string_view css);

  // Hands the buffer to the sink once a block is pending.
  void maybe_flush();
  // Checks that every element was closed and flushes to the sink.
  void finish();
  // finish(), and the text (without a sink).
  std::string take();

 private:
  Markup& raw_trusted(std::string_view s) {
    buf_.append(s.data(), s.size());
    return *this;
  }
  void start_tag(std::string_view tag, const Attr* attrs, std::size_t n, bool empty);

  Sink* sink_;
  std::string buf_;
  std::vector<std::string> open_;  // names of the open elements
};

}  // namespace ptprof::detail
