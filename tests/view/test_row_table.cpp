// The row tables the views page through (src/view/row_table.h): filtered, sorted and paged by
// the server exactly as a client would over all rows.
#include "ptprof/error.h"
#include "trace/chrome_trace.h"
#include "view/row_table.h"
#include "view_test_util.h"

namespace ptprof::test {
namespace {

using view::RowQuery;
using view::RowTable;
using view::RowTableWriter;

std::shared_ptr<const view::IndexFile> table_file(const std::string& path, int rows) {
  const view::IndexKey key{1, 2, 3, 4};
  detail::write_file_atomically(path, [&](detail::Sink& sink) {
    view::IndexWriter w(sink, key);
    RowTableWriter t(w, "t", {"name", "kind"}, {"size", "when"});
    for (int i = 0; i < rows; ++i) {
      const std::string name = (i % 3 ? "aten::mm_" : "Kernel_") + std::to_string(i);
      const std::string json = "{\"i\": " + std::to_string(i) + "}";
      t.add({name, i % 2 ? "odd" : "even"}, {static_cast<double>((i * 37) % 101), static_cast<double>(i)},
            json);
    }
    t.finish("{\"what\": \"test\"}");
    w.finish();
  });
  return view::IndexFile::open(path, key);
}

std::vector<int> ids(const nlohmann::json& page) {
  std::vector<int> out;
  for (const auto& r : page["rows"]) out.push_back(r["i"]);
  return out;
}

TEST(RowTable, FiltersSortsAndPagesAsAClientWould) {
  ScratchDir d;
  const RowTable t(table_file(d / "idx", 1000), "t");
  RowQuery q;
  q.sort = "size";
  q.limit = 1000;
  auto all = parse(t.query_json(q));
  EXPECT_EQ(all["meta"]["what"], "test");
  ASSERT_EQ(all["total"], 1000);
  std::vector<std::pair<int, int>> want;  // (-size, i): descending size, then written order
  for (int i = 0; i < 1000; ++i) want.emplace_back(-((i * 37) % 101), i);
  std::sort(want.begin(), want.end());
  std::vector<int> want_ids;
  for (const auto& w : want) want_ids.push_back(w.second);
  EXPECT_EQ(ids(all), want_ids);
  // A page is that order's slice.
  q.offset = 100;
  q.limit = 50;
  EXPECT_EQ(ids(parse(t.query_json(q))), std::vector<int>(want_ids.begin() + 100, want_ids.begin() + 150));
  // Search (case ignored, any text column), exact values, ranges.
  RowQuery f;
  f.contains = "KERNEL_";
  f.equals["kind"] = "odd";
  f.ranges["when"] = {100, 199};
  f.limit = 1000;
  f.sort = "when";
  f.descending = false;
  std::vector<int> expect;
  for (int i = 100; i <= 199; ++i)
    if (i % 3 == 0 && i % 2 == 1) expect.push_back(i);
  EXPECT_EQ(ids(parse(t.query_json(f))), expect);
  EXPECT_EQ(parse(t.query_json(f))["total"], expect.size());
  RowQuery bad;
  bad.sort = "nope";
  EXPECT_THROW(t.query_json(bad), Error);
  EXPECT_THROW(RowTable(table_file(d / "idx2", 3), "other"), Error);
}

}  // namespace
}  // namespace ptprof::test
