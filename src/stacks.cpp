#include "stacks.h"

#include <cxxabi.h>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <unwind.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <unordered_map>

#include "chrome_trace.h"
#include "ptprof/error.h"
#include "ptprof/trace.h"

#if defined(__x86_64__) && defined(__linux__)
#define PTPROF_CFI_UNWINDER 1
#endif

namespace ptprof::detail {

namespace {

std::atomic<uint64_t> g_rule_misses{0};
std::atomic<uint64_t> g_unsupported{0};
std::atomic<uint64_t> g_fallbacks{0};

// ---- _Unwind_Backtrace (reference and fallback) -------------------------------------------

struct BacktraceState {
  void** out;
  int n;
  int max;
  int skip;
};

_Unwind_Reason_Code backtrace_frame(_Unwind_Context* ctx, void* arg) {
  auto* s = static_cast<BacktraceState*>(arg);
  const uintptr_t ip = _Unwind_GetIP(ctx);
  if (ip == 0) return _URC_END_OF_STACK;
  if (s->skip > 0) {
    --s->skip;
    return _URC_NO_REASON;
  }
  if (s->n >= s->max) return _URC_END_OF_STACK;
  s->out[s->n++] = reinterpret_cast<void*>(ip);
  return _URC_NO_REASON;
}

#ifdef PTPROF_CFI_UNWINDER

// ---- Unwind rules ----------------------------------------------------------------------------
//
// What the DWARF CFI of one address says about getting to the caller, reduced to what x86-64
// code compiled by GCC/Clang uses at call sites: the CFA is rsp + off, rbp + off, or *(rbp + off)
// (stack realignment); the return address is at CFA - 8; the caller's rbp is unchanged, saved
// at CFA + off, or unknown. Anything else ends the capture there.

enum CfaKind : uint8_t { kUnsupported = 0, kOutermost, kCfaRsp, kCfaRbp, kCfaRbpDeref };
enum RbpKind : uint8_t { kRbpSame = 0, kRbpSaved, kRbpLost };

struct Rule {
  int32_t cfa_off = 0;
  int16_t rbp_off = 0;
  uint8_t cfa = kUnsupported;
  uint8_t rbp = kRbpSame;
};
static_assert(sizeof(Rule) == sizeof(uint64_t));

uint64_t pack(Rule r) {
  uint64_t v;
  std::memcpy(&v, &r, sizeof v);
  return v;
}
Rule unpack(uint64_t v) {
  Rule r;
  std::memcpy(static_cast<void*>(&r), &v, sizeof r);
  return r;
}

// Bounds-checked reading of .eh_frame data.
struct Reader {
  const uint8_t* p;
  const uint8_t* end;
  bool ok = true;

  bool has(std::size_t n) {
    if (!ok || static_cast<std::size_t>(end - p) < n) ok = false;
    return ok;
  }
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
    for (int shift = 0; has(1); shift += 7) {
      const uint8_t b = *p++;
      if (shift < 64) v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) break;
    }
    return v;
  }
  int64_t sleb() {
    int64_t v = 0;
    int shift = 0;
    uint8_t b = 0;
    while (has(1)) {
      b = *p++;
      if (shift < 64) v |= static_cast<int64_t>(b & 0x7f) << shift;
      shift += 7;
      if (!(b & 0x80)) break;
    }
    if (shift < 64 && (b & 0x40)) v |= -(int64_t{1} << shift);
    return v;
  }
  // A DW_EH_PE-encoded pointer; `datarel` is the base of DW_EH_PE_datarel (.eh_frame_hdr).
  // `deref`: follow DW_EH_PE_indirect (false where only the field's size matters).
  uint64_t encoded(uint8_t enc, uint64_t datarel = 0, bool deref = true) {
    if (enc == 0xff) return 0;  // DW_EH_PE_omit
    const uint64_t field = reinterpret_cast<uint64_t>(p);
    uint64_t v = 0;
    switch (enc & 0x0f) {
      case 0x00:
        v = fixed<uint64_t>();
        break;  // absptr
      case 0x01:
        v = uleb();
        break;
      case 0x02:
        v = fixed<uint16_t>();
        break;
      case 0x03:
        v = fixed<uint32_t>();
        break;
      case 0x04:
        v = fixed<uint64_t>();
        break;
      case 0x09:
        v = static_cast<uint64_t>(sleb());
        break;
      case 0x0a:
        v = static_cast<uint64_t>(static_cast<int64_t>(fixed<int16_t>()));
        break;
      case 0x0b:
        v = static_cast<uint64_t>(static_cast<int64_t>(fixed<int32_t>()));
        break;
      case 0x0c:
        v = static_cast<uint64_t>(fixed<int64_t>());
        break;
      default:
        ok = false;
        return 0;
    }
    switch (enc & 0x70) {
      case 0x00:
        break;
      case 0x10:
        v += field;
        break;  // pcrel
      case 0x30:
        v += datarel;
        break;  // datarel
      default:
        ok = false;
        return 0;  // textrel/funcrel/aligned: not used in .eh_frame
    }
    if ((enc & 0x80) && deref) {  // indirect
      uint64_t target;
      std::memcpy(&target, reinterpret_cast<const void*>(v), sizeof target);
      v = target;
    }
    return v;
  }
};

// The module holding `pc` and its PT_GNU_EH_FRAME (.eh_frame_hdr) segment.
struct ModuleQuery {
  uint64_t pc;
  const uint8_t* eh_frame_hdr = nullptr;
};

int find_module(dl_phdr_info* info, size_t, void* data) {
  auto* q = static_cast<ModuleQuery*>(data);
  bool inside = false;
  const uint8_t* hdr = nullptr;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    const uint64_t start = info->dlpi_addr + ph.p_vaddr;
    if (ph.p_type == PT_LOAD && q->pc >= start && q->pc < start + ph.p_memsz) inside = true;
    if (ph.p_type == PT_GNU_EH_FRAME) hdr = reinterpret_cast<const uint8_t*>(start);
  }
  if (!inside) return 0;
  q->eh_frame_hdr = hdr;
  return 1;
}

