#include "view/log_dir.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <tuple>

#include "ptprof/error.h"
#include "trace/flight_dump.h"
#include "trace/trace_files.h"

namespace ptprof::view {

namespace fs = std::filesystem;

namespace {

constexpr int kMaxDepth = 32;  // directories below the root that are walked

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Span digits in time order: shorter numbers first, then by digits.
bool span_before(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return a.size() < b.size();
  return a < b;
}

}  // namespace

LogDir::LogDir(const std::string& root, int64_t settle_ns) : settle_ns_(settle_ns) {
  std::error_code ec;
  const fs::path canon = fs::canonical(root, ec);
  if (ec) throw Error("ptprof view: " + root + ": " + ec.message());
  root_ = canon.string();
  root_is_file_ = fs::is_regular_file(canon, ec);
  if (!root_is_file_ && !fs::is_directory(canon, ec))
    throw Error("ptprof view: " + root + " is neither a directory nor a trace file");
  root_name_ = canon.filename().string();
}

bool LogDir::scan() {
  struct Found {
    std::string rel, path, run;
    uint64_t size;
    int64_t mtime_ns;
  };
  std::vector<Found> found;
  std::map<std::string, std::string> run_dirs;
  const int64_t now = now_ns();
  auto stat_of = [](const std::string& path, uint64_t* size, int64_t* mtime) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
    *size = static_cast<uint64_t>(st.st_size);
    *mtime = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
    return true;
  };
  std::map<std::string, Seen> seen;
  {
    std::lock_guard<std::mutex> lock(mu_);
    seen = seen_;
  }
  std::map<std::string, Seen> next_seen;

  if (root_is_file_) {
    uint64_t size = 0;
    int64_t mtime = 0;
    if (stat_of(root_, &size, &mtime)) {
      const fs::path p(root_);
      const std::string run = p.parent_path().filename().string();
      found.push_back({p.filename().string(), root_, run.empty() ? "/" : run, size, mtime});
      run_dirs[found.back().run] = p.parent_path().string();
    }
  } else {
    const std::string prefix = root_ + "/";
    std::vector<std::pair<fs::path, int>> dirs{{fs::path(root_), 0}};
    while (!dirs.empty()) {
      const auto [dir, depth] = dirs.back();
      dirs.pop_back();
      std::error_code ec;
      std::vector<std::string> traces;
      for (const auto& entry : fs::directory_iterator(dir, ec)) {
        const std::string name = entry.path().filename().string();
        if (name.empty() || name.front() == '.') continue;  // hidden: temporaries, indexes
        std::error_code e2;
        const fs::file_status link = entry.symlink_status(e2);
        if (e2) continue;
        std::string path = entry.path().string();
        if (fs::is_symlink(link)) {
          // A link is followed only where it ends inside the root, and only to a file.
          const fs::path target = fs::canonical(entry.path(), e2);
          if (e2 || target.string().compare(0, prefix.size(), prefix) != 0) continue;
          if (!fs::is_regular_file(target, e2)) continue;
          path = target.string();
        } else if (fs::is_directory(link)) {
          if (depth < kMaxDepth) dirs.emplace_back(entry.path(), depth + 1);
          continue;
        } else if (!fs::is_regular_file(link)) {
          continue;
        }
        // A flight recorder dump stands for a trace where none was written beside it (a
        // crash's dump), as trace_files_in lists them; read_trace turns it into one.
        const bool dump = detail::flight_dump_name(name);
        if (!dump && !detail::trace_file_candidate(name)) continue;
        if (dump && fs::exists(detail::flight_trace_path(entry.path().string()), e2)) continue;
        // Named by where it is listed (a link by its own name), not where it leads.
        const std::string rel = entry.path().lexically_relative(fs::path(root_)).string();
        uint64_t size = 0;
        int64_t mtime = 0;
        if (!stat_of(path, &size, &mtime)) continue;
        auto before = seen.find(rel);
        const bool same = before != seen.end() && before->second.size == size &&
                          before->second.mtime_ns == mtime;
        Seen s{size, mtime, false, now};
        if (same) {
          s.trace = before->second.trace;
          s.since_ns = before->second.since_ns;
        } else {
          s.trace = dump ? detail::is_flight_dump(path)
                         : detail::tensorboard_trace_name(name) || detail::holds_trace(path);
        }
        next_seen[rel] = s;
        // Still being written: modified a moment ago, and not seen unchanged for as long (a
        // file system whose clock runs ahead of ours still gets its files listed).
        if (now - mtime < settle_ns_ && now - s.since_ns < settle_ns_) continue;
        if (!s.trace) continue;
        const fs::path rel_dir = fs::path(rel).parent_path();
        const std::string run = rel_dir.empty() ? root_name_ : rel_dir.string();
        run_dirs[run] = dir.string();
        found.push_back({rel, path, run, size, mtime});
      }
    }
  }

  std::vector<TraceFile> files;
  std::lock_guard<std::mutex> lock(mu_);
  for (const Found& f : found) {
    TraceFile t;
    auto id = ids_.find(f.rel);
    if (id == ids_.end()) id = ids_.emplace(f.rel, "t" + std::to_string(ids_.size() + 1)).first;
    t.id = id->second;
    t.run = f.run;
    const detail::TraceFileName parsed =
        detail::parse_trace_file_name(fs::path(f.rel).filename().string());
    t.worker = parsed.worker;
    t.span = parsed.span;
    t.path = f.path;
    t.rel = f.rel;
    t.size = f.size;
    t.mtime_ns = f.mtime_ns;
    files.push_back(std::move(t));
  }
  std::sort(files.begin(), files.end(), [](const TraceFile& a, const TraceFile& b) {
    if (a.run != b.run) return a.run < b.run;
    if (a.worker != b.worker) return a.worker < b.worker;
    if (a.span != b.span) return span_before(a.span, b.span);
    return a.rel < b.rel;
  });
  for (std::size_t i = 0; i < files.size(); ++i)
    files[i].span_index = i > 0 && files[i - 1].run == files[i].run &&
                                  files[i - 1].worker == files[i].worker
                              ? files[i - 1].span_index + 1
                              : 1;
  auto key = [](const TraceFile& t) { return std::tie(t.id, t.size, t.mtime_ns); };
  bool changed = files.size() != files_.size();
  for (std::size_t i = 0; !changed && i < files.size(); ++i) changed = key(files[i]) != key(files_[i]);
  files_ = std::move(files);
  run_dirs_ = std::move(run_dirs);
  if (!root_is_file_) seen_ = std::move(next_seen);
  return changed;
}

std::vector<TraceFile> LogDir::files() const {
  std::lock_guard<std::mutex> lock(mu_);
  return files_;
}

std::optional<TraceFile> LogDir::find(const std::string& id) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const TraceFile& t : files_)
    if (t.id == id) return t;
  return std::nullopt;
}

std::optional<std::string> LogDir::run_dir(const std::string& run) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = run_dirs_.find(run);
  if (it == run_dirs_.end()) return std::nullopt;
  return it->second;
}

}  // namespace ptprof::view
