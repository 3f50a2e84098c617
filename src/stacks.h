// stacks.h: with_stack: native stack capture at op entry, symbolization at export, and the
// collapsed-stack and SVG flame graph exports.
//
// Capture is on the hot path (every op, any thread, inside RecordFunction callbacks), so it
// only walks the stack with cached unwind rules and stores return addresses; turning them into
// names (dladdr, ELF symbol tables, demangling) happens once per distinct address at export.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ptprof {
class Trace;
}

namespace ptprof::detail {

// Writes the return addresses of the calling thread's stack into out[0..n), innermost first,
// starting with the return address into the caller of capture_stack, and returns n <=
// max_depth. A deeper stack is cut at max_depth (innermost frames kept): pass one more than
// you keep to tell a cut stack from one exactly that deep.
//
// x86-64 Linux: a DWARF CFI unwinder (.eh_frame, so no frame pointers needed) whose per-address
// rules are cached process-wide; after warm-up a capture takes no lock and does not allocate.
// The first capture on a thread asks pthread for its stack bounds (every read is checked
// against them). Elsewhere, and on stacks outside those bounds (sigaltstack, fibers), it
// falls back to _Unwind_Backtrace.
int capture_stack(void** out, int max_depth);

// The same stack through libgcc's _Unwind_Backtrace (slow: no caching of rules). The fallback
// of capture_stack and the reference the tests compare it against.
int capture_stack_reference(void** out, int max_depth);

// Allocates the rule cache now rather than at the first capture (call at session start).
void warm_up_stack_capture();

struct StackCaptureStats {
  uint64_t rule_misses = 0;  // addresses whose rule was computed from .eh_frame
  uint64_t unsupported = 0;  // addresses without a usable rule (a capture ends there)
  uint64_t fallbacks = 0;    // captures that went through _Unwind_Backtrace
};
StackCaptureStats stack_capture_stats();

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

// torch.profiler's export_stacks: for every event with a stack and a value > 0, its frames
// outermost first, then the event's name, joined by ';' (each name's ' ', ';', '\t', '\n' made
// '_'), a space and the value in integer microseconds. Identical stacks are merged into one
// line (their nanoseconds summed, then truncated to us; lines of 0 us are left out); lines are
// sorted. Metrics: "self_cpu_time_total" (Event::self_ns) and "self_cuda_time_total" (alias
// "self_device_time_total": GPU kernels, copies and memsets whose External id is the op's).
// Throws ptprof::Error naming the valid metrics for any other.
std::string collapsed_stacks(const Trace& trace, const std::string& metric);

// A self-contained SVG flame graph of collapsed stacks ("a;b;c 12" lines): one rect per frame
// (wider than 0.1 px), sized by value, roots at the bottom, under an "all" frame; each with
// a <title> tooltip "name (value us, percent%)", a label clipped to its width and a colour
// derived from a hash of its name. No scripts or external resources.
std::string flamegraph_svg(const std::string& collapsed, const std::string& title);

// Text for XML/HTML content and attribute values: & < > " ' escaped, control characters XML
// does not allow become '?', and bytes that are not well-formed UTF-8, and U+FFFE/U+FFFF
// (which XML forbids), become U+FFFD.
std::string xml_escape(std::string_view s);

}  // namespace ptprof::detail
