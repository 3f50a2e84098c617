// The .eh_frame CFI interpreter on hand-made sections (src/recording/unwind/eh_frame_cfi.h):
// the rules it derives, and the malformed inputs fuzz_eh_frame_cfi found or that its bounds
// exist for.
#include "recording/unwind/eh_frame_cfi.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <vector>

namespace ptprof::detail::unwind {
namespace {

constexpr uint64_t kEhAddr = 0x7f0000100000;
constexpr uint64_t kHdrAddr = 0x7f00000f0000;
constexpr uint64_t kFdeStart = 0x7f0000000000;  // where the FDEs' code starts

void put32(std::vector<uint8_t>& v, uint32_t x) {
  uint8_t b[4];
  std::memcpy(b, &x, 4);
  v.insert(v.end(), b, b + 4);
}

// A length-prefixed record, padded with DW_CFA_nop as assemblers do.
void record(std::vector<uint8_t>& out, std::vector<uint8_t> body) {
  while ((body.size() + 4) % 8) body.push_back(0);
  put32(out, static_cast<uint32_t>(body.size()));
  out.insert(out.end(), body.begin(), body.end());
}

// One CIE as GCC writes it ("zR", pcrel|sdata4; CFA = rsp + 8, return address at CFA - 8).
const std::vector<uint8_t> kGccCie = {0,    0,  0, 0,    1,    'z', 'R', 0,    1,
                                      0x78, 16, 1, 0x1b, 0x0c, 7,   8,   0x90, 1};

// The CIE `cie` (its body), then an FDE per instruction list, each covering 0x100 bytes from
// kFdeStart + i * 0x100 (pointers as kGccCie has them).
std::vector<uint8_t> eh_frame(std::initializer_list<std::vector<uint8_t>> fdes,
                              const std::vector<uint8_t>& cie = kGccCie) {
  std::vector<uint8_t> out;
  record(out, cie);
  uint64_t pc = kFdeStart;
  for (const auto& insns : fdes) {
    std::vector<uint8_t> body;
    const uint64_t here = out.size();
    put32(body, static_cast<uint32_t>(here + 4));                   // back to the CIE
    put32(body, static_cast<uint32_t>(pc - (kEhAddr + here + 8)));  // pcrel pc_begin
    put32(body, 0x100);                                             // pc_range
    body.push_back(0);                                              // no augmentation data
    body.insert(body.end(), insns.begin(), insns.end());
    record(out, body);
    pc += 0x100;
  }
  put32(out, 0);
  return out;
}

// The FDE addresses of `eh`, in order.
std::vector<uint64_t> fdes_of(const std::vector<uint8_t>& eh) {
  std::vector<uint64_t> fdes;
  uint64_t off = 0;
  for (;;) {
    uint32_t len;
    std::memcpy(&len, eh.data() + off, 4);
    if (len == 0) break;
    uint32_t id;
    std::memcpy(&id, eh.data() + off + 4, 4);
    if (id != 0) fdes.push_back(kEhAddr + off);
    off += 4 + len;
  }
  return fdes;
}

// push rbp; mov rbp, rsp; ...; pop rbp; ret
const std::vector<uint8_t> kFramePointer = {
    0x41, 0x0e, 0x10,         // advance_loc 1; def_cfa_offset 16
    0x86, 0x02,               // offset rbp at CFA - 16
    0x43, 0x0d, 0x06,         // advance_loc 3; def_cfa_register rbp
    0x50, 0x0c, 0x07, 0x08};  // advance_loc 16; def_cfa rsp + 8

Rule rule_at(const std::vector<uint8_t>& eh, uint64_t fde, uint64_t pc) {
  return fde_rule(Section{eh.data(), eh.size(), kEhAddr}, fde, pc);
}

TEST(EhFrameCfi, FramePointerFunction) {
  const auto eh = eh_frame({kFramePointer});
  const uint64_t fde = fdes_of(eh).at(0);
  Rule r = rule_at(eh, fde, kFdeStart);
  EXPECT_EQ(r.cfa, kCfaRsp);
  EXPECT_EQ(r.cfa_off, 8);
  EXPECT_EQ(r.rbp, kRbpSame);
  r = rule_at(eh, fde, kFdeStart + 1);
  EXPECT_EQ(r.cfa, kCfaRsp);
  EXPECT_EQ(r.cfa_off, 16);
  EXPECT_EQ(r.rbp, kRbpSaved);
  EXPECT_EQ(r.rbp_off, -16);
  r = rule_at(eh, fde, kFdeStart + 4);
  EXPECT_EQ(r.cfa, kCfaRbp);
  EXPECT_EQ(r.cfa_off, 16);
  r = rule_at(eh, fde, kFdeStart + 0x14);
  EXPECT_EQ(r.cfa, kCfaRsp);
  EXPECT_EQ(r.cfa_off, 8);
  EXPECT_EQ(rule_at(eh, fde, kFdeStart + 0x100).cfa, kUnsupported);  // past its range
  uint64_t begin = 0, end = 0;
  ASSERT_TRUE(fde_pc_range(Section{eh.data(), eh.size(), kEhAddr}, fde, &begin, &end));
  EXPECT_EQ(begin, kFdeStart);
  EXPECT_EQ(end, kFdeStart + 0x100);
}

TEST(EhFrameCfi, RealignedStackAndOutermostFrame) {
  const auto eh = eh_frame({{
                                0x44, 0x0c, 0x0a, 0x00,              // def_cfa r10 + 0
                                0x49, 0x10, 0x06, 0x02, 0x76, 0x00,  // expression rbp
                                0x4b, 0x0f, 0x03, 0x76, 0x78, 0x06,  // CFA = *(rbp - 8)
                            },
                            {0x07, 0x10}});  // undefined rip
  const auto fdes = fdes_of(eh);
  Rule r = rule_at(eh, fdes.at(0), kFdeStart + 4);
  EXPECT_EQ(r.cfa, kUnsupported);  // CFA = r10
  r = rule_at(eh, fdes.at(0), kFdeStart + 4 + 9 + 11);
  EXPECT_EQ(r.cfa, kCfaRbpDeref);
  EXPECT_EQ(r.cfa_off, -8);
  EXPECT_EQ(r.rbp, kRbpLost);
  EXPECT_EQ(rule_at(eh, fdes.at(1), kFdeStart + 0x100).cfa, kOutermost);
}

// The same FDEs through an .eh_frame_hdr, as linkers write it.
TEST(EhFrameCfi, ThroughEhFrameHdr) {
  const auto eh = eh_frame({kFramePointer, kFramePointer});
  const auto fdes = fdes_of(eh);
  std::vector<uint8_t> hdr = {1, 0x1b, 0x03, 0x3b};
  put32(hdr, static_cast<uint32_t>(kEhAddr - (kHdrAddr + 4)));
  put32(hdr, 2);
  for (int i = 0; i < 2; ++i) {
    put32(hdr, static_cast<uint32_t>(kFdeStart + i * 0x100 - kHdrAddr));
    put32(hdr, static_cast<uint32_t>(fdes[i] - kHdrAddr));
  }
  const Section h{hdr.data(), hdr.size(), kHdrAddr};
  const Section e{eh.data(), eh.size(), kEhAddr};
  EXPECT_EQ(eh_frame_start(h), kEhAddr);
  EXPECT_EQ(find_fde(h, kFdeStart + 0x101), fdes[1]);
  EXPECT_EQ(find_fde(h, kFdeStart - 1), 0u);
  EXPECT_EQ(eh_frame_rule(h, e, kFdeStart + 0x104).cfa, kCfaRbp);
  // A table longer than the section holds is no table.
  hdr[8] = 200;
  EXPECT_EQ(find_fde(Section{hdr.data(), hdr.size(), kHdrAddr}, kFdeStart), 0u);
}

// Records whose length, or whose CIE pointer, reaches outside the section.
TEST(EhFrameCfi, RecordsOutsideTheSectionAreNoRule) {
  auto eh = eh_frame({kFramePointer});
  const uint64_t fde = fdes_of(eh).at(0);
  const uint64_t at = fde - kEhAddr;
  auto longer = eh;
  longer[at] = 0xf0;  // the FDE's length
  EXPECT_EQ(rule_at(longer, fde, kFdeStart).cfa, kUnsupported);
  auto far_cie = eh;
  far_cie[at + 4] = 0xf0;  // the CIE pointer
  EXPECT_EQ(rule_at(far_cie, fde, kFdeStart).cfa, kUnsupported);
  EXPECT_EQ(rule_at(eh, kEhAddr + eh.size(), kFdeStart).cfa, kUnsupported);
  EXPECT_EQ(rule_at(eh, kEhAddr - 4, kFdeStart).cfa, kUnsupported);
}

// Cases the parser's bounds exist for: each read out of bounds, or overflowed, before the
// parser became a function of the section's bytes (issue 26).

// A CIE with GCC's old "eh" augmentation skips an 8-byte pointer, and a version 4 CIE two
// bytes: past the end of a record too short to hold them, nothing more is read.
TEST(EhFrameCfi, CieFieldsPastTheRecordEndAreNoRule) {
  const std::vector<uint8_t> eh_cie = {0, 0, 0, 0, 1, 'e', 'h', 0};
  auto eh = eh_frame({kFramePointer}, eh_cie);
  EXPECT_EQ(rule_at(eh, fdes_of(eh).at(0), kFdeStart).cfa, kUnsupported);
  const std::vector<uint8_t> v4_cie = {0, 0, 0, 0, 4, 'z', 'R', 'R', 'R', 'R', 'R', 0};
  eh = eh_frame({kFramePointer}, v4_cie);
  EXPECT_EQ(rule_at(eh, fdes_of(eh).at(0), kFdeStart).cfa, kUnsupported);
}

// Factored offsets that overflow int64 (data_align * offset, the negation of
// DW_CFA_GNU_negative_offset_extended) and 10-byte LEB128s wrap: a wrong rule, never
// undefined behaviour (the sanitizer build holds this).
TEST(EhFrameCfi, OverflowingOffsetsWrap) {
  // data_align = -2^62 (SLEB128), return address at offset 3 * data_align.
  std::vector<uint8_t> cie = {0, 0, 0, 0, 1, 'z', 'R', 0, 1};
  cie.insert(cie.end(), {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x40});
  cie.insert(cie.end(), {16, 1, 0x1b, 0x0c, 7, 8, 0x90, 3});
  auto eh = eh_frame({{0x2f, 6, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}}, cie);
  EXPECT_EQ(rule_at(eh, fdes_of(eh).at(0), kFdeStart).cfa, kUnsupported);
  // DW_CFA_def_cfa_offset_sf with a 10-byte SLEB128 (bit 63 set by the shift of the last
  // byte), then DW_CFA_offset_extended_sf of rbp likewise.
  eh = eh_frame({{0x13, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f,  //
                  0x11, 6,    0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x7f}});
  const Rule r = rule_at(eh, fdes_of(eh).at(0), kFdeStart);
  EXPECT_EQ(r.cfa, kCfaRsp);
  EXPECT_EQ(r.cfa_off, 8);  // -1 * data_align
  EXPECT_EQ(r.rbp, kRbpSaved);
  EXPECT_EQ(r.rbp_off, 0);  // -2^63 * -8, wrapped
}

// DW_EH_PE_indirect pointers are read from the section, and only from it.
TEST(EhFrameCfi, IndirectPointersStayInTheSection) {
  auto cie = kGccCie;
  cie[12] = 0x9b;  // indirect | pcrel | sdata4
  auto eh = eh_frame({kFramePointer}, cie);
  const uint64_t fde = fdes_of(eh).at(0);
  const uint64_t field = fde - kEhAddr + 8;  // pc_begin
  const uint64_t slot = eh.size();
  uint8_t pc[8];
  std::memcpy(pc, &kFdeStart, 8);
  eh.insert(eh.end(), pc, pc + 8);
  const uint32_t rel = static_cast<uint32_t>(slot - field);
  std::memcpy(eh.data() + field, &rel, 4);
  EXPECT_EQ(rule_at(eh, fde, kFdeStart + 1).cfa_off, 16);
  const uint32_t outside = rel + 8;  // the 8 bytes past the section's end
  std::memcpy(eh.data() + field, &outside, 4);
  EXPECT_EQ(rule_at(eh, fde, kFdeStart + 1).cfa, kUnsupported);
}

}  // namespace
}  // namespace ptprof::detail::unwind
