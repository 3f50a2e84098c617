#include "trace/process_info.h"

#include <unistd.h>

#include <fstream>

namespace ptprof::detail {

std::string default_worker_name() {
  char host[256] = {0};
  if (::gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
  return std::string(host[0] ? host : "localhost") + "_" + std::to_string(::getpid());
}

std::string process_name() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string argv0;
  std::getline(in, argv0, '\0');
  const auto slash = argv0.rfind('/');
  if (slash != std::string::npos) argv0 = argv0.substr(slash + 1);
  return argv0.empty() ? "ptprof" : argv0;
}

}  // namespace ptprof::detail
