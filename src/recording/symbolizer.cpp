#include "recording/symbolizer.h"

#include <cxxabi.h>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace ptprof::detail {

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

}  // namespace ptprof::detail
