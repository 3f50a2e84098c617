#include "recording/stack_capture.h"

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
#include <memory>
#include <mutex>
#include <new>
#include <unordered_map>

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

// A thread's own small copy of the rules it used last. The shared table is 512 KiB, probed at
// a hash of each frame's address: a cache miss per frame once the training step has pushed it
// out of the cache. A stack's frames repeat from op to op, and 8 KiB of them stay close. Two
// ways per set: direct-mapped, pairs of frames that many ops' stacks hold and that hash to one
// slot evicted each other on every capture. In bench_step's training step (callgrind, 1837
// captures) the shared table was looked up 1850 times direct-mapped, 798 times with two ways
// (2048 entries would make it 204, at 32 KiB of static TLS in every thread of the process).
struct LocalRule {
  uint64_t key;
  Rule rule;  // as it is used, not packed: read on every frame
};
constexpr int kLocalRuleBits = 9;
// No TLS init guard (a constructor would add one): key 0, which no frame has, marks it empty.
thread_local LocalRule t_rules[1 << kLocalRuleBits];
thread_local uint64_t t_shared_captures = 0;  // captures that took a parent's frames

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

#ifdef PTPROF_CFI_UNWINDER
namespace {

// One captured frame with the unwinder's state right after it: enough to recognise the same
// frame in a later capture and to unwind on from it.
struct MemoFrame {
  uint64_t ra;
  uint64_t cfa;
  uint64_t rbp;
  uint64_t rbp_known;
};

// A capture remembered for the ops nested in it (see StackMemo).
struct MemoLevel {
  uint64_t id = 0;          // the op's; 0: nothing remembered
  uint64_t live_above = 0;  // frames whose CFA is above this address stay live while it is open
  int n = 0;
  bool cut = false;  // stopped at max_depth, not at the end of the stack
};

}  // namespace
#endif

class StackMemo {
 public:
  static constexpr uint32_t kLevels = 32;
#ifdef PTPROF_CFI_UNWINDER
  explicit StackMemo(int max_depth) : max_depth(max_depth) {}
  const int max_depth;
  MemoLevel levels[kLevels];
  std::unique_ptr<MemoFrame[]> frames;  // kLevels * max_depth, level by level
#endif
};

StackMemo* new_stack_memo(int max_depth) {
#ifdef PTPROF_CFI_UNWINDER
  auto* m = new (std::nothrow) StackMemo(max_depth);
  if (!m) return nullptr;
  m->frames.reset(new (std::nothrow) MemoFrame[StackMemo::kLevels * max_depth]);
  if (!m->frames) {
    delete m;
    return nullptr;
  }
  return m;
#else
  (void)max_depth;
  return nullptr;
#endif
}

void delete_stack_memo(StackMemo* memo) {
  delete memo;
}

namespace {

// _Unwind_Backtrace from the function this is inlined into, its own frame left out: the
// fallback of the entry points below.
__attribute__((always_inline)) inline int backtrace_from_caller(void** out, int max_depth) {
  g_fallbacks.fetch_add(1, std::memory_order_relaxed);
  BacktraceState s{out, 0, max_depth, 1};
  _Unwind_Backtrace(backtrace_frame, &s);
  return s.n;
}

}  // namespace

