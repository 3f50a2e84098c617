#include "ptprof/range.h"

#include <string>

namespace ptprof {

Range::Range(std::string_view name) : rf_(at::RecordScope::USER_SCOPE) {
  if (rf_.isActive()) rf_.before(name);
}

namespace {
std::string data_loader_name(std::string_view iterator) {
  std::string n = "enumerate(DataLoader)#";
  n += iterator;
  n += ".__next__";
  return n;
}
}  // namespace

DataLoaderRange::DataLoaderRange(std::string_view iterator) : Range(data_loader_name(iterator)) {}

}  // namespace ptprof
