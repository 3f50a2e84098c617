// eh_frame_cfi.h: the unwind rule of a code address from an object's .eh_frame, as a pure
// function of bytes (like LLVM's DWARFDebugFrame): it reads only the sections it is given, at
// the addresses they are said to be loaded at, so that a fuzzer can feed it any bytes
// (tests/fuzz/fuzz_eh_frame_cfi.cpp). Any input ends in a rule or kUnsupported, without reading
// outside the sections or looping. The live unwinder calls it on a rule-cache miss with the
// sections of the loaded object that holds the address (rule_cache.cpp).
#pragma once

#include <cstdint>

#include "recording/unwind/rule.h"

namespace ptprof::detail::unwind {

// Bytes as they lie in memory, and the address they are loaded at: pc-relative and datarel
// pointers in them are relative to it.
struct Section {
  const uint8_t* data = nullptr;
  uint64_t size = 0;
  uint64_t addr = 0;

  // Whether the `n` bytes at address `a` lie inside (no overflow on any input).
  bool contains(uint64_t a, uint64_t n) const {
    return a >= addr && a - addr <= size && n <= size - (a - addr);
  }
};

// The rule at `pc`: the FDE that covers it, found in .eh_frame_hdr's sorted table, then its
// CIE's and its own CFA instructions run up to `pc`. `eh_frame` holds .eh_frame (it may be
// larger: the live unwinder gives the whole segment it is loaded in). kUnsupported: no FDE
// covers pc, or its CFI is malformed or more than Rule can say.
Rule eh_frame_rule(const Section& eh_frame_hdr, const Section& eh_frame, uint64_t pc);

// The two steps of eh_frame_rule.
// Where .eh_frame starts by .eh_frame_hdr's eh_frame_ptr (0: malformed or unsupported).
uint64_t eh_frame_start(const Section& eh_frame_hdr);
// The address of the FDE whose table entry is the last at or below `pc` (0: none).
uint64_t find_fde(const Section& eh_frame_hdr, uint64_t pc);
// The rule at `pc` from the FDE at address `fde` in `eh_frame`.
Rule fde_rule(const Section& eh_frame, uint64_t fde, uint64_t pc);

// The pcs [*begin, *end) that the FDE at `fde` covers; false if it is no FDE or is malformed.
// For tests and the fuzzer, which build an .eh_frame_hdr table from them as a linker would.
bool fde_pc_range(const Section& eh_frame, uint64_t fde, uint64_t* begin, uint64_t* end);

}  // namespace ptprof::detail::unwind
