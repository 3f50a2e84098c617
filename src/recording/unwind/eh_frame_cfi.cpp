#include "recording/unwind/eh_frame_cfi.h"

#include <cstring>

namespace ptprof::detail::unwind {

namespace {

// DWARF pointer encodings (DW_EH_PE_*): the low nibble is the format, bits 4-6 what it is
// relative to.
constexpr uint8_t DW_EH_PE_absptr = 0x00;
constexpr uint8_t DW_EH_PE_uleb128 = 0x01;
constexpr uint8_t DW_EH_PE_udata2 = 0x02;
constexpr uint8_t DW_EH_PE_udata4 = 0x03;
constexpr uint8_t DW_EH_PE_udata8 = 0x04;
constexpr uint8_t DW_EH_PE_sleb128 = 0x09;
constexpr uint8_t DW_EH_PE_sdata2 = 0x0a;
constexpr uint8_t DW_EH_PE_sdata4 = 0x0b;
constexpr uint8_t DW_EH_PE_sdata8 = 0x0c;
constexpr uint8_t DW_EH_PE_pcrel = 0x10;
constexpr uint8_t DW_EH_PE_datarel = 0x30;
constexpr uint8_t DW_EH_PE_indirect = 0x80;
constexpr uint8_t DW_EH_PE_omit = 0xff;

// Call frame instructions (DW_CFA_*). The first three keep their operand in the low 6 bits.
constexpr uint8_t DW_CFA_advance_loc = 0x40;
constexpr uint8_t DW_CFA_offset = 0x80;
constexpr uint8_t DW_CFA_restore = 0xc0;
constexpr uint8_t DW_CFA_nop = 0x00;
constexpr uint8_t DW_CFA_set_loc = 0x01;
constexpr uint8_t DW_CFA_advance_loc1 = 0x02;
constexpr uint8_t DW_CFA_advance_loc2 = 0x03;
constexpr uint8_t DW_CFA_advance_loc4 = 0x04;
constexpr uint8_t DW_CFA_offset_extended = 0x05;
constexpr uint8_t DW_CFA_restore_extended = 0x06;
constexpr uint8_t DW_CFA_undefined = 0x07;
constexpr uint8_t DW_CFA_same_value = 0x08;
constexpr uint8_t DW_CFA_register = 0x09;
constexpr uint8_t DW_CFA_remember_state = 0x0a;
constexpr uint8_t DW_CFA_restore_state = 0x0b;
constexpr uint8_t DW_CFA_def_cfa = 0x0c;
constexpr uint8_t DW_CFA_def_cfa_register = 0x0d;
constexpr uint8_t DW_CFA_def_cfa_offset = 0x0e;
constexpr uint8_t DW_CFA_def_cfa_expression = 0x0f;
constexpr uint8_t DW_CFA_expression = 0x10;
constexpr uint8_t DW_CFA_offset_extended_sf = 0x11;
constexpr uint8_t DW_CFA_def_cfa_sf = 0x12;
constexpr uint8_t DW_CFA_def_cfa_offset_sf = 0x13;
constexpr uint8_t DW_CFA_val_offset = 0x14;
constexpr uint8_t DW_CFA_val_offset_sf = 0x15;
constexpr uint8_t DW_CFA_val_expression = 0x16;
constexpr uint8_t DW_CFA_GNU_args_size = 0x2e;
constexpr uint8_t DW_CFA_GNU_negative_offset_extended = 0x2f;

// DWARF expression operations, in the one expression understood (rbp_deref_expr).
constexpr uint8_t DW_OP_deref = 0x06;
constexpr uint8_t DW_OP_breg6 = 0x76;  // rbp + offset

// x86-64 DWARF register numbers.
constexpr uint64_t kRbpReg = 6;
constexpr uint64_t kRspReg = 7;
constexpr uint64_t kRaReg = 16;  // the return address column

// Factored offsets wrap as the machine would: malformed CFI gives a wrong rule, never
// undefined behaviour.
int64_t times(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

// Bounds-checked reading of bytes of `sec`, in [p, end) (end never past the section's).
struct Reader {
  const Section* sec;
  const uint8_t* p;
  const uint8_t* end;
  bool ok = true;

  bool has(uint64_t n) {
    if (!ok || static_cast<uint64_t>(end - p) < n) ok = false;
    return ok;
  }
  void skip(uint64_t n) {
    if (has(n)) p += n;
  }
  uint64_t addr() const { return sec->addr + static_cast<uint64_t>(p - sec->data); }
  template <typename T>
  T fixed() {
    T v{};
    if (!has(sizeof(T))) return v;
    std::memcpy(&v, p, sizeof(T));
    p += sizeof(T);
    return v;
  }
  uint64_t uleb() {
    uint64_t v = 0;
    for (int shift = 0; has(1); shift += shift < 64 ? 7 : 0) {
      const uint8_t b = *p++;
      if (shift < 64) v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) break;
    }
    return v;
  }
  int64_t sleb() {
    uint64_t v = 0;
    int shift = 0;
    uint8_t b = 0;
    while (has(1)) {
      b = *p++;
      if (shift < 64) v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (shift < 64) shift += 7;
      if (!(b & 0x80)) break;
    }
    if (shift < 64 && (b & 0x40)) v |= ~uint64_t{0} << shift;  // sign-extend
    return static_cast<int64_t>(v);
  }
  // A DW_EH_PE-encoded pointer; `datarel` is the base of DW_EH_PE_datarel (.eh_frame_hdr).
  // `deref`: follow DW_EH_PE_indirect (false where only the field's size matters); the
  // pointer it leads to must lie in the section too (linkers never use it for FDEs).
  uint64_t encoded(uint8_t enc, uint64_t datarel = 0, bool deref = true) {
    if (enc == DW_EH_PE_omit) return 0;
    const uint64_t field = addr();
    uint64_t v = 0;
    switch (enc & 0x0f) {
      case DW_EH_PE_absptr:
      case DW_EH_PE_udata8:
        v = fixed<uint64_t>();
        break;
      case DW_EH_PE_uleb128:
        v = uleb();
        break;
      case DW_EH_PE_udata2:
        v = fixed<uint16_t>();
        break;
      case DW_EH_PE_udata4:
        v = fixed<uint32_t>();
        break;
      case DW_EH_PE_sleb128:
        v = static_cast<uint64_t>(sleb());
        break;
      case DW_EH_PE_sdata2:
        v = static_cast<uint64_t>(static_cast<int64_t>(fixed<int16_t>()));
        break;
      case DW_EH_PE_sdata4:
        v = static_cast<uint64_t>(static_cast<int64_t>(fixed<int32_t>()));
        break;
      case DW_EH_PE_sdata8:
        v = static_cast<uint64_t>(fixed<int64_t>());
        break;
      default:
        ok = false;
        return 0;
    }
    switch (enc & 0x70) {
      case DW_EH_PE_absptr:
        break;
      case DW_EH_PE_pcrel:
        v += field;
        break;
      case DW_EH_PE_datarel:
        v += datarel;
        break;
      default:
        ok = false;
        return 0;  // textrel/funcrel/aligned: not used in .eh_frame
    }
    if ((enc & DW_EH_PE_indirect) && deref) {
      if (!sec->contains(v, sizeof(uint64_t))) {
        ok = false;
        return 0;
      }
      uint64_t target;
      std::memcpy(&target, sec->data + (v - sec->addr), sizeof target);
      v = target;
    }
    return v;
  }
};

enum RegKind : uint8_t { kRegSame = 0, kRegOffset, kRegUndefined, kRegOther };
struct RegRule {
  uint8_t kind = kRegSame;
  int64_t off = 0;
};

struct CfaState {
  uint64_t cfa_reg = kRspReg;
  int64_t cfa_off = 8;
  const uint8_t* cfa_expr = nullptr;  // DW_CFA_def_cfa_expression
  uint64_t cfa_expr_len = 0;
  RegRule rbp;
  RegRule ra;
};

struct CieInfo {
  uint64_t code_align = 1;
  int64_t data_align = -8;
  uint64_t ra_reg = kRaReg;
  uint8_t fde_enc = 0;
  bool has_aug_data = false;
  const uint8_t* insns = nullptr;
  const uint8_t* insns_end = nullptr;
};

// Runs CFA instructions until the location passes `target`. False: an instruction this
// unwinder does not understand (or malformed data). Every instruction consumes a byte or more,
// so it ends.
bool run_cfa(Reader r, const CieInfo& cie, uint64_t& loc, uint64_t target, CfaState& s,
             const CfaState& initial) {
  CfaState saved[8];
  int nsaved = 0;
  auto reg_rule = [&](uint64_t reg) -> RegRule* {
    if (reg == kRbpReg) return &s.rbp;
    if (reg == cie.ra_reg) return &s.ra;
    return nullptr;
  };
  auto set = [&](uint64_t reg, uint8_t kind, int64_t off) {
    if (RegRule* rr = reg_rule(reg)) *rr = {kind, off};
  };
  auto restore = [&](uint64_t reg) {
    if (reg == kRbpReg) s.rbp = initial.rbp;
    if (reg == cie.ra_reg) s.ra = initial.ra;
  };
  auto advance = [&](uint64_t delta) {
    if (loc + delta > target) return false;
    loc += delta;
    return true;
  };
  while (r.ok && r.p < r.end) {
    const uint8_t op = *r.p++;
    const uint8_t low = op & 0x3f;
    switch (op & 0xc0) {
      case DW_CFA_advance_loc:
        if (!advance(low * cie.code_align)) return true;
        continue;
      case DW_CFA_offset:
        set(low, kRegOffset, times(static_cast<int64_t>(r.uleb()), cie.data_align));
        continue;
      case DW_CFA_restore:
        restore(low);
        continue;
      default:
        break;
    }
    switch (op) {
      case DW_CFA_nop:
        break;
      case DW_CFA_set_loc: {
        const uint64_t to = r.encoded(cie.fde_enc);
        if (to > target) return true;
        loc = to;
        break;
      }
      case DW_CFA_advance_loc1:
        if (!advance(r.fixed<uint8_t>() * cie.code_align)) return true;
        break;
      case DW_CFA_advance_loc2:
        if (!advance(r.fixed<uint16_t>() * cie.code_align)) return true;
        break;
      case DW_CFA_advance_loc4:
        if (!advance(r.fixed<uint32_t>() * cie.code_align)) return true;
        break;
      case DW_CFA_offset_extended: {
        const uint64_t reg = r.uleb();
        set(reg, kRegOffset, times(static_cast<int64_t>(r.uleb()), cie.data_align));
        break;
      }
      case DW_CFA_restore_extended:
        restore(r.uleb());
        break;
      case DW_CFA_undefined:
        set(r.uleb(), kRegUndefined, 0);
        break;
      case DW_CFA_same_value:
        set(r.uleb(), kRegSame, 0);
        break;
      case DW_CFA_register: {
        const uint64_t reg = r.uleb();
        r.uleb();
        set(reg, kRegOther, 0);
        break;
      }
      case DW_CFA_remember_state:
        if (nsaved == 8) return false;
        saved[nsaved++] = s;
        break;
      case DW_CFA_restore_state:  // the CFA and register rules come back together
        if (nsaved == 0) return false;
        s = saved[--nsaved];
        break;
      case DW_CFA_def_cfa:
        s.cfa_reg = r.uleb();
        s.cfa_off = static_cast<int64_t>(r.uleb());
        s.cfa_expr = nullptr;
        break;
      case DW_CFA_def_cfa_register:
        s.cfa_reg = r.uleb();
        s.cfa_expr = nullptr;
        break;
      case DW_CFA_def_cfa_offset:
        s.cfa_off = static_cast<int64_t>(r.uleb());
        break;
      case DW_CFA_def_cfa_expression:
        s.cfa_expr_len = r.uleb();
        s.cfa_expr = r.p;
        if (!r.has(s.cfa_expr_len)) return false;
        r.p += s.cfa_expr_len;
        break;
      case DW_CFA_expression:
      case DW_CFA_val_expression: {  // a rule this unwinder cannot follow: skipped
        const uint64_t reg = r.uleb();
        const uint64_t len = r.uleb();
        if (!r.has(len)) return false;
        r.p += len;
        set(reg, kRegOther, 0);
        break;
      }
      case DW_CFA_offset_extended_sf: {
        const uint64_t reg = r.uleb();
        set(reg, kRegOffset, times(r.sleb(), cie.data_align));
        break;
      }
      case DW_CFA_def_cfa_sf:
        s.cfa_reg = r.uleb();
        s.cfa_off = times(r.sleb(), cie.data_align);
        s.cfa_expr = nullptr;
        break;
      case DW_CFA_def_cfa_offset_sf:
        s.cfa_off = times(r.sleb(), cie.data_align);
        break;
      case DW_CFA_val_offset:
      case DW_CFA_val_offset_sf: {
        const uint64_t reg = r.uleb();
        if (op == DW_CFA_val_offset)
          r.uleb();
        else
          r.sleb();
        set(reg, kRegOther, 0);
        break;
      }
      case DW_CFA_GNU_args_size:
        r.uleb();
        break;
      case DW_CFA_GNU_negative_offset_extended: {
        const uint64_t reg = r.uleb();
        set(reg, kRegOffset, times(static_cast<int64_t>(0 - r.uleb()), cie.data_align));
        break;
      }
      default:
        return false;
    }
  }
  return r.ok;
}

// A CIE or FDE record at `at`: its length field read, `r` limited to the rest of the record.
bool enter_record(Reader& r, bool* is64) {
  uint64_t len = r.fixed<uint32_t>();
  *is64 = len == 0xffffffff;
  if (*is64) len = r.fixed<uint64_t>();
  if (!r.ok || len == 0 || !r.has(len)) return false;
  r.end = r.p + len;
  return true;
}

bool parse_cie(const Section& eh, const uint8_t* at, CieInfo& out) {
  Reader r{&eh, at, eh.data + eh.size};
  bool is64;
  if (!enter_record(r, &is64)) return false;
  const uint8_t* end = r.end;
  const uint64_t id = is64 ? r.fixed<uint64_t>() : r.fixed<uint32_t>();
  if (!r.ok || id != 0) return false;
  const uint8_t version = r.fixed<uint8_t>();
  if (version != 1 && version != 3 && version != 4) return false;
  const char* aug = reinterpret_cast<const char*>(r.p);
  const std::size_t aug_len = strnlen(aug, static_cast<std::size_t>(end - r.p));
  if (!r.has(aug_len + 1)) return false;
  r.p += aug_len + 1;
  if (aug[0] == 'e' && aug[1] == 'h') r.skip(8);  // old GCC "eh" pointer
  if (version == 4) r.skip(2);                    // address_size, segment_selector_size
  out.code_align = r.uleb();
  out.data_align = r.sleb();
  out.ra_reg = version == 1 ? r.fixed<uint8_t>() : r.uleb();
  if (aug[0] == 'z') {
    out.has_aug_data = true;
    const uint64_t n = r.uleb();
    if (!r.has(n)) return false;
    const uint8_t* data_end = r.p + n;
    for (const char* a = aug + 1; *a; ++a) {
      if (*a == 'R') {
        out.fde_enc = r.fixed<uint8_t>();
      } else if (*a == 'P') {
        r.encoded(r.fixed<uint8_t>(), 0, /*deref=*/false);  // personality: not needed
      } else if (*a == 'L') {
        r.fixed<uint8_t>();
      } else if (*a != 'S' && *a != 'B') {
        break;  // unknown augmentation: its data is skipped by length below
      }
    }
    r.p = data_end;
  } else if (aug[0] != '\0' && !(aug[0] == 'e' && aug[1] == 'h')) {
    return false;
  }
  out.insns = r.p;
  out.insns_end = end;
  return r.ok;
}

// An FDE's CIE, the pcs it covers, and its CFA instructions.
struct FdeInfo {
  CieInfo cie;
  uint64_t pc_begin = 0;
  uint64_t pc_range = 0;
  const uint8_t* insns = nullptr;
  const uint8_t* insns_end = nullptr;
};

bool parse_fde(const Section& eh, uint64_t fde, FdeInfo& out) {
  if (fde < eh.addr || fde - eh.addr >= eh.size) return false;
  Reader r{&eh, eh.data + (fde - eh.addr), eh.data + eh.size};
  bool is64;
  if (!enter_record(r, &is64)) return false;
  // The CIE pointer: its distance back from this field.
  const uint8_t* cie_field = r.p;
  const uint64_t cie_off = is64 ? r.fixed<uint64_t>() : r.fixed<uint32_t>();
  if (!r.ok || cie_off == 0 || cie_off > static_cast<uint64_t>(cie_field - eh.data)) return false;
  if (!parse_cie(eh, cie_field - cie_off, out.cie)) return false;
  out.pc_begin = r.encoded(out.cie.fde_enc);
  out.pc_range = r.encoded(out.cie.fde_enc & 0x0f);
  if (out.cie.has_aug_data) r.skip(r.uleb());
  if (!r.ok) return false;
  out.insns = r.p;
  out.insns_end = r.end;
  return true;
}

// Decodes the expression GCC emits for a realigned stack (CFA = *(rbp + off)).
bool rbp_deref_expr(const Section& eh, const uint8_t* p, uint64_t len, int64_t* off) {
  Reader r{&eh, p, p + len};
  if (r.fixed<uint8_t>() != DW_OP_breg6) return false;
  *off = r.sleb();
  if (r.fixed<uint8_t>() != DW_OP_deref) return false;
  return r.ok && r.p == r.end;
}

}  // namespace

uint64_t eh_frame_start(const Section& hdr) {
  if (hdr.size < 4 || hdr.data[0] != 1) return 0;  // version 1
  Reader r{&hdr, hdr.data + 4, hdr.data + hdr.size};
  const uint64_t start = r.encoded(hdr.data[1], hdr.addr);
  return r.ok ? start : 0;
}

uint64_t find_fde(const Section& hdr, uint64_t pc) {
  if (hdr.size < 4 || hdr.data[0] != 1) return 0;  // version 1
  const uint8_t eh_frame_ptr_enc = hdr.data[1], count_enc = hdr.data[2], table_enc = hdr.data[3];
  const uint64_t base = hdr.addr;
  Reader r{&hdr, hdr.data + 4, hdr.data + hdr.size};
  r.encoded(eh_frame_ptr_enc, base);
  if (count_enc == DW_EH_PE_omit) return 0;
  const uint64_t count = r.encoded(count_enc, base);
  // The only table encoding linkers write; entries are (initial_loc, fde) pairs.
  if (!r.ok || table_enc != (DW_EH_PE_datarel | DW_EH_PE_sdata4) || count == 0) return 0;
  if (count > static_cast<uint64_t>(r.end - r.p) / 8) return 0;
  const uint8_t* table = r.p;
  auto entry = [&](uint64_t i, int k) {
    int32_t v;
    std::memcpy(&v, table + i * 8 + k * 4, 4);
    return base + static_cast<int64_t>(v);
  };
  uint64_t lo = 0, hi = count;  // find the last entry with initial_loc <= pc
  if (pc < entry(0, 0)) return 0;
  while (hi - lo > 1) {
    const uint64_t mid = lo + (hi - lo) / 2;
    if (entry(mid, 0) <= pc) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return entry(lo, 1);
}

bool fde_pc_range(const Section& eh, uint64_t fde, uint64_t* begin, uint64_t* end) {
  FdeInfo f;
  if (!parse_fde(eh, fde, f)) return false;
  *begin = f.pc_begin;
  *end = f.pc_begin + f.pc_range;
  return true;
}

// `pc` is the address whose rule is wanted: a return address minus 1 (inside the call), or
// the exact pc of capture_stack's own frame.
Rule fde_rule(const Section& eh, uint64_t fde, uint64_t pc) {
  Rule rule;
  FdeInfo f;
  if (!parse_fde(eh, fde, f)) return rule;
  if (pc < f.pc_begin || pc - f.pc_begin >= f.pc_range) return rule;

  const CieInfo& cie = f.cie;
  CfaState initial;
  uint64_t loc = 0;
  if (!run_cfa(Reader{&eh, cie.insns, cie.insns_end}, cie, loc, UINT64_MAX, initial, initial))
    return rule;
  CfaState s = initial;
  loc = f.pc_begin;
  if (!run_cfa(Reader{&eh, f.insns, f.insns_end}, cie, loc, pc, s, initial)) return rule;

  if (s.ra.kind == kRegUndefined) {  // _start, clone: the outermost frame
    rule.cfa = kOutermost;
    return rule;
  }
  if (s.ra.kind != kRegOffset || s.ra.off != -8) return rule;
  int64_t cfa_off = s.cfa_off;
  uint8_t cfa = kUnsupported;
  if (s.cfa_expr) {
    if (rbp_deref_expr(eh, s.cfa_expr, s.cfa_expr_len, &cfa_off)) cfa = kCfaRbpDeref;
  } else if (s.cfa_reg == kRspReg) {
    cfa = kCfaRsp;
  } else if (s.cfa_reg == kRbpReg) {
    cfa = kCfaRbp;
  }
  if (cfa == kUnsupported || cfa_off < INT32_MIN || cfa_off > INT32_MAX) return rule;
  if (s.rbp.kind == kRegOffset) {
    if (s.rbp.off < INT16_MIN || s.rbp.off > INT16_MAX) return rule;
    rule.rbp = kRbpSaved;
    rule.rbp_off = static_cast<int16_t>(s.rbp.off);
  } else if (s.rbp.kind != kRegSame) {
    rule.rbp = kRbpLost;  // only matters if a caller's CFA needs it; then the capture ends
  }
  rule.cfa = cfa;
  rule.cfa_off = static_cast<int32_t>(cfa_off);
  return rule;
}

Rule eh_frame_rule(const Section& hdr, const Section& eh, uint64_t pc) {
  const uint64_t fde = find_fde(hdr, pc);
  return fde ? fde_rule(eh, fde, pc) : Rule{};
}

}  // namespace ptprof::detail::unwind