// The FDE covering `pc`, by binary search of .eh_frame_hdr's sorted table.
const uint8_t* find_fde(const uint8_t* hdr, uint64_t pc) {
  if (hdr[0] != 1) return nullptr;
  const uint8_t eh_frame_ptr_enc = hdr[1], count_enc = hdr[2], table_enc = hdr[3];
  const uint64_t base = reinterpret_cast<uint64_t>(hdr);
  Reader r{hdr + 4, hdr + 4 + 16};
  r.encoded(eh_frame_ptr_enc, base);
  if (count_enc == 0xff) return nullptr;
  const uint64_t count = r.encoded(count_enc, base);
  // DW_EH_PE_datarel | DW_EH_PE_sdata4: the only table encoding linkers write.
  if (!r.ok || table_enc != 0x3b || count == 0) return nullptr;
  const uint8_t* table = r.p;
  auto entry = [&](uint64_t i, int k) {
    int32_t v;
    std::memcpy(&v, table + i * 8 + k * 4, 4);
    return base + static_cast<int64_t>(v);
  };
  uint64_t lo = 0, hi = count;  // find the last entry with initial_loc <= pc
  if (pc < entry(0, 0)) return nullptr;
  while (hi - lo > 1) {
    const uint64_t mid = lo + (hi - lo) / 2;
    if (entry(mid, 0) <= pc) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return reinterpret_cast<const uint8_t*>(entry(lo, 1));
}

enum RegKind : uint8_t { kRegSame = 0, kRegOffset, kRegUndefined, kRegOther };
struct RegRule {
  uint8_t kind = kRegSame;
  int64_t off = 0;
};

struct CfaState {
  uint64_t cfa_reg = 7;  // rsp
  int64_t cfa_off = 8;
  const uint8_t* cfa_expr = nullptr;  // DW_CFA_def_cfa_expression
  uint64_t cfa_expr_len = 0;
  RegRule rbp;
  RegRule ra;
};

struct CieInfo {
  uint64_t code_align = 1;
  int64_t data_align = -8;
  uint64_t ra_reg = 16;
  uint8_t fde_enc = 0;
  bool has_aug_data = false;
  const uint8_t* insns = nullptr;
  const uint8_t* insns_end = nullptr;
};

constexpr uint64_t kRbpReg = 6;

// Runs CFA instructions until the location passes `target`. False: an instruction this
// unwinder does not understand (or malformed data).
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
    switch (op >> 6) {
      case 1:
        if (!advance(low * cie.code_align)) return true;
        continue;
      case 2:
        set(low, kRegOffset, static_cast<int64_t>(r.uleb()) * cie.data_align);
        continue;
      case 3:
        restore(low);
        continue;
      default:
        break;
    }
    switch (op) {
      case 0x00:
        break;      // nop
      case 0x01: {  // set_loc
        const uint64_t to = r.encoded(cie.fde_enc);
        if (to > target) return true;
        loc = to;
        break;
      }
      case 0x02:
        if (!advance(r.fixed<uint8_t>() * cie.code_align)) return true;
        break;
      case 0x03:
        if (!advance(r.fixed<uint16_t>() * cie.code_align)) return true;
        break;
      case 0x04:
        if (!advance(r.fixed<uint32_t>() * cie.code_align)) return true;
        break;
      case 0x05: {  // offset_extended
        const uint64_t reg = r.uleb();
        set(reg, kRegOffset, static_cast<int64_t>(r.uleb()) * cie.data_align);
        break;
      }
      case 0x06:
        restore(r.uleb());
        break;
      case 0x07:
        set(r.uleb(), kRegUndefined, 0);
        break;
      case 0x08:
        set(r.uleb(), kRegSame, 0);
        break;
      case 0x09: {  // register
        const uint64_t reg = r.uleb();
        r.uleb();
        set(reg, kRegOther, 0);
        break;
      }
      case 0x0a:  // remember_state
        if (nsaved == 8) return false;
        saved[nsaved++] = s;
        break;
      case 0x0b:  // restore_state: the CFA and register rules come back together
        if (nsaved == 0) return false;
        s = saved[--nsaved];
        break;
      case 0x0c:  // def_cfa
        s.cfa_reg = r.uleb();
        s.cfa_off = static_cast<int64_t>(r.uleb());
        s.cfa_expr = nullptr;
        break;
      case 0x0d:
        s.cfa_reg = r.uleb();
        s.cfa_expr = nullptr;
        break;
      case 0x0e:
        s.cfa_off = static_cast<int64_t>(r.uleb());
        break;
      case 0x0f:  // def_cfa_expression
        s.cfa_expr_len = r.uleb();
        s.cfa_expr = r.p;
        if (!r.has(s.cfa_expr_len)) return false;
        r.p += s.cfa_expr_len;
        break;
      case 0x10: {  // expression
        const uint64_t reg = r.uleb();
        const uint64_t len = r.uleb();
        if (!r.has(len)) return false;
        r.p += len;
        set(reg, kRegOther, 0);
        break;
      }
      case 0x11: {  // offset_extended_sf
        const uint64_t reg = r.uleb();
        set(reg, kRegOffset, r.sleb() * cie.data_align);
        break;
      }
      case 0x12:  // def_cfa_sf
        s.cfa_reg = r.uleb();
        s.cfa_off = r.sleb() * cie.data_align;
        s.cfa_expr = nullptr;
        break;
      case 0x13:
        s.cfa_off = r.sleb() * cie.data_align;
        break;
      case 0x14:    // val_offset
      case 0x15: {  // val_offset_sf
        const uint64_t reg = r.uleb();
        if (op == 0x14)
          r.uleb();
        else
          r.sleb();
        set(reg, kRegOther, 0);
        break;
      }
      case 0x16: {  // val_expression
        const uint64_t reg = r.uleb();
        const uint64_t len = r.uleb();
        if (!r.has(len)) return false;
        r.p += len;
        set(reg, kRegOther, 0);
        break;
      }
      case 0x2e:
        r.uleb();
        break;      // GNU_args_size
      case 0x2f: {  // GNU_negative_offset_extended
        const uint64_t reg = r.uleb();
        set(reg, kRegOffset, -static_cast<int64_t>(r.uleb()) * cie.data_align);
        break;
      }
      default:
        return false;
    }
  }
  return r.ok;
}

