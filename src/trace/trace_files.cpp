#include "trace/trace_files.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <memory>

#include "ptprof/error.h"
#include "trace/byte_source.h"
#include "trace/flight_dump.h"

namespace ptprof::detail {

namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// How far into a file its first key is looked for: Kineto writes "schemaVersion" first, older
// writers "traceEvents"; device properties of many GPUs or a large distributedInfo come
// before the events, so a generous head.
constexpr std::size_t kHeadBytes = std::size_t{256} << 10;

}  // namespace

TraceFileName parse_trace_file_name(std::string_view name) {
  for (std::string_view suffix : {".gz", ".ptflight"})
    if (ends_with(name, suffix)) name.remove_suffix(suffix.size());
  for (std::string_view suffix : {".json", ".pt.trace"})
    if (ends_with(name, suffix)) name.remove_suffix(suffix.size());
  // An optional ".<digits>": the window's time, TensorBoard's span.
  TraceFileName out;
  std::size_t digits = 0;
  while (digits < name.size() &&
         std::isdigit(static_cast<unsigned char>(name[name.size() - 1 - digits])))
    ++digits;
  if (digits > 0 && digits < name.size() && name[name.size() - 1 - digits] == '.') {
    out.span = std::string(name.substr(name.size() - digits));
    name.remove_suffix(digits + 1);
  }
  out.worker = std::string(name);
  return out;
}

bool trace_file_candidate(std::string_view name) {
  if (name.empty() || name.front() == '.') return false;
  return ends_with(name, ".json") || ends_with(name, ".json.gz");
}

bool flight_dump_name(std::string_view name) {
  return !name.empty() && name.front() != '.' && ends_with(name, ".ptflight");
}

bool tensorboard_trace_name(std::string_view name) {
  return trace_file_candidate(name) &&
         (ends_with(name, ".pt.trace.json") || ends_with(name, ".pt.trace.json.gz"));
}

bool holds_trace(const std::string& path) {
  std::string head(kHeadBytes, '\0');
  std::size_t got = 0;
  try {
    const std::unique_ptr<ByteSource> source = open_trace_source(path);
    for (std::size_t n; got < head.size() && (n = source->read(&head[got], head.size() - got)) > 0;)
      got += n;
  } catch (const Error&) {
    // Unreadable, or gzip cut short before the head: not a trace (yet). Whatever is read is
    // still looked at: a trace being written has its first key early.
  } catch (const std::bad_alloc&) {
    return false;
  }
  head.resize(got);
  std::size_t i = 0;
  if (head.compare(0, 3, "\xEF\xBB\xBF") == 0) i = 3;  // a UTF-8 byte order mark
  while (i < head.size() && std::isspace(static_cast<unsigned char>(head[i]))) ++i;
  if (i >= head.size() || head[i] != '{') return false;
  return head.find("\"traceEvents\"", i) != std::string::npos ||
         head.find("\"schemaVersion\"", i) != std::string::npos;
}

std::vector<std::string> trace_files_in(const std::string& dir) {
  std::error_code ec;
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    std::error_code file_ec;
    if (!e.is_regular_file(file_ec)) continue;
    if (flight_dump_name(name)) {
      // A flight recorder dump without the trace written beside it (a crash's) stands for it.
      std::error_code no_error;  // cannot tell: listed
      if (!std::filesystem::exists(flight_trace_path(e.path().string()), no_error))
        files.push_back(e.path().string());
      continue;
    }
    if (!trace_file_candidate(name)) continue;
    if (tensorboard_trace_name(name) || holds_trace(e.path().string()))
      files.push_back(e.path().string());
  }
  if (ec) throw Error("ptprof: cannot list " + dir + ": " + ec.message());
  if (files.empty())
    throw Error("ptprof: " + dir +
                " holds no *.pt.trace.json[.gz] file, nor any other *.json[.gz] holding a trace, nor a "
                "*.ptflight dump");
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace ptprof::detail
