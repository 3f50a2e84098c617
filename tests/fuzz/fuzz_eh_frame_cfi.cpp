// libFuzzer target: the .eh_frame CFI interpreter that with_stack's unwinder runs on a rule-cache
// miss (src/recording/unwind/eh_frame_cfi.h), on arbitrary bytes. The input is an .eh_frame
// section; every FDE in it is interpreted at the first, middle and last pc it covers, then
// again through an .eh_frame_hdr table built from them as a linker builds it, and the input's
// first bytes are read as an .eh_frame_hdr of their own. Nothing may read outside the bytes
// given, loop, or overflow.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "recording/unwind/eh_frame_cfi.h"

using ptprof::detail::unwind::Section;
namespace cfi = ptprof::detail::unwind;

namespace {

// Where the sections are said to be loaded: high, as a shared library's are.
constexpr uint64_t kEhFrameAddr = 0x7f0000100000;
constexpr uint64_t kHdrAddr = 0x7f00000f0000;
constexpr int kMaxRecords = 512;

void put32(std::vector<uint8_t>& v, uint32_t x) {
  uint8_t b[4];
  std::memcpy(b, &x, 4);
  v.insert(v.end(), b, b + 4);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  // Copied, so that AddressSanitizer sees the exact end of the section.
  std::vector<uint8_t> bytes(data, data + size);
  const Section eh{bytes.data(), bytes.size(), kEhFrameAddr};

  // The records, as a linker walks them: (pc_begin, FDE address) of each FDE.
  std::vector<std::pair<uint64_t, uint64_t>> table;
  uint64_t off = 0;
  for (int records = 0; records < kMaxRecords && off + 4 <= size; ++records) {
    uint32_t len32;
    std::memcpy(&len32, data + off, 4);
    if (len32 == 0) break;  // the terminator
    uint64_t next;
    if (len32 == 0xffffffff) {
      if (off + 12 > size) break;
      uint64_t len64;
      std::memcpy(&len64, data + off + 4, 8);
      if (len64 > size) break;
      next = off + 12 + len64;
    } else {
      next = off + 4 + len32;
    }
    uint64_t begin = 0, end = 0;
    const uint64_t fde = kEhFrameAddr + off;
    if (cfi::fde_pc_range(eh, fde, &begin, &end)) {
      table.emplace_back(begin, fde);
      const uint64_t last = end > begin ? end - 1 : begin;
      for (uint64_t pc : {begin, begin + (last - begin) / 2, last})
        (void)cfi::fde_rule(eh, fde, pc);
    }
    off = next;
  }

  // The same FDEs through .eh_frame_hdr: version 1, eh_frame_ptr pcrel|sdata4, fde_count
  // udata4, table datarel|sdata4, sorted by pc.
  std::sort(table.begin(), table.end());
  std::vector<uint8_t> hdr = {1, 0x1b, 0x03, 0x3b};
  put32(hdr, static_cast<uint32_t>(kEhFrameAddr - (kHdrAddr + 4)));
  put32(hdr, static_cast<uint32_t>(table.size()));
  for (const auto& [pc, fde] : table) {
    put32(hdr, static_cast<uint32_t>(pc - kHdrAddr));
    put32(hdr, static_cast<uint32_t>(fde - kHdrAddr));
  }
  const Section hdr_section{hdr.data(), hdr.size(), kHdrAddr};
  (void)cfi::eh_frame_start(hdr_section);
  for (const auto& entry : table) (void)cfi::eh_frame_rule(hdr_section, eh, entry.first);

  // The input's own first bytes as an .eh_frame_hdr, at a pc taken from them too.
  const std::size_t raw_size = std::min<std::size_t>(size, 64);
  std::vector<uint8_t> raw(data, data + raw_size);
  const Section raw_hdr{raw.data(), raw.size(), kEhFrameAddr};
  uint64_t pc = kEhFrameAddr;
  if (size >= 16) std::memcpy(&pc, data + 8, 8);
  (void)cfi::eh_frame_start(raw_hdr);
  (void)cfi::eh_frame_rule(raw_hdr, eh, pc);
  return 0;
}