bool parse_cie(const uint8_t* cie, CieInfo& out) {
  Reader r{cie, cie + 12};
  uint64_t len = r.fixed<uint32_t>();
  const bool is64 = len == 0xffffffff;
  if (is64) len = r.fixed<uint64_t>();
  if (!r.ok || len == 0) return false;
  const uint8_t* end = r.p + len;
  r.end = end;
  const uint64_t id = is64 ? r.fixed<uint64_t>() : r.fixed<uint32_t>();
  if (id != 0) return false;
  const uint8_t version = r.fixed<uint8_t>();
  if (version != 1 && version != 3 && version != 4) return false;
  const char* aug = reinterpret_cast<const char*>(r.p);
  const std::size_t aug_len = strnlen(aug, static_cast<std::size_t>(end - r.p));
  if (!r.has(aug_len + 1)) return false;
  r.p += aug_len + 1;
  if (aug[0] == 'e' && aug[1] == 'h') r.p += 8;  // old GCC "eh" pointer
  if (version == 4) r.p += 2;                    // address_size, segment_selector_size
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

// Decodes the expression GCC emits for a realigned stack (CFA = *(rbp + off)).
bool rbp_deref_expr(const uint8_t* p, uint64_t len, int64_t* off) {
  Reader r{p, p + len};
  if (r.fixed<uint8_t>() != 0x76) return false;  // DW_OP_breg6
  *off = r.sleb();
  if (r.fixed<uint8_t>() != 0x06) return false;  // DW_OP_deref
  return r.ok && r.p == r.end;
}

// `key` is the address whose rule is wanted: a return address minus 1 (inside the call), or
// the exact pc of capture_stack's own frame.
Rule compute_rule(uint64_t key) {
  Rule rule;
  ModuleQuery q{key};
  dl_iterate_phdr(find_module, &q);
  if (!q.eh_frame_hdr) return rule;
  const uint8_t* fde = find_fde(q.eh_frame_hdr, key);
  if (!fde) return rule;

  Reader r{fde, fde + 12};
  uint64_t len = r.fixed<uint32_t>();
  const bool is64 = len == 0xffffffff;
  if (is64) len = r.fixed<uint64_t>();
  if (!r.ok || len == 0) return rule;
  const uint8_t* end = r.p + len;
  r.end = end;
  const uint8_t* cie_field = r.p;
  const uint64_t cie_off = is64 ? r.fixed<uint64_t>() : r.fixed<uint32_t>();
  if (!r.ok || cie_off == 0) return rule;
  CieInfo cie;
  if (!parse_cie(cie_field - cie_off, cie)) return rule;
  const uint64_t pc_begin = r.encoded(cie.fde_enc);
  const uint64_t pc_range = r.encoded(cie.fde_enc & 0x0f);
  if (!r.ok || key < pc_begin || key - pc_begin >= pc_range) return rule;
  if (cie.has_aug_data) {
    const uint64_t n = r.uleb();
    if (!r.has(n)) return rule;
    r.p += n;
  }

  CfaState initial;
  uint64_t loc = 0;
  if (!run_cfa(Reader{cie.insns, cie.insns_end}, cie, loc, UINT64_MAX, initial, initial))
    return rule;
  CfaState s = initial;
  loc = pc_begin;
  if (!run_cfa(Reader{r.p, end}, cie, loc, key, s, initial)) return rule;

  if (s.ra.kind == kRegUndefined) {  // _start, clone: the outermost frame
    rule.cfa = kOutermost;
    return rule;
  }
  if (s.ra.kind != kRegOffset || s.ra.off != -8) return rule;
  int64_t cfa_off = s.cfa_off;
  uint8_t cfa = kUnsupported;
  if (s.cfa_expr) {
    if (rbp_deref_expr(s.cfa_expr, s.cfa_expr_len, &cfa_off)) cfa = kCfaRbpDeref;
  } else if (s.cfa_reg == 7) {
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

// ---- Rule cache ------------------------------------------------------------------------------
//
// Process-wide open addressing table, insert-only: a slot's rule is written before its key is
// published (release), and never changes after, so lookups need no lock. Inserts take a mutex
// that guards nothing but the table (the rule is computed outside it, so the loader lock that
// dl_iterate_phdr takes is never held with it). A full probe window leaves the address
// uncached (computed per capture, correct but slow); 32K slots hold the few thousand distinct
// return addresses of a training loop many times over.
//
// Rules are kept for the life of the process: after a dlclose, code loaded at the same address
// would meet stale rules. Every read is still bounds-checked against the thread's stack, so the
// worst case is a wrong or short stack, never a bad read.

constexpr std::size_t kSlots = std::size_t{1} << 15;
constexpr int kMaxProbes = 32;

struct Slot {
  std::atomic<uint64_t> key{0};
  std::atomic<uint64_t> rule{0};
};

std::atomic<Slot*> g_slots{nullptr};
std::once_flag g_slots_once;
std::mutex g_insert_mutex;

Slot* slots() {
  Slot* s = g_slots.load(std::memory_order_acquire);
  if (s) return s;
  // Never freed: other threads may be capturing while the process exits.
  std::call_once(g_slots_once, [] { g_slots.store(new Slot[kSlots], std::memory_order_release); });
  return g_slots.load(std::memory_order_acquire);
}

std::size_t slot_of(uint64_t key) {
  return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ull) >> (64 - 15));
}

bool cached_rule(const Slot* table, uint64_t key, Rule* out) {
  std::size_t i = slot_of(key);
  for (int p = 0; p < kMaxProbes; ++p, i = (i + 1) & (kSlots - 1)) {
    const uint64_t k = table[i].key.load(std::memory_order_acquire);
    if (k == key) {
      *out = unpack(table[i].rule.load(std::memory_order_relaxed));
      return true;
    }
    if (k == 0) return false;
  }
  return false;
}

void insert_rule(Slot* table, uint64_t key, Rule rule) {
  std::lock_guard<std::mutex> lock(g_insert_mutex);
  std::size_t i = slot_of(key);
  for (int p = 0; p < kMaxProbes; ++p, i = (i + 1) & (kSlots - 1)) {
    const uint64_t k = table[i].key.load(std::memory_order_relaxed);
    if (k == key) return;
    if (k == 0) {
      table[i].rule.store(pack(rule), std::memory_order_relaxed);
      table[i].key.store(key, std::memory_order_release);
      return;
    }
  }
}

Rule rule_for(Slot* table, uint64_t key) {
  Rule r;
  if (cached_rule(table, key, &r)) return r;
  g_rule_misses.fetch_add(1, std::memory_order_relaxed);
  r = compute_rule(key);
  if (r.cfa == kUnsupported) g_unsupported.fetch_add(1, std::memory_order_relaxed);
  insert_rule(table, key, r);
  return r;
}

// ---- Per-thread stack bounds -----------------------------------------------------------------

struct StackBounds {
  uint64_t lo;
  uint64_t hi;
  bool init;
  bool ok;
};
thread_local StackBounds t_bounds;  // trivial type: no TLS init guard on the hot path

const StackBounds& stack_bounds() {
  StackBounds& b = t_bounds;
  if (!b.init) {
    b.init = true;
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
      void* addr = nullptr;
      std::size_t size = 0;
      if (pthread_attr_getstack(&attr, &addr, &size) == 0 && addr) {
        b.lo = reinterpret_cast<uint64_t>(addr);
        b.hi = b.lo + size;
        b.ok = true;
      }
      pthread_attr_destroy(&attr);
    }
  }
  return b;
}

