// request_policy.h: which requests the server answers, and the headers every answer carries.
//
// GET (and HEAD) only: the views read, nothing is changed through the server. The Host header
// must name this server: a page of another site that got its name resolved to 127.0.0.1 (DNS
// rebinding) sends its own name and is refused, so no other site's script can read the traces
// through the user's browser. Accepted: IP literals, "localhost", the address given with
// --host and this machine's name, each with the served port. Answers carry no CORS header and
// a Content-Security-Policy of default-src 'self': the page loads nothing from anywhere else.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace ptprof::view {

class RequestPolicy {
 public:
  RequestPolicy(std::string bind_host, int port);
  // 0 when the request is served, else the HTTP status that refuses it; `why` says why.
  int refuse(const std::string& method, const std::string& host_header, std::string* why) const;
  static const std::vector<std::pair<std::string, std::string>>& headers();

 private:
  bool host_allowed(const std::string& host) const;
  std::string bind_host_;
  std::string machine_name_;
  int port_;
};

// Whether `host` (an address or a name) is loopback: 127.0.0.0/8, ::1, "localhost".
bool is_loopback(const std::string& host);

}  // namespace ptprof::view
