#include "view/index_location.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

namespace ptprof::view {

namespace fs = std::filesystem;

namespace {

// A directory of ours, created as needed with mode 0700: no other user can have put it (or a
// link in its place) there first.
bool own_dir(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::getuid())
    return false;
  if ((st.st_mode & 077) != 0 && ::chmod(dir.c_str(), 0700) != 0) return false;
  return true;
}

// Whether the index may go beside the trace. A directory without any write permission is
// read-only by intent (a shared archive of traces): root, who could write there anyway,
// leaves it alone too.
bool writable_dir(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return false;
  if ((st.st_mode & (S_IWUSR | S_IWGRP | S_IWOTH)) == 0) return false;
  return ::access(dir.c_str(), W_OK) == 0;
}

}  // namespace

std::string default_cache_dir() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  std::string dir;
  if (xdg && *xdg == '/') {
    dir = std::string(xdg) + "/ptprof/view";
  } else if (home && *home == '/') {
    dir = std::string(home) + "/.cache/ptprof/view";
  } else {
    dir = "/tmp/ptprof-view-" + std::to_string(::getuid());
  }
  return own_dir(dir) ? dir : "";
}

std::string usable_cache_dir(const std::string& dir) { return !dir.empty() && own_dir(dir) ? dir : ""; }

std::vector<std::string> index_paths(const std::string& trace_path, const std::string& cache_dir) {
  const fs::path p(trace_path);
  std::vector<std::string> out;
  const fs::path dir = p.parent_path().empty() ? fs::path(".") : p.parent_path();
  if (writable_dir(dir.string()))
    out.push_back((p.parent_path() / ("." + p.filename().string() + ".ptprof-index")).string());
  if (!cache_dir.empty()) {
    std::error_code ec;
    const std::string abs = fs::absolute(p, ec).lexically_normal().string();
    uint64_t h = 0xcbf29ce484222325ULL;
    for (char c : abs) {
      h ^= static_cast<unsigned char>(c);
      h *= 0x100000001b3ULL;
    }
    char hex[17];
    std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(h));
    out.push_back(cache_dir + "/" + hex + "-" + p.filename().string() + ".ptprof-index");
  }
  return out;
}

}  // namespace ptprof::view