// A plain load (no memcpy call an AddressSanitizer build would intercept); stack slots are
// 8-byte aligned.
__attribute__((no_sanitize("address"))) uint64_t load_word(uint64_t addr) {
  return *reinterpret_cast<const uint64_t*>(addr);
}

#endif  // PTPROF_CFI_UNWINDER

}  // namespace

// Reads of other frames' stack slots are deliberate, so AddressSanitizer must not instrument
// them (a saved register next to a redzone is not a bug).
__attribute__((noinline, no_sanitize("address"))) int capture_stack(void** out, int max_depth) {
  if (max_depth <= 0) return 0;
#ifdef PTPROF_CFI_UNWINDER
  uint64_t rip, rsp, rbp;
  // This function's own registers at this point; its CFI at `rip` describes this very frame.
  asm volatile(
      "leaq 0(%%rip), %0\n\t"
      "movq %%rsp, %1\n\t"
      "movq %%rbp, %2"
      : "=r"(rip), "=r"(rsp), "=r"(rbp));
  const StackBounds& b = stack_bounds();
  if (!b.ok || rsp < b.lo || rsp >= b.hi) {
    g_fallbacks.fetch_add(1, std::memory_order_relaxed);
    BacktraceState s{out, 0, max_depth, 1};  // skip: this function's own frame
    _Unwind_Backtrace(backtrace_frame, &s);
    return s.n;
  }
  Slot* table = slots();
  bool rbp_known = true;
  uint64_t key = rip;
  int n = 0;
  while (n < max_depth) {
    const Rule r = rule_for(table, key);
    uint64_t cfa;
    switch (r.cfa) {
      case kCfaRsp:
        cfa = rsp + r.cfa_off;
        break;
      case kCfaRbp:
        if (!rbp_known) return n;
        cfa = rbp + r.cfa_off;
        break;
      case kCfaRbpDeref: {
        const uint64_t at = rbp + r.cfa_off;
        if (!rbp_known || at < rsp || at + 8 > b.hi) return n;
        cfa = load_word(at);
        break;
      }
      default:  // outermost frame, or no rule
        return n;
    }
    // The caller's frame lies above this one, on this thread's stack: every read below is
    // inside [rsp, hi), which is mapped.
    if (cfa < rsp + 8 || cfa > b.hi) return n;
    const uint64_t ra = load_word(cfa - 8);
    if (r.rbp == kRbpSaved) {
      const uint64_t at = cfa + r.rbp_off;
      if (at < rsp || at + 8 > b.hi) return n;
      rbp = load_word(at);
    } else if (r.rbp == kRbpLost) {
      rbp_known = false;
    }
    rsp = cfa;
    if (ra == 0) return n;
    out[n++] = reinterpret_cast<void*>(ra);
    key = ra - 1;  // the call instruction, which may be the last of its function
  }
  return n;
#else
  g_fallbacks.fetch_add(1, std::memory_order_relaxed);
  BacktraceState s{out, 0, max_depth, 1};
  _Unwind_Backtrace(backtrace_frame, &s);
  return s.n;
#endif
}

