// The markup writer (markup.h).
#include "render/markup.h"

#include "ptprof/error.h"
#include "trace/json_writer.h"  // Sink

namespace ptprof::detail {

std::string xml_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      switch (c) {
        case '&':
          out += "&amp;";
          break;
        case '<':
          out += "&lt;";
          break;
        case '>':
          out += "&gt;";
          break;
        case '"':
          out += "&quot;";
          break;
        case '\'':
          out += "&apos;";
          break;
        default:
          // XML 1.0 allows no other control characters, not even escaped.
          out += (c < 0x20 && c != '\t' && c != '\n' && c != '\r') ? '?' : static_cast<char>(c);
      }
      ++i;
      continue;
    }
    // A well-formed UTF-8 sequence is copied, any other byte becomes U+FFFD; so does a
    // U+FFFE or U+FFFF, well-formed but not characters of XML.
    const std::size_t len = utf8_sequence(s, i);
    if (len == 0) {
      out += "\xef\xbf\xbd";
      ++i;
      continue;
    }
    if (c == 0xef && static_cast<unsigned char>(s[i + 1]) == 0xbf &&
        static_cast<unsigned char>(s[i + 2]) >= 0xbe) {
      out += "\xef\xbf\xbd";
    } else {
      out.append(s.substr(i, len));
    }
    i += len;
  }
  return out;
}

namespace {

// Tag and attribute names are ptprof's own: letters, digits, '-', '_', ':'.
void check_name(std::string_view name, const char* what) {
  bool ok = !name.empty();
  for (std::size_t i = 0; ok && i < name.size(); ++i) {
    const char c = name[i];
    const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    ok = letter || (i > 0 && ((c >= '0' && c <= '9') || c == '-' || c == '_' || c == ':'));
  }
  if (!ok)
    throw Error(std::string("ptprof: markup: invalid ") + what + " name \"" + std::string(name) +
                "\"");
}

}  // namespace

void Markup::start_tag(std::string_view tag, const Attr* attrs, std::size_t n, bool empty) {
  check_name(tag, "element");
  buf_ += '<';
  buf_.append(tag.data(), tag.size());
  for (std::size_t i = 0; i < n; ++i) {
    check_name(attrs[i].name, "attribute");
    buf_ += ' ';
    buf_.append(attrs[i].name.data(), attrs[i].name.size());
    buf_ += "=\"";
    buf_ += xml_escape(attrs[i].value);
    buf_ += '"';
  }
  buf_ += empty ? "/>" : ">";
  if (!empty) open_.emplace_back(tag);
}

Markup& Markup::open(std::string_view tag, Attrs attrs) {
  start_tag(tag, attrs.begin(), attrs.size(), false);
  return *this;
}

Markup& Markup::open(std::string_view tag, const std::vector<Attr>& attrs) {
  start_tag(tag, attrs.data(), attrs.size(), false);
  return *this;
}

Markup& Markup::close(std::string_view tag) {
  if (open_.empty() || open_.back() != tag)
    throw Error("ptprof: markup: </" + std::string(tag) + "> closes " +
                (open_.empty() ? std::string("nothing") : "<" + open_.back() + ">"));
  buf_ += "</";
  buf_.append(tag.data(), tag.size());
  buf_ += '>';
  open_.pop_back();
  return *this;
}

Markup& Markup::empty(std::string_view tag, Attrs attrs) {
  start_tag(tag, attrs.begin(), attrs.size(), true);
  return *this;
}

Markup& Markup::empty(std::string_view tag, const std::vector<Attr>& attrs) {
  start_tag(tag, attrs.data(), attrs.size(), true);
  return *this;
}

Markup& Markup::element(std::string_view tag, Attrs attrs, std::string_view text_content) {
  open(tag, attrs);
  text(text_content);
  return close(tag);
}

Markup& Markup::text(std::string_view s) {
  buf_ += xml_escape(s);
  return *this;
}

Markup& Markup::char_ref(uint32_t code_point) {
  const bool allowed = code_point == 0x9 || code_point == 0xA || code_point == 0xD ||
                       (code_point >= 0x20 && code_point <= 0xD7FF) ||
                       (code_point >= 0xE000 && code_point <= 0xFFFD) ||
                       (code_point >= 0x10000 && code_point <= 0x10FFFF);
  if (!allowed)
    throw Error("ptprof: markup: U+" + std::to_string(code_point) + " is no XML character");
  buf_ += "&#" + std::to_string(code_point) + ";";
  return *this;
}

Markup& Markup::style(std::string_view css) {
  if (css.find("</") != std::string_view::npos || css.find("]]>") != std::string_view::npos)
    throw Error("ptprof: markup: a style sheet must not contain \"</\" or \"]]>\"");
  open("style");
  buf_.append(css.data(), css.size());
  return close("style");
}

void Markup::maybe_flush() {
  constexpr std::size_t kBlock = 1 << 20;
  if (sink_ && buf_.size() >= kBlock) {
    sink_->write(buf_.data(), buf_.size());
    buf_.clear();
  }
}

void Markup::finish() {
  if (!open_.empty()) throw Error("ptprof: markup: <" + open_.back() + "> is not closed");
  if (sink_ && !buf_.empty()) {
    sink_->write(buf_.data(), buf_.size());
    buf_.clear();
  }
}

std::string Markup::take() {
  finish();
  return std::move(buf_);
}

}  // namespace ptprof::detail
