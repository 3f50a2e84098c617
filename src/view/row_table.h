// row_table.h: a table of the index answered a page at a time: its rows filtered, sorted and
// paged by the server, since a trace's groupings can hold hundreds of thousands of rows (by
// input shape, by stack, allocations) that no page should hold at once. Each row is kept as
// its texts (searched; each distinct text once per column), its numbers (sorted by) and the
// rest of the JSON object it is served as; served, the texts come first under their names.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "view/index_file.h"
#include "view/string_table.h"

namespace ptprof::view {

// Writes a row table into an index as its rows come: their JSON goes straight into the index
// (the bulk of a table), texts and numbers are kept until finish(). No other section may be
// written between the writer's construction and finish().
class RowTableWriter {
 public:
  // Text columns (searched, sortable, filterable by an exact value) and number columns
  // (sortable, filterable by a range), by name; the table's sections are <name>.*.
  RowTableWriter(IndexWriter& w, std::string name, std::vector<std::string> texts,
                 std::vector<std::string> numbers);
  // One row: its texts and numbers in the order of the columns, and the other members of its
  // JSON object (an object: "{}" for none).
  void add(const std::vector<std::string_view>& texts, const std::vector<double>& numbers,
           std::string_view json);
  std::size_t size() const { return offsets_.size() - 1; }
  // The rest of the sections; `meta` (JSON) is served with every page.
  void finish(const std::string& meta);

 private:
  struct Texts {
    StringTableWriter distinct;
    std::unordered_multimap<std::size_t, uint32_t> id;  // hash of a text -> its ids
    std::vector<uint32_t> rows;
  };
  IndexWriter& w_;
  std::string name_;
  std::vector<std::string> text_names_, number_names_;
  std::vector<Texts> texts_;
  std::vector<std::vector<double>> numbers_;
  std::vector<uint64_t> offsets_{0};  // of each row's JSON in <name>.rows.text
};

struct RowQuery {
  std::string sort;                           // a column; "": the order written
  bool descending = true;
  std::string contains;                       // in any text column, ASCII case ignored
  std::map<std::string, std::string> equals;  // text column -> exact value
  struct Range {
    double min = -std::numeric_limits<double>::infinity();
    double max = std::numeric_limits<double>::infinity();
  };
  std::map<std::string, Range> ranges;        // number column -> [min, max]
  uint64_t offset = 0;
  uint64_t limit = 100;
};

class RowTable {
 public:
  // Throws ptprof::Error when the index has no such table, or its columns do not fit.
  RowTable(std::shared_ptr<const IndexFile> index, const std::string& name);
  // {"meta": ..., "total": rows matching, "offset": ..., "rows": [...]}. Throws ptprof::Error
  // for a column it does not have.
  std::string query_json(const RowQuery& q) const;

 private:
  std::shared_ptr<const IndexFile> index_;
  std::string_view meta_;
  std::string_view text(std::size_t column, std::size_t row) const {
    return texts_[column][text_ids_[column][row]];
  }
  std::vector<std::string> text_names_, number_names_;
  std::vector<StringTable> texts_;            // each column's distinct texts
  std::vector<Column<uint32_t>> text_ids_;    // each row's text in each column
  std::vector<Column<double>> numbers_;
  StringTable rows_;
};

}  // namespace ptprof::view