__attribute__((noinline)) int capture_stack_reference(void** out, int max_depth) {
  if (max_depth <= 0) return 0;
  // The first frame _Unwind_Backtrace reports is this function's (called here, not in a helper
  // that a tail call could remove), so skipping one starts at the caller.
  BacktraceState s{out, 0, max_depth, 1};
  _Unwind_Backtrace(backtrace_frame, &s);
  return s.n;
}

void warm_up_stack_capture() {
#ifdef PTPROF_CFI_UNWINDER
  slots();
  stack_bounds();
#endif
}

StackCaptureStats stack_capture_stats() {
  StackCaptureStats s;
  s.rule_misses = g_rule_misses.load(std::memory_order_relaxed);
  s.unsupported = g_unsupported.load(std::memory_order_relaxed);
  s.fallbacks = g_fallbacks.load(std::memory_order_relaxed);
  return s;
}

// ---- Names -----------------------------------------------------------------------------------

namespace {

bool ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

// If s[i..] is the keyword "operator", the index just past its symbol ("operator<<" -> after
// "<<", "operator()" -> after "()"); else i. Keeps '<' '>' '(' of operators out of the bracket
// counting.
std::size_t skip_operator(std::string_view s, std::size_t i) {
  if (s.compare(i, 8, "operator") != 0 || (i > 0 && ident_char(s[i - 1]))) return i;
  std::size_t j = i + 8;
  if (j < s.size() && ident_char(s[j])) return i;  // "operators", "operator_x"
  if (s.compare(j, 2, "()") == 0 || s.compare(j, 2, "[]") == 0) return j + 2;
  std::size_t k = j;
  while (k < s.size() && k < j + 3 && s[k] && std::strchr("<>=!+-*/%^&|~,", s[k])) ++k;
  return k;
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::string collapse_templates(std::string_view s) {
  std::string out;
  int depth = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (depth == 0) {
      const std::size_t j = skip_operator(s, i);
      if (j != i) {
        out.append(s.substr(i, j - i));
        i = j - 1;
        continue;
      }
    }
    const char c = s[i];
    if (c == '<') {
      if (depth++ == 0) out += "<...>";
    } else if (c == '>' && depth > 0) {
      --depth;
    } else if (depth == 0) {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::string simplify_function_name(std::string_view in) {
  std::string s(in);
  // "foo(int) [clone .cold]", "[clone .constprop.0] [clone .isra.0]"
  for (std::size_t p; ends_with(s, "]") && (p = s.rfind(" [clone ")) != std::string::npos;)
    s.resize(p);
  // Qualifiers after the parameter list.
  {
    std::string t = s;
    for (bool again = true; again;) {
      again = false;
      for (std::string_view q : {" const", " volatile", " &&", " &", " noexcept"}) {
        if (ends_with(t, q)) {
          t.resize(t.size() - q.size());
          again = true;
        }
      }
    }
    if (!t.empty() && t.back() == ')') s = t;
  }
  // The parameter list: the parenthesis matching the final ')'.
  if (!s.empty() && s.back() == ')') {
    int depth = 0;
    for (std::size_t i = s.size(); i-- > 0;) {
      if (s[i] == ')') {
        ++depth;
      } else if (s[i] == '(' && --depth == 0) {
        if (i > 0) s.resize(i);
        break;
      }
    }
  }
  // The return type ends at the last space outside brackets before the name ("at::Tensor&
  // at::native::foo"). Not a space after ')' ("foo() const::{lambda()#1}") or within an
  // operator's name ("operator new", "operator<< <char>", "operator double").
  std::size_t start = 0;
  int depth = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (depth == 0 && skip_operator(s, i) != i) break;
    const char c = s[i];
    if (c == '<' || c == '(' || c == '[' || c == '{') {
      ++depth;
    } else if (c == '>' || c == ')' || c == ']' || c == '}') {
      if (depth > 0) --depth;
    } else if (c == ' ' && depth == 0 && i > 0 && s[i - 1] != ')') {
      start = i + 1;
    }
  }
  if (start > 0 && start < s.size()) s.erase(0, start);
  constexpr std::size_t kLong = 100;
  if (s.size() > kLong) s = collapse_templates(s);
  return s;
}

namespace {

std::string demangle(const char* name) {
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status != 0 || !d) return name;
  std::string out(d);
  std::free(d);
  return out;
}

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

// A module's function symbols from its ELF .symtab and .dynsym together (stripped libraries,
// libtorch's among them, keep only .dynsym), sorted by address (file virtual addresses). The
// file stays mapped read-only for the names, so only the pages read are loaded.
struct ElfSymbols {
  struct Func {
    uint64_t addr;
    uint64_t size;
    uint32_t name;   // offset in its table's strtab
    uint32_t table;  // index in strtabs
  };
  struct StrTab {
    const char* data;
    std::size_t size;
  };
  void* map = nullptr;
  std::size_t map_size = 0;
  std::vector<StrTab> strtabs;
  std::vector<Func> funcs;

  ~ElfSymbols() {
    if (map) ::munmap(map, map_size);
  }

  void load(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    struct stat st;
    if (::fstat(fd, &st) != 0 || st.st_size < static_cast<off_t>(sizeof(Elf64_Ehdr))) {
      ::close(fd);
      return;
    }
    void* m = ::mmap(nullptr, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    ::close(fd);
    if (m == MAP_FAILED) return;
    map = m;
    map_size = st.st_size;
    const auto* base = static_cast<const uint8_t*>(m);
    const auto* eh = reinterpret_cast<const Elf64_Ehdr*>(base);
    if (std::memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_shentsize != sizeof(Elf64_Shdr) ||
        eh->e_shoff + uint64_t{eh->e_shnum} * sizeof(Elf64_Shdr) > map_size)
      return;
    const auto* sh = reinterpret_cast<const Elf64_Shdr*>(base + eh->e_shoff);
    for (int i = 0; i < eh->e_shnum; ++i) {
      if ((sh[i].sh_type != SHT_SYMTAB && sh[i].sh_type != SHT_DYNSYM) ||
          sh[i].sh_link >= eh->e_shnum)
        continue;
      const Elf64_Shdr& str = sh[sh[i].sh_link];
      if (sh[i].sh_offset + sh[i].sh_size > map_size || str.sh_offset + str.sh_size > map_size)
        continue;
      const auto table = static_cast<uint32_t>(strtabs.size());
      strtabs.push_back({reinterpret_cast<const char*>(base + str.sh_offset), str.sh_size});
      const auto* syms = reinterpret_cast<const Elf64_Sym*>(base + sh[i].sh_offset);
      const std::size_t n = sh[i].sh_size / sizeof(Elf64_Sym);
      for (std::size_t k = 0; k < n; ++k) {
        const Elf64_Sym& y = syms[k];
        const int type = ELF64_ST_TYPE(y.st_info);
        if ((type != STT_FUNC && type != STT_GNU_IFUNC) || y.st_shndx == SHN_UNDEF ||
            y.st_value == 0 || y.st_name >= str.sh_size)
          continue;
        funcs.push_back({y.st_value, y.st_size, y.st_name, table});
      }
    }
    std::sort(funcs.begin(), funcs.end(),
              [](const Func& a, const Func& b) { return a.addr < b.addr; });
  }

  const char* lookup(uint64_t vaddr) const {
    auto it = std::upper_bound(funcs.begin(), funcs.end(), vaddr,
                               [](uint64_t v, const Func& f) { return v < f.addr; });
    if (it == funcs.begin()) return nullptr;
    // Several symbols can start at the nearest address (aliases, and a function in both
    // tables); any that spans vaddr will do.
    const uint64_t start = std::prev(it)->addr;
    while (it != funcs.begin() && (--it)->addr == start) {
      if (vaddr < it->addr + std::max<uint64_t>(it->size, 1)) {
        const StrTab& t = strtabs[it->table];
        const std::size_t room = t.size - it->name;
        const char* name = t.data + it->name;
        return strnlen(name, room) < room ? name : nullptr;
      }
    }
    return nullptr;
  }
};

std::string basename_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string self_exe() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, n) : std::string();
}

// A loaded segment: [lo, hi) in memory, of the module at `path` loaded at `bias`.
struct Segment {
  uintptr_t lo, hi, bias;
  std::string path;  // "/proc/self/exe" for the main program
};

int add_segments(dl_phdr_info* info, std::size_t, void* arg) {
  auto* out = static_cast<std::vector<Segment>*>(arg);
  const bool main_program = info->dlpi_name == nullptr || info->dlpi_name[0] == '\0';
  const std::string path = main_program ? "/proc/self/exe" : info->dlpi_name;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    const uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
    out->push_back({lo, lo + ph.p_memsz, info->dlpi_addr, path});
  }
  return 0;
}

}  // namespace

