// rule.h: how to get from one code address to its caller, what the rule caches hold.
//
// What the DWARF CFI of one address says about getting to the caller, reduced to what x86-64
// code compiled by GCC/Clang uses at call sites: the CFA is rsp + off, rbp + off, or *(rbp + off)
// (stack realignment); the return address is at CFA - 8; the caller's rbp is unchanged, saved
// at CFA + off, or unknown. Anything else ends the capture there.
#pragma once

#include <cstdint>
#include <cstring>

namespace ptprof::detail::unwind {

enum CfaKind : uint8_t { kUnsupported = 0, kOutermost, kCfaRsp, kCfaRbp, kCfaRbpDeref };
enum RbpKind : uint8_t { kRbpSame = 0, kRbpSaved, kRbpLost };

struct Rule {
  int32_t cfa_off = 0;
  int16_t rbp_off = 0;
  uint8_t cfa = kUnsupported;
  uint8_t rbp = kRbpSame;
};
// One word, so that the shared cache can publish it with one atomic store.
static_assert(sizeof(Rule) == sizeof(uint64_t));

inline uint64_t pack(Rule r) {
  uint64_t v;
  std::memcpy(&v, &r, sizeof v);
  return v;
}
inline Rule unpack(uint64_t v) {
  Rule r;
  std::memcpy(static_cast<void*>(&r), &v, sizeof r);
  return r;
}

}  // namespace ptprof::detail::unwind
