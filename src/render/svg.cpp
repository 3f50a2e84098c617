// Chart helpers (svg.h).
#include "render/svg.h"

#include <cmath>
#include <vector>

#include "trace/json_writer.h"

namespace ptprof::detail {

double nice_step(double range, int ticks) {
  const double raw = range / ticks;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double n = raw / mag;
  return (n < 1.5 ? 1 : n < 3.5 ? 2 : n < 7.5 ? 5 : 10) * mag;
}

std::string Svg::n(double v) const {
  return format_fixed(v, decimals_);
}

std::string Svg::n(double v, int decimals) const {
  return format_fixed(v, decimals);
}

void Svg::line(std::string_view cls, double x1, double y1, double x2, double y2) {
  m_.empty("line", {{"class", cls}, at("x1", x1), at("y1", y1), at("x2", x2), at("y2", y2)});
}

void Svg::text(std::string_view cls, double x, double y, std::string_view anchor,
               std::string_view content) {
  std::vector<Attr> attrs;
  if (!cls.empty()) attrs.emplace_back("class", cls);
  attrs.push_back(at("x", x));
  attrs.push_back(at("y", y));
  if (!anchor.empty()) attrs.emplace_back("text-anchor", anchor);
  m_.open("text", attrs).text(content).close("text");
}

void Svg::rect(std::string_view cls, double x, double y, double width, double height) {
  m_.empty("rect",
           {{"class", cls}, at("x", x), at("y", y), at("width", width), at("height", height)});
}

void Svg::vertical_text(std::string_view cls, double x, double y, std::string_view content) {
  std::vector<Attr> attrs;
  if (!cls.empty()) attrs.emplace_back("class", cls);
  // x as an integer when it is one, as the rotation's centre is written.
  const std::string xs = x == std::floor(x) ? format_fixed(x, 0) : n(x);
  attrs.emplace_back("x", xs);
  attrs.push_back(at("y", y));
  attrs.emplace_back("text-anchor", "middle");
  attrs.emplace_back("transform", "rotate(-90 " + xs + " " + n(y) + ")");
  m_.open("text", attrs).text(content).close("text");
}

void SvgPath::command(char c) {
  if (!d_.empty()) d_ += ' ';
  d_ += c;
}

SvgPath& SvgPath::move(double x, double y) {
  command('M');
  d_ += format_fixed(x, decimals_) + "," + format_fixed(y, decimals_);
  return *this;
}

SvgPath& SvgPath::h(double x) {
  command('H');
  d_ += format_fixed(x, decimals_);
  return *this;
}

SvgPath& SvgPath::v(double y) {
  command('V');
  d_ += format_fixed(y, decimals_);
  return *this;
}

SvgPath& SvgPath::close() {
  command('Z');
  return *this;
}

}  // namespace ptprof::detail
