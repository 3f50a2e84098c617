#include "view/trace_store.h"

#include <sys/stat.h>

#include <chrono>
#include <new>

#include "ptprof/error.h"
#include "ptprof/trace.h"
#include "trace/trace_reader.h"
#include "view/index_builder.h"
#include "view/index_location.h"

namespace ptprof::view {

TraceStore::TraceStore(std::string cache_dir)
    : cache_dir_(std::move(cache_dir)), worker_([this] { work(); }) {}

TraceStore::~TraceStore() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  worker_.join();
}

TraceStore::Entry& TraceStore::entry_locked(const TraceFile& f) {
  Entry& e = entries_[f.id];
  // A file rewritten (another size or time) is another trace: start again.
  if (e.file.path != f.path || e.file.size != f.size || e.file.mtime_ns != f.mtime_ns) {
    e = Entry();
    e.file = f;
  }
  return e;
}

TraceStore::Lookup TraceStore::get(const TraceFile& listed) {
  // The listing may be a poll behind: look at the file itself.
  TraceFile f = listed;
  struct stat st {};
  if (::stat(f.path.c_str(), &st) != 0) {
    std::lock_guard<std::mutex> lock(mu_);
    entries_.erase(f.id);
    return {State::Failed, nullptr, "ptprof view: " + f.rel + " is gone (deleted or moved)"};
  }
  f.size = static_cast<uint64_t>(st.st_size);
  f.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  std::lock_guard<std::mutex> lock(mu_);
  Entry& e = entry_locked(f);
  e.wanted = ++clock_;
  if (e.state == State::Queued) cv_.notify_all();
  return {e.state, e.trace, e.error};
}

TraceStore::Progress TraceStore::progress(const TraceFile& f) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(f.id);
  if (it == entries_.end() || it->second.file.size != f.size ||
      it->second.file.mtime_ns != f.mtime_ns)
    return {};
  const Entry& e = it->second;
  return {e.state, e.error, e.phase, e.seconds};
}

TraceStore::Entry* TraceStore::same_locked(const TraceFile& f) {
  auto it = entries_.find(f.id);
  if (it == entries_.end() || it->second.file.size != f.size ||
      it->second.file.mtime_ns != f.mtime_ns)
    return nullptr;
  return &it->second;
}

void TraceStore::work() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    Entry* next = nullptr;
    cv_.wait(lock, [&] {
      if (stop_) return true;
      next = nullptr;
      for (auto& [id, e] : entries_)
        if (e.state == State::Queued && e.wanted > 0 && (!next || e.wanted > next->wanted))
          next = &e;
      return next != nullptr;
    });
    if (stop_) return;
    next->state = State::Indexing;
    const TraceFile f = next->file;
    lock.unlock();

    std::shared_ptr<IndexedTrace> done;
    std::shared_ptr<const Report> report;
    std::string error;
    auto indexed = [&](const BuiltIndex& b) {
      auto t = std::make_shared<IndexedTrace>();
      t->file = f;
      t->key = index_key_of(f.path);
      t->index = b.index;
      t->tables = b.tables;
      t->timeline = std::make_unique<Timeline>(b.index);
      return t;
    };
    try {
      std::lock_guard<std::mutex> heavy(heavy_);
      const IndexKey key = index_key_of(f.path);
      const std::vector<std::string> paths = index_paths(f.path, cache_dir_);
      BuiltIndex b = open_index(paths, key);
      if (!b.index) {
        // Built here: its phases are timed, and the first part is served as soon as it is
        // written (the Overview and the timeline), while the tables are computed.
        auto start = std::chrono::steady_clock::now();
        IndexBuildHooks hooks;
        hooks.phase = [&](const std::string& p) {
          const auto now = std::chrono::steady_clock::now();
          std::lock_guard<std::mutex> l(mu_);
          if (Entry* e = same_locked(f)) {
            if (!e->phase.empty())
              e->seconds.emplace_back(e->phase, std::chrono::duration<double>(now - start).count());
            e->phase = p == "done" ? "" : p;
          }
          start = now;
        };
        hooks.first_part = [&](const BuiltIndex& first) {
          auto t = indexed(first);
          std::lock_guard<std::mutex> l(mu_);
          if (Entry* e = same_locked(f)) {
            e->state = State::Ready;
            e->trace = std::move(t);
            e->report = first.report;
          }
        };
        b = build_index(f.path, f.rel, paths, key, hooks);
        report = b.report;
      }
      done = indexed(b);
    } catch (const std::bad_alloc&) {
      error = "ptprof view: out of memory reading " + f.rel;
    } catch (const std::exception& e) {
      error = e.what();
    }

    lock.lock();
    Entry* e = same_locked(f);
    if (!e) continue;  // rewritten or gone meanwhile: what was built is of the old file
    e->phase.clear();
    if (done) {
      e->state = State::Ready;
      e->trace = std::move(done);
      if (report) e->report = std::move(report);
    } else {
      e->state = State::Failed;
      e->trace.reset();
      e->error = std::move(error);
    }
  }
}

std::shared_ptr<const Report> TraceStore::report(const TraceFile& f) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    Entry& e = entry_locked(f);
    if (e.report) return e.report;
  }
  std::shared_ptr<const Report> r;
  {
    std::lock_guard<std::mutex> heavy(heavy_);
    r = std::make_shared<const Report>(detail::read_trace(f.path));
  }
  std::lock_guard<std::mutex> lock(mu_);
  Entry& e = entry_locked(f);
  e.report = r;
  return r;
}

}  // namespace ptprof::view
