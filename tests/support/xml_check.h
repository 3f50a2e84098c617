// Well-formedness of the SVG and HTML that ptprof writes, decided by a real XML parser:
// Python's xml.dom.minidom (expat), run as a child process. A hand-written checker missed what
// XML forbids beyond tags and entities (U+FFFE, control characters, ...), so none is kept.
#pragma once

#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace ptprof::test {

// For each document: "" when the XML parser accepts it, else its message (with line and
// column). One Python process checks them all. The interpreter is $PTPROF_PYTHON, else
// python3 from PATH; a check that cannot run reports that as the problem of every document.
inline std::vector<std::string> xml_problems(const std::vector<std::string>& docs) {
  static const char* kScript =
      "import sys, xml.dom.minidom\n"
      "d, n = sys.argv[1], int(sys.argv[2])\n"
      "with open(d + '/results', 'w', encoding='utf-8') as out:\n"
      "    for i in range(n):\n"
      "        try:\n"
      "            with open('%s/doc%d' % (d, i), 'rb') as f:\n"
      "                xml.dom.minidom.parse(f)\n"
      "            out.write('\\n')\n"
      "        except Exception as e:\n"
      "            out.write(('%s: %s' % (type(e).__name__, e)).replace('\\n', ' ') + '\\n')\n";
  std::string dir = (std::filesystem::temp_directory_path() / "ptprof_xml_XXXXXX").string();
  if (!::mkdtemp(dir.data())) return std::vector<std::string>(docs.size(), "mkdtemp failed");
  for (std::size_t i = 0; i < docs.size(); ++i)
    std::ofstream(dir + "/doc" + std::to_string(i), std::ios::binary) << docs[i];
  std::ofstream(dir + "/check.py") << kScript;
  const char* py = std::getenv("PTPROF_PYTHON");
  const std::string cmd = std::string(py && *py ? py : "python3") + " " + dir + "/check.py " + dir +
                          " " + std::to_string(docs.size()) + " 2>" + dir + "/stderr";
  const int rc = std::system(cmd.c_str());
  std::vector<std::string> out;
  std::ifstream results(dir + "/results");
  for (std::string line; out.size() < docs.size() && std::getline(results, line);)
    out.push_back(line);
  if (rc != 0 || out.size() != docs.size()) {
    std::stringstream err;
    err << std::ifstream(dir + "/stderr").rdbuf();
    out.assign(docs.size(), "could not run the XML parser (" + cmd + "): " + err.str());
  }
  // unlink/rmdir, not std::filesystem: libtorch.so exports broken copies (tests/support/test_support.cpp).
  for (std::size_t i = 0; i < docs.size(); ++i)
    ::unlink((dir + "/doc" + std::to_string(i)).c_str());
  for (const char* f : {"/results", "/check.py", "/stderr"}) ::unlink((dir + f).c_str());
  ::rmdir(dir.c_str());
  return out;
}

inline std::string xml_problem(const std::string& doc) {
  return xml_problems({doc})[0];
}

}  // namespace ptprof::test