// Process-wide, shared by every session: a module's symbols are read once per process and
// an address named once. Modules are found through dl_iterate_phdr rather than dladdr, whose
// glibc implementation scans the whole dynamic symbol table of the module on every call
// (libtorch_cpu's is large: the first window of a with_stack session spent most of its close
// there).
struct Symbolizer::Impl {
  std::mutex mu;
  std::unordered_map<uintptr_t, std::string> frames;
  std::unordered_map<std::string, std::unique_ptr<ElfSymbols>> modules;
  std::vector<Segment> segments;  // sorted by lo; re-read when an address is in none

  const ElfSymbols& module(const std::string& path) {
    auto& m = modules[path];
    if (!m) {
      m = std::make_unique<ElfSymbols>();
      m->load(path);
    }
    return *m;
  }

  const Segment* segment_of(uintptr_t at) const {
    auto it = std::upper_bound(segments.begin(), segments.end(), at,
                               [](uintptr_t a, const Segment& s) { return a < s.lo; });
    if (it == segments.begin()) return nullptr;
    --it;
    return at < it->hi ? &*it : nullptr;
  }

  const Segment* find_segment(uintptr_t at) {
    if (const Segment* s = segment_of(at)) return s;
    // A module loaded since the last read (dlopen); reading the list costs microseconds.
    segments.clear();
    dl_iterate_phdr(&add_segments, &segments);
    std::sort(segments.begin(), segments.end(),
              [](const Segment& a, const Segment& b) { return a.lo < b.lo; });
    return segment_of(at);
  }

  std::string compute(uintptr_t addr) {
    if (addr == 0) return "0x0";
    const uintptr_t at = addr - 1;  // inside the call instruction
    const Segment* seg = find_segment(at);
    if (seg == nullptr) return hex(addr);
    if (const char* name = module(seg->path).lookup(at - seg->bias))
      return simplify_function_name(demangle(name));
    const std::string base = basename_of(seg->path == "/proc/self/exe" ? self_exe() : seg->path);
    return (base.empty() ? std::string("?") : base) + "+" + hex(addr - seg->bias);
  }
};

namespace {
Symbolizer::Impl& shared_symbolizer() {
  // Never destroyed: a session's background writer may symbolize during static destruction.
  static auto* impl = new Symbolizer::Impl();
  return *impl;
}
}  // namespace

Symbolizer::Symbolizer() : impl_(&shared_symbolizer()) {}
Symbolizer::~Symbolizer() = default;

std::string Symbolizer::symbolize(const void* addr) {
  const auto a = reinterpret_cast<uintptr_t>(addr);
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->frames.find(a);
  if (it == impl_->frames.end()) it = impl_->frames.emplace(a, impl_->compute(a)).first;
  return it->second;
}

std::size_t Symbolizer::cached() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->frames.size();
}

