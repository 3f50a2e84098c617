#include "trace/trace_vocabulary.h"

namespace ptprof::detail {

namespace {

uint8_t index_of(std::string_view name, const std::string_view* names, int n) {
  for (int i = 0; i < n; ++i)
    if (name == names[i]) return static_cast<uint8_t>(i);
  return 0;
}
constexpr std::string_view kCopyKinds[] = {"<unknown>", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
                                           "AtoD",      "DtoA", "DtoD", "HtoH", "PtoP"};
constexpr std::string_view kMemoryKinds[] = {"Unknown",       "Pageable",      "Pinned",
                                             "Device",        "Array",         "Managed",
                                             "Device Static", "Managed Static"};

}  // namespace

void transfer_kinds_from_name(EventKind kind, std::string_view name, TransferInfo* t) {
  const auto open = name.find(" (");
  if (open == std::string_view::npos || name.empty() || name.back() != ')') return;
  const std::string_view inner = name.substr(open + 2, name.size() - open - 3);
  if (kind == EventKind::Memset) {
    if (name.substr(0, open) == "Memset") t->dst_kind = index_of(inner, kMemoryKinds, 8);
    return;
  }
  if (name.rfind("Memcpy ", 0) != 0) return;
  const auto arrow = inner.find(" -> ");
  if (arrow == std::string_view::npos) return;
  t->copy_kind = index_of(name.substr(7, open - 7), kCopyKinds, 11);
  t->src_kind = index_of(inner.substr(0, arrow), kMemoryKinds, 8);
  t->dst_kind = index_of(inner.substr(arrow + 4), kMemoryKinds, 8);
}

}  // namespace ptprof::detail