#ifdef PTPROF_CFI_UNWINDER
namespace {

// The unwinder, inlined into each entry point so that the registers it starts from are that
// function's own (its CFI at `rip` describes its frame). With `own`, every frame is also kept
// there with its state; with `parent` (the capture of an op this one is nested in), unwinding
// stops at the first frame both share among the parent's live ones, and the parent's frames
// from there on are taken as they are: below the parent's RecordFunction the stacks differ,
// above it the frames are the same live frames, their return addresses and saved registers
// unchanged, so unwinding them again would give the same result.
__attribute__((always_inline, no_sanitize("address"))) inline int unwind(
    uint64_t rip, uint64_t rsp, uint64_t rbp, void** out, int max_depth, MemoLevel* own,
    MemoFrame* own_frames, const MemoLevel* parent, const MemoFrame* parent_frames,
    uint64_t owner) {
  const StackBounds& b = stack_bounds();
  if (!b.ok || rsp < b.lo || rsp >= b.hi) return backtrace_from_caller(out, max_depth);
  // Kept in registers: the stores into `out` and `own_frames` below could alias them.
  const uint64_t lo = b.lo;
  const uint64_t hi = b.hi;
  // A parent whose RecordFunction is not above us is not a caller of ours.
  if (parent && parent->live_above <= rsp) parent = nullptr;
  const uint64_t live_above = parent ? parent->live_above : ~uint64_t{0};
  const int parent_n = parent ? parent->n : 0;
  const bool parent_cut = parent && parent->cut;
  Slot* table = slots();
  LocalRule* local = t_rules;
  bool rbp_known = true;
  uint64_t key = rip;
  int n = 0;
  int pi = 0;  // the parent's first frame not below the current CFA
  bool cut = true;
  while (n < max_depth) {
    LocalRule* set = local + ((key * 0x9E3779B97F4A7C15ull) >> (64 - kLocalRuleBits) & ~1ull);
    Rule r;
    if (set[0].key == key) {
      r = set[0].rule;
    } else if (set[1].key == key) {
      r = set[1].rule;
    } else {
      r = rule_for(table, key);
      set[1] = set[0];
      set[0] = LocalRule{key, r};
    }
    uint64_t cfa;
    bool ok = true;
    switch (r.cfa) {
      case kCfaRsp:
        cfa = rsp + r.cfa_off;
        break;
      case kCfaRbp:
        ok = rbp_known;
        cfa = rbp + r.cfa_off;
        break;
      case kCfaRbpDeref: {
        const uint64_t at = rbp + r.cfa_off;
        ok = rbp_known && at >= rsp && at + 8 <= hi;
        cfa = ok ? load_word(at) : 0;
        break;
      }
      default:  // outermost frame, or no rule
        ok = false;
        cfa = 0;
    }
    // The caller's frame lies above this one, on this thread's stack: every read below is
    // inside [rsp, hi), which is mapped.
    if (!ok || cfa < rsp + 8 || cfa > hi) {
      cut = false;
      break;
    }
    const uint64_t ra = load_word(cfa - 8);
    if (r.rbp == kRbpSaved) {
      const uint64_t at = cfa + r.rbp_off;
      if (at < rsp || at + 8 > hi) {
        cut = false;
        break;
      }
      rbp = load_word(at);
    } else if (r.rbp == kRbpLost) {
      rbp_known = false;
    }
    rsp = cfa;
    if (ra == 0) {
      cut = false;
      break;
    }
    out[n] = reinterpret_cast<void*>(ra);
    if (own_frames) own_frames[n] = MemoFrame{ra, cfa, rbp, rbp_known};
    ++n;
    key = ra - 1;  // the call instruction, which may be the last of its function
    if (parent && cfa > live_above) {
      while (pi < parent_n && parent_frames[pi].cfa < cfa) ++pi;
      if (pi == parent_n) {
        parent = nullptr;
        continue;
      }
      const MemoFrame& f = parent_frames[pi];
      if (f.cfa != cfa || f.ra != ra || f.rbp_known != rbp_known || (rbp_known && f.rbp != rbp))
        continue;
      // From here on the stack is the parent's.
      ++t_shared_captures;
      const int take = std::min(parent_n - pi - 1, max_depth - n);
      for (int i = 0; i < take; ++i) {
        const MemoFrame& pf = parent_frames[pi + 1 + i];
        out[n + i] = reinterpret_cast<void*>(pf.ra);
        if (own_frames) own_frames[n + i] = pf;
      }
      n += take;
      if (n == max_depth || !parent_cut) {
        cut = n == max_depth || parent_cut;
        break;
      }
      // The parent's capture stopped at its own max_depth before the stack ended, and this
      // one is not as deep yet: unwind on from the parent's last frame.
      const MemoFrame& last = parent_frames[parent_n - 1];
      rsp = last.cfa;
      key = last.ra - 1;
      rbp = last.rbp;
      rbp_known = last.rbp_known != 0;
      parent = nullptr;
    }
  }
  if (own) {
    own->n = n;
    own->cut = cut;
    own->live_above = owner >= lo && owner < hi ? owner : ~uint64_t{0};
  }
  return n;
}

}  // namespace
#endif  // PTPROF_CFI_UNWINDER

// Reads of other frames' stack slots are deliberate, so AddressSanitizer must not instrument
// them (a saved register next to a redzone is not a bug).
__attribute__((noinline, no_sanitize("address"))) int capture_stack(void** out, int max_depth) {
  if (max_depth <= 0) return 0;
#ifdef PTPROF_CFI_UNWINDER
  UnwindStart here;
  unwind_start_here(&here);
  return unwind(here.rip, here.rsp, here.rbp, out, max_depth, nullptr, nullptr, nullptr, nullptr,
                0);
#else
  return backtrace_from_caller(out, max_depth);
#endif
}

__attribute__((noinline, no_sanitize("address"))) int capture_stack_nested(
    void** out, int max_depth, StackMemo* memo, const NestedOp& op, const UnwindStart* from) {
  if (max_depth <= 0) return 0;
#ifdef PTPROF_CFI_UNWINDER
  UnwindStart here;
  unwind_start_here(&here);
  // `from` is a caller's, so its frame lies above this one's on the same stack.
  if (from && from->rip != 0 && from->rsp > here.rsp) here = *from;
  MemoLevel* own = nullptr;
  MemoFrame* own_frames = nullptr;
  const MemoLevel* parent = nullptr;
  const MemoFrame* parent_frames = nullptr;
  if (memo && max_depth <= memo->max_depth && op.level < StackMemo::kLevels && op.id != 0) {
    own = &memo->levels[op.level];
    own->id = 0;  // until it is complete
    own_frames = memo->frames.get() + op.level * memo->max_depth;
    if (op.level > 0 && op.parent_id != 0 && memo->levels[op.level - 1].id == op.parent_id) {
      parent = &memo->levels[op.level - 1];
      parent_frames = own_frames - memo->max_depth;
    }
  }
  const int n = unwind(here.rip, here.rsp, here.rbp, out, max_depth, own, own_frames, parent,
                       parent_frames, reinterpret_cast<uint64_t>(op.owner));
  if (own) own->id = op.id;
  return n;
#else
  (void)memo;
  (void)op;
  (void)from;
  return backtrace_from_caller(out, max_depth);
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

uint64_t shared_stack_captures_on_this_thread() {
#ifdef PTPROF_CFI_UNWINDER
  return t_shared_captures;
#else
  return 0;
#endif
}

StackCaptureStats stack_capture_stats() {
  StackCaptureStats s;
  s.rule_misses = g_rule_misses.load(std::memory_order_relaxed);
  s.unsupported = g_unsupported.load(std::memory_order_relaxed);
  s.fallbacks = g_fallbacks.load(std::memory_order_relaxed);
  return s;
}

}  // namespace ptprof::detail
