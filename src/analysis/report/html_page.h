// html_page.h: the writer of the report's page, Report::to_html(), one file a part of the page:
// output_html.cpp the skeleton, header, trace quality and footer; html_step_time.cpp,
// html_gpu_utilization.cpp, html_idle_causes.cpp, html_findings.cpp and html_tables.cpp a
// section each. The helpers below are the few every section writes with.
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "ptprof/report.h"
#include "render/markup.h"
#include "trace/json_writer.h"

namespace ptprof::detail {

class HtmlPage {
 public:
  explicit HtmlPage(const Report& report) : r(report) {}

  std::string build();

 private:
  static constexpr const char* kDash = "\xe2\x80\x93";  // en dash: no value
  static constexpr const char* kMicro = "\xc2\xb5";     // micro sign

  static std::string num(double v, int decimals = 1) { return format_fixed(v, decimals); }
  static std::string i64(int64_t v) { return std::to_string(v); }
  // Width of `s` in px at the charts' 12px font, generously estimated (DejaVu Sans is wide), so
  // labels that would collide are left out rather than drawn over each other.
  static double text_width(std::string_view s) { return 7.2 * static_cast<double>(s.size()); }

  const Report& r;
  Markup m;

  double steps_count() const {
    return static_cast<double>(std::max<std::size_t>(r.steps.size(), 1));
  }
  const Report::QualityItem* quality_item(std::string_view id) const {
    for (const auto& q : r.quality)
      if (q.id == id) return &q;
    return nullptr;
  }
  const std::string* undetermined_why(std::string_view what) const {
    for (const auto& [w, why] : r.undetermined)
      if (w == what) return &why;
    return nullptr;
  }
  // A box of the given kind holding plain text.
  void box(const char* kind, std::string_view text) {
    m.element("div", {{"class", std::string("box ") + kind}}, text).line();
  }
  void para(const char* cls, std::string_view text) {
    m.element("p", {{"class", cls}}, text).line();
  }
  void cell(const char* cls, std::string_view text) { m.element("td", {{"class", cls}}, text); }
  void head_cell(const char* cls, std::string_view text) {
    if (*cls) {
      m.element("th", {{"class", cls}}, text);
    } else {
      m.element("th", text);
    }
  }
  // <table class=cls [id]><thead><tr>the heads</tr></thead><tbody>: heads "=Name" are numeric.
  void open_table(std::vector<Attr> attrs, std::initializer_list<std::string_view> heads) {
    m.open("table", attrs).line().open("thead").open("tr");
    for (std::string_view h : heads) {
      if (!h.empty() && h[0] == '=') {
        head_cell("num", h.substr(1));
      } else {
        head_cell("", h);
      }
    }
    m.close("tr").close("thead").line().open("tbody").line();
  }
  void close_table() { m.close("tbody").close("table").line(); }

  // output_html.cpp
  void header();
  void tile(const std::string& cls, const std::string& label, const std::string& value,
            const std::string& sub);
  void tiles();
  void quality();
  void footer();

  // html_step_time.cpp
  void swatch(const char* colour);
  void legend_categories();
  void breakdown();
  void breakdown_chart();
  void breakdown_table();

  // html_gpu_utilization.cpp
  void utilization();
  void legend_line(const std::string& style, const std::string& text);
  void device_chart(const Report::Device& d);
  void device_table();
  void hta();

  // html_idle_causes.cpp
  void idle();

  // html_findings.cpp
  void findings();

  // html_tables.cpp
  void tables();
  void name_cell(const std::string& name);
  void ops_table(const char* title, const char* id, const std::vector<Report::OpRow>& rows,
                 bool by_device);
  void kernels_table();
};

}  // namespace ptprof::detail
