// A small XML well-formedness check for the SVG and HTML that ptprof writes (no XML library
// in the test environment): balanced tags, quoted attributes, only known entities, no stray
// '<' or '&'.
#pragma once

#include <cctype>
#include <string>
#include <vector>

namespace ptprof::test {

// "" when `s` is well-formed, else what is wrong and where.
inline std::string xml_problem(const std::string& s) {
  auto entity_ok = [&](std::size_t i) {
    const std::size_t semi = s.find(';', i);
    if (semi == std::string::npos || semi - i > 10) return false;
    const std::string e = s.substr(i + 1, semi - i - 1);
    if (e == "amp" || e == "lt" || e == "gt" || e == "quot" || e == "apos") return true;
    if (e.size() > 1 && e[0] == '#') {
      const bool hex = e[1] == 'x';
      if (e.size() == (hex ? 2u : 1u)) return false;
      for (std::size_t k = hex ? 2 : 1; k < e.size(); ++k)
        if (!(hex ? std::isxdigit(static_cast<unsigned char>(e[k]))
                  : std::isdigit(static_cast<unsigned char>(e[k]))))
          return false;
      return true;
    }
    return false;
  };
  std::vector<std::string> open;
  for (std::size_t i = 0; i < s.size();) {
    const char c = s[i];
    if (c == '&') {
      if (!entity_ok(i)) return "bad entity at " + std::to_string(i);
      ++i;
      continue;
    }
    if (c != '<') {
      ++i;
      continue;
    }
    if (s.compare(i, 4, "<!--") == 0) {
      const std::size_t end = s.find("-->", i);
      if (end == std::string::npos) return "unclosed comment";
      i = end + 3;
      continue;
    }
    if (s.compare(i, 2, "<?") == 0 || s.compare(i, 2, "<!") == 0) {  // prolog, DOCTYPE
      const std::size_t end = s.find('>', i);
      if (end == std::string::npos) return "unclosed declaration";
      i = end + 1;
      continue;
    }
    const std::size_t end = s.find('>', i);
    if (end == std::string::npos) return "unclosed tag at " + std::to_string(i);
    std::string tag = s.substr(i + 1, end - i - 1);
    for (std::size_t k = i; k < end; ++k)
      if (s[k] == '&' && !entity_ok(k)) return "bad entity in a tag at " + std::to_string(k);
    i = end + 1;
    if (tag.find('<') != std::string::npos) return "'<' inside tag " + tag;
    if (!tag.empty() && tag[0] == '/') {
      const std::string name = tag.substr(1);
      if (open.empty() || open.back() != name)
        return "</" + name + "> closes " + (open.empty() ? std::string("nothing") : open.back());
      open.pop_back();
      continue;
    }
    const bool self_closing = !tag.empty() && tag.back() == '/';
    if (self_closing) tag.pop_back();
    std::size_t p = 0;
    while (p < tag.size() && !std::isspace(static_cast<unsigned char>(tag[p]))) ++p;
    const std::string name = tag.substr(0, p);
    if (name.empty()) return "empty tag name";
    // Attributes: name="value" (value without '<'; '&' only as an entity).
    while (p < tag.size()) {
      while (p < tag.size() && std::isspace(static_cast<unsigned char>(tag[p]))) ++p;
      if (p == tag.size()) break;
      const std::size_t eq = tag.find('=', p);
      if (eq == std::string::npos || eq + 1 >= tag.size() || tag[eq + 1] != '"')
        return "unquoted attribute in <" + name + ">";
      const std::size_t close = tag.find('"', eq + 2);
      if (close == std::string::npos) return "unterminated attribute in <" + name + ">";
      p = close + 1;
    }
    if (!self_closing) open.push_back(name);
  }
  return open.empty() ? "" : "unclosed <" + open.back() + ">";
}

}  // namespace ptprof::test