std::vector<std::string> Symbolizer::symbolize(const void* const* addrs, int n) {
  std::vector<std::string> out;
  out.reserve(n > 0 ? n : 0);
  for (int i = 0; i < n; ++i) out.push_back(symbolize(addrs[i]));
  return out;
}

// ---- Collapsed stacks ------------------------------------------------------------------------

namespace {

void append_frame(std::string& out, std::string_view frame) {
  for (char c : frame) out += (c == ' ' || c == ';' || c == '\t' || c == '\n') ? '_' : c;
}

}  // namespace

std::string collapsed_stacks(const Trace& t, const std::string& metric) {
  const bool cpu = metric == "self_cpu_time_total";
  const bool device = metric == "self_cuda_time_total" || metric == "self_device_time_total";
  if (!cpu && !device)
    throw Error("ptprof: export_stacks: unknown metric \"" + metric +
                "\"; valid metrics: self_cpu_time_total, self_cuda_time_total "
                "(also spelled self_device_time_total)");
  std::unordered_map<uint64_t, int64_t> device_ns;  // External id -> GPU time it launched
  if (device) {
    for (const Event& e : t.events) {
      if ((e.kind == EventKind::Kernel || e.kind == EventKind::Memcpy ||
           e.kind == EventKind::Memset) &&
          e.external_id != 0 && e.duration_ns > 0)
        device_ns[e.external_id] += e.duration_ns;
    }
  }
  std::map<std::string, int64_t> merged;
  std::string key;
  for (const Event& e : t.events) {
    if (e.stack < 0 || static_cast<std::size_t>(e.stack) >= t.stacks.size()) continue;
    int64_t ns = 0;
    if (cpu) {
      ns = e.self_ns;
    } else if (e.external_id != 0) {
      auto it = device_ns.find(e.external_id);
      if (it != device_ns.end()) ns = it->second;
    }
    if (ns <= 0) continue;
    key.clear();
    for (const std::string& frame : t.stacks[e.stack]) {
      append_frame(key, frame);
      key += ';';
    }
    append_frame(key, e.name);
    merged[key] += ns;
  }
  std::string out;
  for (const auto& [stack, ns] : merged) {
    const int64_t us = ns / 1000;
    if (us <= 0) continue;
    out += stack;
    out += ' ';
    out += std::to_string(us);
    out += '\n';
  }
  return out;
}

// ---- SVG flame graph -------------------------------------------------------------------------

std::string xml_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      switch (c) {
        case '&':
          out += "&amp;";
          break;
        case '<':
          out += "&lt;";
          break;
        case '>':
          out += "&gt;";
          break;
        case '"':
          out += "&quot;";
          break;
        case '\'':
          out += "&apos;";
          break;
        default:
          // XML 1.0 allows no other control characters, not even escaped.
          out += (c < 0x20 && c != '\t' && c != '\n' && c != '\r') ? '?' : static_cast<char>(c);
      }
      ++i;
      continue;
    }
    // A well-formed UTF-8 sequence is copied, any other byte becomes U+FFFD; so does a
    // U+FFFE or U+FFFF, well-formed but not characters of XML.
    const int len = c >= 0xc2 && c <= 0xdf   ? 2
                    : c >= 0xe0 && c <= 0xef ? 3
                    : c >= 0xf0 && c <= 0xf4 ? 4
                                             : 0;
    bool ok = len > 0 && i + len <= s.size();
    for (int k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(s[i + k]) & 0xc0) == 0x80;
    const auto c1 = ok ? static_cast<unsigned char>(s[i + 1]) : 0;
    if (ok && len == 3) {
      ok = !(c == 0xe0 && c1 < 0xa0) && !(c == 0xed && c1 >= 0xa0);  // overlong, surrogates
    } else if (ok && len == 4) {
      ok = !(c == 0xf0 && c1 < 0x90) && !(c == 0xf4 && c1 >= 0x90);
    }
    if (!ok) {
      out += "\xef\xbf\xbd";
      ++i;
      continue;
    }
    if (c == 0xef && c1 == 0xbf && static_cast<unsigned char>(s[i + 2]) >= 0xbe) {
      out += "\xef\xbf\xbd";
    } else {
      out.append(s.substr(i, len));
    }
    i += len;
  }
  return out;
}

namespace {

struct FlameNode {
  int64_t value = 0;
  std::map<std::string, std::unique_ptr<FlameNode>> children;  // sorted, as flamegraph.pl
};

// The first `max_chars` code points of `s` (UTF-8), so a clipped label stays valid text.
std::string clip(std::string_view s, std::size_t max_chars) {
  std::size_t i = 0, chars = 0;
  while (i < s.size() && chars < max_chars) {
    ++i;
    while (i < s.size() && (static_cast<unsigned char>(s[i]) & 0xc0) == 0x80) ++i;
    ++chars;
  }
  return std::string(s.substr(0, i));
}

std::size_t code_points(std::string_view s) {
  std::size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xc0) != 0x80;
  return n;
}

uint32_t fnv1a(std::string_view s) {
  uint32_t h = 2166136261u;
  for (char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 16777619u;
  }
  return h;
}

// Coordinates and percentages with `decimals` decimals, whatever the process locale.
std::string fmt(int decimals, double v) {
  return format_fixed(v, decimals);
}

struct FlameLayout {
  static constexpr double kWidth = 1200, kPad = 10, kFrame = 16, kTop = 50, kBottom = 10;
  static constexpr double kFontSize = 12, kCharWidth = 0.59 * kFontSize, kMinWidth = 0.1;
  int64_t total = 0;
  int depth = 0;  // deepest level (0: "all")
  double height = 0;

  double x(int64_t offset) const {
    return kPad + (kWidth - 2 * kPad) * static_cast<double>(offset) / static_cast<double>(total);
  }
  double y(int level) const { return height - kBottom - (level + 1) * kFrame; }
};

