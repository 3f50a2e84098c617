#include "view/request_policy.h"

#include <arpa/inet.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>

namespace ptprof::view {

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool ipv4(const std::string& s) {
  in_addr a{};
  return ::inet_pton(AF_INET, s.c_str(), &a) == 1;
}
bool ipv6(const std::string& s) {
  in6_addr a{};
  return ::inet_pton(AF_INET6, s.c_str(), &a) == 1;
}

}  // namespace

bool is_loopback(const std::string& host) {
  const std::string h = lower(host);
  if (h == "localhost") return true;
  in_addr a{};
  if (::inet_pton(AF_INET, h.c_str(), &a) == 1) return (ntohl(a.s_addr) >> 24) == 127;
  std::string v6 = h;
  if (v6.size() > 2 && v6.front() == '[' && v6.back() == ']') v6 = v6.substr(1, v6.size() - 2);
  in6_addr b{};
  if (::inet_pton(AF_INET6, v6.c_str(), &b) == 1) return IN6_IS_ADDR_LOOPBACK(&b);
  return false;
}

RequestPolicy::RequestPolicy(std::string bind_host, int port)
    : bind_host_(lower(std::move(bind_host))), port_(port) {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) == 0) machine_name_ = lower(name);
}

bool RequestPolicy::host_allowed(const std::string& header) const {
  // "name:port", "[v6]:port"; the port must be the served one (browsers always send it for a
  // port other than 80).
  const std::string h = lower(header);
  std::string host, port;
  if (!h.empty() && h.front() == '[') {
    const auto close = h.find(']');
    if (close == std::string::npos) return false;
    host = h.substr(1, close - 1);
    if (close + 1 < h.size()) {
      if (h[close + 1] != ':') return false;
      port = h.substr(close + 2);
    }
    if (!ipv6(host)) return false;
  } else {
    const auto colon = h.rfind(':');
    host = colon == std::string::npos ? h : h.substr(0, colon);
    port = colon == std::string::npos ? "" : h.substr(colon + 1);
  }
  if (port != std::to_string(port_) && !(port.empty() && port_ == 80)) return false;
  if (host.empty()) return false;
  // An IP literal cannot be rebound; names only where they are this server's own.
  if (ipv4(host) || ipv6(host)) return true;
  return host == "localhost" || host == bind_host_ ||
         (!machine_name_.empty() && host == machine_name_);
}

int RequestPolicy::refuse(const std::string& method, const std::string& host_header,
                          std::string* why) const {
  if (method != "GET" && method != "HEAD") {
    *why = "only GET is served";
    return 405;
  }
  if (!host_allowed(host_header)) {
    *why = "the Host header (" + host_header.substr(0, 200) +
           ") does not name this server; requests through another name are refused (DNS "
           "rebinding)";
    return 421;
  }
  return 0;
}

const std::vector<std::pair<std::string, std::string>>& RequestPolicy::headers() {
  static const std::vector<std::pair<std::string, std::string>> kHeaders = {
      {"Content-Security-Policy",
       "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; "
       "form-action 'none'"},
      {"X-Content-Type-Options", "nosniff"},
      {"X-Frame-Options", "DENY"},
      {"Referrer-Policy", "no-referrer"},
      {"Cross-Origin-Resource-Policy", "same-origin"},
      {"Cache-Control", "no-store"},
  };
  return kHeaders;
}

}  // namespace ptprof::view
