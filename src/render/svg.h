// svg.h: what ptprof's charts (the report page's, the memory timeline's, the flame graph) share
// on top of the markup writer: axis steps, coordinates with fixed decimals, path data, lines
// and labels.
#pragma once

#include <string>
#include <string_view>

#include "render/markup.h"

namespace ptprof::detail {

// 1, 2 or 5 times a power of ten, giving about `ticks` intervals over `range` (> 0).
double nice_step(double range, int ticks);

// Coordinates printed with a chart's fixed number of decimals.
class Svg {
 public:
  Svg(Markup& m, int decimals) : m_(m), decimals_(decimals) {}
  std::string n(double v) const;
  std::string n(double v, int decimals) const;
  Attr at(std::string_view name, double v) const { return Attr(name, n(v)); }
  // <line class="cls" x1 y1 x2 y2/>
  void line(std::string_view cls, double x1, double y1, double x2, double y2);
  // <text class="cls" x y text-anchor="anchor">content</text>; cls and anchor may be empty.
  void text(std::string_view cls, double x, double y, std::string_view anchor,
            std::string_view content);
  // <rect class="cls" x y width height/>
  void rect(std::string_view cls, double x, double y, double width, double height);
  // An axis title read bottom to top, centred on (x, y); cls may be empty.
  void vertical_text(std::string_view cls, double x, double y, std::string_view content);
  Markup& markup() { return m_; }

 private:
  Markup& m_;
  int decimals_;
};

// An SVG path's "d": M x,y, then H x, V y, Z, space-separated, with fixed decimals.
class SvgPath {
 public:
  explicit SvgPath(int decimals) : decimals_(decimals) {}
  SvgPath& move(double x, double y);
  SvgPath& h(double x);
  SvgPath& v(double y);
  SvgPath& close();
  const std::string& str() const { return d_; }

 private:
  void command(char c);
  std::string d_;
  int decimals_;
};

}  // namespace ptprof::detail
