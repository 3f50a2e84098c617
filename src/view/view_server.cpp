#include "view/view_server.h"

#include <httplib.h>

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "ptprof/error.h"
#include "view/api.h"
#include "view/assets.h"
#include "view/index_location.h"
#include "view/log_dir.h"
#include "view/request_policy.h"
#include "view/trace_store.h"

namespace ptprof::view {

struct ViewServer::Impl {
  explicit Impl(const ViewOptions& o)
      : options(o),
        dir(o.path, o.settle_ms * 1000000),
        store(o.cache_dir == "-" ? default_cache_dir() : usable_cache_dir(o.cache_dir)),
        api(dir, store) {}

  ViewOptions options;
  LogDir dir;
  TraceStore store;
  Api api;
  std::unique_ptr<RequestPolicy> policy;
  httplib::Server http;
  int port = 0;
  std::mutex mu;
  std::condition_variable cv;
  bool stopping = false;
  std::thread poller;
  std::atomic<bool> stop_requested{false};
  std::atomic<bool> in_run{false};

  void poll() {
    std::unique_lock<std::mutex> lock(mu);
    while (!cv.wait_for(lock, std::chrono::milliseconds(options.poll_ms), [&] { return stopping; })) {
      lock.unlock();
      dir.scan();
      lock.lock();
    }
  }
};

namespace {

void send_text(httplib::Response& res, int status, const std::string& text) {
  res.status = status;
  res.set_content(text + "\n", "text/plain; charset=utf-8");
}

}  // namespace

ViewServer::ViewServer(const ViewOptions& options) : impl_(std::make_unique<Impl>(options)) {
  Impl& m = *impl_;
  m.dir.scan();
  // The first page is the Overview of the first run's latest window (TensorBoard's): index it
  // while the browser opens.
  const std::vector<TraceFile> files = m.dir.files();
  if (!files.empty()) {
    std::size_t last = 0;
    while (last + 1 < files.size() && files[last + 1].run == files[0].run &&
           files[last + 1].worker == files[0].worker)
      ++last;
    m.store.get(files[last]);
  }

  httplib::Server& http = m.http;
  httplib::Headers defaults;
  for (const auto& [k, v] : RequestPolicy::headers()) defaults.emplace(k, v);
  http.set_default_headers(defaults);
  http.set_payload_max_length(64 << 10);  // GET only: no request has a body worth keeping
  http.set_pre_routing_handler([&m](const httplib::Request& req, httplib::Response& res) {
    std::string why;
    const int status = m.policy->refuse(req.method, req.get_header_value("Host"), &why);
    if (status == 0) return httplib::Server::HandlerResponse::Unhandled;
    if (status == 405) res.set_header("Allow", "GET, HEAD");
    send_text(res, status, "ptprof view: " + why);
    return httplib::Server::HandlerResponse::Handled;
  });
  auto asset = [](const std::string& path, httplib::Response& res) {
    const Asset* a = find_asset(path);
    if (!a) return send_text(res, 404, "ptprof view: no such page");
    res.set_content(std::string(a->body), std::string(a->content_type).c_str());
  };
  http.Get("/", [asset](const httplib::Request&, httplib::Response& res) { asset("index.html", res); });
  http.Get(R"(/static/([A-Za-z0-9_./-]+))", [asset](const httplib::Request& req, httplib::Response& res) {
    asset(req.matches[1].str(), res);
  });
  http.Get(R"(/api/([a-z/]+))", [&m](const httplib::Request& req, httplib::Response& res) {
    // Sent as it is: a content provider of known length is not compressed (a timeline page is
    // megabytes of numbers, which gzip takes far longer to squeeze than loopback takes to
    // carry), and the answer is not copied on its way.
    ApiResponse r = m.api.handle(req.matches[1].str(), req.params);
    res.status = r.status;
    auto body = std::make_shared<std::string>(std::move(r.body));
    res.set_content_provider(body->size(), "application/json",
                             [body](size_t offset, size_t length, httplib::DataSink& sink) {
                               sink.write(body->data() + offset, std::min(length, body->size() - offset));
                               return true;
                             });
  });
  http.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    // Only where nothing answered (an API error has its JSON already).
    if (res.body.empty() && !res.has_header("Content-Type"))
      send_text(res, res.status, "ptprof view: not found");
  });
  http.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
    send_text(res, 500, "ptprof view: internal error");
  });

  // Bind: the port asked for; by default 6006 (TensorBoard's) or the next free one.
  const int tries = options.port_given || options.port == 0 ? 1 : 10;
  for (int i = 0; i < tries && m.port <= 0; ++i) {
    if (options.port == 0) {
      m.port = http.bind_to_any_port(options.host);
    } else if (http.bind_to_port(options.host, options.port + i)) {
      m.port = options.port + i;
    }
  }
  if (m.port <= 0)
    throw Error("ptprof view: cannot listen on " + options.host + ":" +
                std::to_string(options.port) +
                (tries > 1 ? " (nor the next " + std::to_string(tries - 1) + " ports)" : "") +
                ": in use, or not an address of this machine");
  m.policy = std::make_unique<RequestPolicy>(options.host, m.port);
  m.poller = std::thread([&m] { m.poll(); });
}

ViewServer::~ViewServer() {
  stop();
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stopping = true;
  }
  impl_->cv.notify_all();
  if (impl_->poller.joinable()) impl_->poller.join();
}

int ViewServer::port() const { return impl_->port; }

std::string ViewServer::url() const {
  std::string host = impl_->options.host;
  if (host == "0.0.0.0") host = "127.0.0.1";
  if (host.find(':') != std::string::npos) host = "[" + host + "]";
  return "http://" + host + ":" + std::to_string(impl_->port) + "/";
}

std::string ViewServer::exposure_warning() const {
  if (is_loopback(impl_->options.host)) return "";
  return "ptprof view: warning: listening on " + impl_->options.host +
         ", not on loopback: anyone who can reach this address can read these traces (there is "
         "no authentication). Use --host 127.0.0.1 unless that is what you want.";
}

void ViewServer::run() {
  impl_->in_run = true;
  if (!impl_->stop_requested) impl_->http.listen_after_bind();
  impl_->in_run = false;
}

void ViewServer::stop() {
  // A stop that comes before run() got to listen: wait until it listens, then stop it.
  impl_->stop_requested = true;
  while (impl_->in_run && !impl_->http.is_running())
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  impl_->http.stop();
}

}  // namespace ptprof::view
