// string_table.h: a list of strings in the index: one section of text, one of offsets.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "view/index_file.h"

namespace ptprof::view {

// Collects strings and writes them as the sections <name>.text and <name>.offsets.
class StringTableWriter {
 public:
  uint32_t add(std::string_view s) {
    text_.append(s.data(), s.size());
    offsets_.push_back(text_.size());
    return static_cast<uint32_t>(offsets_.size() - 2);
  }
  std::size_t size() const { return offsets_.size() - 1; }
  std::string_view operator[](std::size_t i) const {
    return std::string_view(text_).substr(offsets_[i], offsets_[i + 1] - offsets_[i]);
  }
  void write(IndexWriter& w, const std::string& name) const {
    w.add(name + ".text", text_);
    w.add_column(name + ".offsets", offsets_);
  }

 private:
  std::string text_;
  std::vector<uint64_t> offsets_{0};
};

class StringTable {
 public:
  StringTable() = default;
  StringTable(const IndexFile& f, const std::string& name)
      : text_(f.section(name + ".text")), offsets_(f.column<uint64_t>(name + ".offsets")) {}
  std::size_t size() const { return offsets_.size() ? offsets_.size() - 1 : 0; }
  // "" for an index out of range or offsets that do not fit the text (a damaged index).
  std::string_view operator[](std::size_t i) const {
    if (i + 1 >= offsets_.size()) return {};
    const uint64_t a = offsets_[i], b = offsets_[i + 1];
    if (a > b || b > text_.size()) return {};
    return text_.substr(a, b - a);
  }

 private:
  std::string_view text_;
  Column<uint64_t> offsets_;
};

}  // namespace ptprof::view
