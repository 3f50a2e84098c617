// symbolizer.h: return addresses captured by with_stack turned into frame names, once per
// distinct address, when a window closes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ptprof::detail {

// Turns return addresses into frame names, each distinct address once per process (every
// Symbolizer shares one cache). Thread-safe.
//
// A frame is the demangled function name (simplify_function_name) from the module's ELF
// .symtab and .dynsym (so non-exported and static functions too, and executables built
// without -rdynamic). An address in a module without a symbol for it renders as
// "<module basename>+0x<offset from the module's load bias>", one outside any module as
// "0x<address>".
class Symbolizer {
 public:
  Symbolizer();
  ~Symbolizer();
  Symbolizer(const Symbolizer&) = delete;
  Symbolizer& operator=(const Symbolizer&) = delete;

  // `addr` is a return address as capture_stack stores it: it is looked up at addr - 1, so
  // a call that is the last instruction of its function still names that function.
  std::string symbolize(const void* addr);
  std::vector<std::string> symbolize(const void* const* addrs, int n);
  std::string frame(uint64_t addr) { return symbolize(reinterpret_cast<const void*>(addr)); }
  // Distinct addresses symbolized so far.
  std::size_t cached() const;

 private:
 public:
  struct Impl;

 private:
  Impl* impl_;  // the process's one cache, never freed
};

// A demangled name made readable in a flame graph: no parameter list, return type, cv/ref
// qualifiers or "[clone .cold]" suffix; template arguments become "<...>" only if the name is
// still longer than 100 characters. "at::Tensor at::native::add(at::Tensor const&, ...)"
// -> "at::native::add".
std::string simplify_function_name(std::string_view demangled);

}  // namespace ptprof::detail
