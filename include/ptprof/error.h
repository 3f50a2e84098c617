// ptprof/error.h: the one exception type ptprof throws.
//
// ptprof throws only where the caller can act on it: bad Options at construction, a second
// session, or an explicit export the caller asked for. Anything that goes wrong while the
// training run is being observed is reported (the session's Status, Options::log) instead of
// thrown.
#pragma once

#include <stdexcept>
#include <string>

namespace ptprof {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

}  // namespace ptprof
