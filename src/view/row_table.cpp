#include "view/row_table.h"

#include <algorithm>
#include <cctype>

#include "ptprof/error.h"
#include "trace/json_writer.h"

namespace ptprof::view {

using detail::JsonWriter;

RowTableWriter::RowTableWriter(IndexWriter& w, std::string name, std::vector<std::string> texts,
                               std::vector<std::string> numbers)
    : w_(w),
      name_(std::move(name)),
      text_names_(std::move(texts)),
      number_names_(std::move(numbers)),
      texts_(text_names_.size()),
      numbers_(number_names_.size()) {
  w_.begin(name_ + ".rows.text");
}

void RowTableWriter::add(const std::vector<std::string_view>& texts,
                         const std::vector<double>& numbers, std::string_view json) {
  for (std::size_t i = 0; i < texts_.size(); ++i) {
    Texts& t = texts_[i];
    const std::string_view text = i < texts.size() ? texts[i] : "";
    // Each distinct text once: found by its hash, confirmed by its bytes.
    const std::size_t hash = std::hash<std::string_view>()(text);
    uint32_t id = UINT32_MAX;
    for (auto [it, end] = t.id.equal_range(hash); it != end && id == UINT32_MAX; ++it)
      if (t.distinct[it->second] == text) id = it->second;
    if (id == UINT32_MAX) {
      id = t.distinct.add(text);
      t.id.emplace(hash, id);
    }
    t.rows.push_back(id);
  }
  for (std::size_t i = 0; i < numbers_.size(); ++i)
    numbers_[i].push_back(i < numbers.size() ? numbers[i] : 0);
  w_.append(json.data(), json.size());
  offsets_.push_back(offsets_.back() + json.size());
}

void RowTableWriter::finish(const std::string& meta) {
  w_.end();
  w_.add_column(name_ + ".rows.offsets", offsets_);
  w_.add(name_ + ".meta", meta.empty() ? "{}" : meta);
  for (const auto* names : {&text_names_, &number_names_}) {
    StringTableWriter t;
    for (const std::string& n : *names) t.add(n);
    t.write(w_, name_ + (names == &text_names_ ? ".texts" : ".numbers"));
  }
  for (std::size_t i = 0; i < texts_.size(); ++i) {
    texts_[i].distinct.write(w_, name_ + ".t" + std::to_string(i));
    w_.add_column(name_ + ".t" + std::to_string(i) + ".rows", texts_[i].rows);
  }
  for (std::size_t i = 0; i < numbers_.size(); ++i)
    w_.add_column(name_ + ".n" + std::to_string(i), numbers_[i]);
}

RowTable::RowTable(std::shared_ptr<const IndexFile> index, const std::string& name)
    : index_(std::move(index)) {
  meta_ = index_->section(name + ".meta");
  if (meta_.empty()) throw Error("ptprof view: the index has no table " + name);
  for (auto* names : {&text_names_, &number_names_}) {
    const StringTable t(*index_, name + (names == &text_names_ ? ".texts" : ".numbers"));
    for (std::size_t i = 0; i < t.size(); ++i) names->emplace_back(t[i]);
  }
  rows_ = StringTable(*index_, name + ".rows");
  for (std::size_t i = 0; i < text_names_.size(); ++i) {
    texts_.emplace_back(*index_, name + ".t" + std::to_string(i));
    text_ids_.push_back(index_->column<uint32_t>(name + ".t" + std::to_string(i) + ".rows"));
    if (text_ids_.back().size() != rows_.size())
      throw Error("ptprof view: the index's table " + name + " is damaged");
    for (uint32_t id : text_ids_.back())
      if (id >= texts_.back().size()) throw Error("ptprof view: the index's table " + name + " is damaged");
  }
  for (std::size_t i = 0; i < number_names_.size(); ++i) {
    numbers_.push_back(index_->column<double>(name + ".n" + std::to_string(i)));
    if (numbers_.back().size() != rows_.size())
      throw Error("ptprof view: the index's table " + name + " is damaged");
  }
}

std::string RowTable::query_json(const RowQuery& q) const {
  auto index_of = [](const std::vector<std::string>& names, const std::string& n) -> int {
    for (std::size_t i = 0; i < names.size(); ++i)
      if (names[i] == n) return static_cast<int>(i);
    return -1;
  };
  auto lower = [](char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); };
  std::string needle;
  for (char c : q.contains) needle.push_back(lower(c));
  std::vector<std::pair<int, std::string_view>> equals;
  for (const auto& [col, value] : q.equals) {
    const int i = index_of(text_names_, col);
    if (i < 0) throw Error("ptprof view: no text column \"" + col + "\"");
    equals.emplace_back(i, value);
  }
  std::vector<std::pair<int, RowQuery::Range>> ranges;
  for (const auto& [col, range] : q.ranges) {
    const int i = index_of(number_names_, col);
    if (i < 0) throw Error("ptprof view: no number column \"" + col + "\"");
    ranges.emplace_back(i, range);
  }
  std::vector<uint32_t> rows;
  for (std::size_t r = 0; r < rows_.size(); ++r) {
    bool ok = true;
    for (const auto& [i, value] : equals) ok = ok && text(i, r) == value;
    for (const auto& [i, range] : ranges) ok = ok && numbers_[i][r] >= range.min && numbers_[i][r] <= range.max;
    if (ok && !needle.empty()) {
      ok = false;
      for (std::size_t c = 0; c < texts_.size(); ++c) {
        const std::string_view s = text(c, r);
        if (std::search(s.begin(), s.end(), needle.begin(), needle.end(),
                        [&](char a, char b) { return lower(a) == b; }) != s.end()) {
          ok = true;
          break;
        }
      }
    }
    if (ok) rows.push_back(static_cast<uint32_t>(r));
  }
  const uint64_t first = std::min<uint64_t>(q.offset, rows.size());
  const uint64_t last = std::min<uint64_t>(rows.size(), first + q.limit);
  if (!q.sort.empty()) {
    const int num = index_of(number_names_, q.sort);
    const int text = index_of(text_names_, q.sort);
    if (num < 0 && text < 0) throw Error("ptprof view: no column \"" + q.sort + "\" to sort by");
    auto less = [&](uint32_t a, uint32_t b) {
      if (num >= 0) {
        const double x = numbers_[num][a], y = numbers_[num][b];
        if (x != y) return q.descending ? x > y : x < y;
      } else {
        const int c = this->text(text, a).compare(this->text(text, b));
        if (c != 0) return q.descending ? c > 0 : c < 0;
      }
      return a < b;
    };
    std::partial_sort(rows.begin(), rows.begin() + static_cast<std::ptrdiff_t>(last), rows.end(), less);
  }
  JsonWriter w;
  w.begin_object();
  w.key("meta").raw(meta_);
  w.key("total").value(static_cast<uint64_t>(rows.size()));
  w.key("offset").value(first);
  w.key("rows").begin_array();
  std::string row;
  for (uint64_t k = first; k < last; ++k) {
    // The texts under their names, then the row's other members.
    row = "{";
    for (std::size_t c = 0; c < texts_.size(); ++c) {
      if (c) row += ", ";
      JsonWriter::escape_into(row, text_names_[c]);
      row += ": ";
      JsonWriter::escape_into(row, text(c, rows[k]));
    }
    std::string_view rest = rows_[rows[k]];
    if (rest.size() >= 2 && rest.front() == '{') rest.remove_prefix(1);
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    if (!rest.empty() && rest.front() != '}' && !texts_.empty()) row += ", ";
    row.append(rest.empty() ? "}" : rest);
    w.raw(row);  // checked to be one JSON object
  }
  w.end_array();
  w.end_object();
  return w.take();
}

}  // namespace ptprof::view
