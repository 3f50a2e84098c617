// view_server.h: `ptprof view`: the page and its JSON API over HTTP (cpp-httplib), for the
// traces of one log directory or file.
//
//   ptprof::view::ViewOptions o;
//   o.path = "log/";
//   ptprof::view::ViewServer server(o);   // binds; throws ptprof::Error naming the address
//   std::cout << server.url();
//   server.run();                          // until stop()
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

namespace ptprof::view {

struct ViewOptions {
  std::string path;                 // a log directory or a trace file
  std::string host = "127.0.0.1";   // the address to listen on
  int port = 6006;                  // 0: any free port
  bool port_given = false;          // else the next free ports after `port` are tried too
  int64_t poll_ms = 1000;           // how often the directory is listed again
  int64_t settle_ms = 1000;         // a file modified this recently waits one more listing
  std::string cache_dir = "-";      // indexes of traces in read-only directories; "-": default
};

class ViewServer {
 public:
  // Lists the directory, binds the address and starts indexing the first page's trace.
  // Throws ptprof::Error when the path does not exist or the address cannot be bound.
  explicit ViewServer(const ViewOptions& options);
  ~ViewServer();
  ViewServer(const ViewServer&) = delete;
  ViewServer& operator=(const ViewServer&) = delete;

  int port() const;
  std::string url() const;
  // A warning to print when the address is not loopback (anyone who can reach it reads the
  // traces), else "".
  std::string exposure_warning() const;
  // Serves until stop() (from another thread or a signal handler's thread).
  void run();
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ptprof::view