int tree_depth(const FlameNode& n) {
  int d = 0;
  for (const auto& [name, child] : n.children) d = std::max(d, 1 + tree_depth(*child));
  return d;
}

void render_frame(std::string& out, const FlameLayout& L, const std::string& name,
                  const FlameNode& node, int level, int64_t offset) {
  const double x0 = L.x(offset), w = L.x(offset + node.value) - x0;
  if (w < FlameLayout::kMinWidth) return;  // and so are all its children
  const double pct = 100.0 * static_cast<double>(node.value) / static_cast<double>(L.total);
  // flamegraph.pl's "hot" palette, from the name's hash so a function keeps its colour.
  const uint32_t h = fnv1a(name);
  const int r = 205 + static_cast<int>(50 * ((h & 0xff) / 255.0));
  const int g = static_cast<int>(230 * (((h >> 8) & 0xff) / 255.0));
  const int b = static_cast<int>(55 * (((h >> 16) & 0xff) / 255.0));
  out += "<g class=\"frame\"><title>";
  out += xml_escape(name);
  out += " (" + std::to_string(node.value) + " us, " + fmt(2, pct) + "%)</title>";
  out += "<rect x=\"" + fmt(2, x0) + "\" y=\"" + fmt(1, L.y(level)) + "\" width=\"" + fmt(2, w) +
         "\" height=\"" + fmt(1, FlameLayout::kFrame - 1) + "\" fill=\"rgb(" + std::to_string(r) +
         "," + std::to_string(g) + "," + std::to_string(b) + ")\" rx=\"2\" ry=\"2\"/>";
  const auto fit = static_cast<std::size_t>((w - 6) / FlameLayout::kCharWidth);
  if (fit >= 3) {
    const std::string label = code_points(name) <= fit ? name : clip(name, fit - 2) + "..";
    out += "<text x=\"" + fmt(2, x0 + 3) + "\" y=\"" +
           fmt(1, L.y(level) + FlameLayout::kFrame - 4.5) + "\">" + xml_escape(label) + "</text>";
  }
  out += "</g>\n";
  int64_t child_offset = offset;
  for (const auto& [child_name, child] : node.children) {
    render_frame(out, L, child_name, *child, level + 1, child_offset);
    child_offset += child->value;
  }
}

}  // namespace

std::string flamegraph_svg(const std::string& collapsed, const std::string& title) {
  FlameNode root;
  std::size_t pos = 0;
  while (pos < collapsed.size()) {
    std::size_t eol = collapsed.find('\n', pos);
    if (eol == std::string::npos) eol = collapsed.size();
    std::string_view line(collapsed.data() + pos, eol - pos);
    pos = eol + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const auto space = line.rfind(' ');
    if (space == std::string_view::npos) continue;
    char* end = nullptr;
    const std::string num(line.substr(space + 1));
    const long long v = std::strtoll(num.c_str(), &end, 10);
    if (num.empty() || *end != '\0' || v <= 0) continue;
    root.value += v;
    FlameNode* node = &root;
    std::string_view stack = line.substr(0, space);
    while (true) {
      const auto semi = stack.find(';');
      const std::string frame(stack.substr(0, semi));
      auto& child = node->children[frame];
      if (!child) child = std::make_unique<FlameNode>();
      child->value += v;
      node = child.get();
      if (semi == std::string_view::npos) break;
      stack.remove_prefix(semi + 1);
    }
  }

  FlameLayout L;
  L.total = root.value;
  L.depth = tree_depth(root);
  L.height = FlameLayout::kTop + (L.depth + 1) * FlameLayout::kFrame + FlameLayout::kBottom;
  std::string out;
  out += "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n";
  out += "<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
         fmt(0, FlameLayout::kWidth) + "\" height=\"" + fmt(0, L.height) + "\" viewBox=\"0 0 " +
         fmt(0, FlameLayout::kWidth) + " " + fmt(0, L.height) + "\">\n";
  out +=
      "<style>text{font-family:Verdana,sans-serif;font-size:12px;fill:#000}"
      ".title{font-size:17px;text-anchor:middle}.frame:hover rect{stroke:#000;stroke-width:0.5}"
      "</style>\n";
  out += "<text class=\"title\" x=\"" + fmt(0, FlameLayout::kWidth / 2) + "\" y=\"24\">" +
         xml_escape(title) + "</text>\n";
  if (L.total == 0) {
    out += "<text x=\"" + fmt(0, FlameLayout::kPad) + "\" y=\"44\">No samples</text>\n";
  } else {
    out += "<text x=\"" + fmt(0, FlameLayout::kPad) + "\" y=\"44\">Total " +
           std::to_string(L.total) + " us; width is time, stacks grow upwards</text>\n";
    render_frame(out, L, "all", root, 0, 0);
  }
  out += "</svg>\n";
  return out;
}

}  // namespace ptprof::detail

namespace ptprof {

void Trace::export_stacks(const std::string& path, const std::string& metric) const {
  std::string text = detail::collapsed_stacks(*this, metric);  // validates the metric
  const bool any = std::any_of(events.begin(), events.end(), [this](const Event& e) {
    return e.stack >= 0 && static_cast<std::size_t>(e.stack) < stacks.size();
  });
  if (!any)
    throw Error("ptprof: export_stacks(" + path +
                "): the trace has no stacks; record it with Options::with_stack = true");
  const bool svg = path.size() >= 4 && path.compare(path.size() - 4, 4, ".svg") == 0;
  if (svg) {
    std::string title = "ptprof flame graph: " + metric;
    if (!worker_name.empty()) title += " (" + worker_name + ")";
    text = detail::flamegraph_svg(text, title);
  }
  detail::write_file_atomically(path,
                                [&](detail::Sink& sink) { sink.write(text.data(), text.size()); });
}

}  // namespace ptprof
