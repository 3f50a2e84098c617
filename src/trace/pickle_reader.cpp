#include "trace/pickle_reader.h"

#include <cmath>
#include <cstring>
#include <unordered_map>
#include <utility>

namespace ptprof::detail {

const PickleNode* PickleNode::get(std::string_view key) const {
  if (kind != Kind::kDict) return nullptr;
  for (std::size_t k = items.size(); k >= 2; k -= 2) {
    const PickleNode* name = items[k - 2];
    if (name->kind == Kind::kStr && name->s == key) return items[k - 1];
  }
  return nullptr;
}

namespace {

using Kind = PickleNode::Kind;

std::string opcode_name(uint8_t op) {
  if (op >= 0x20 && op < 0x7f) return std::string("'") + static_cast<char>(op) + "'";
  static const char kHex[] = "0123456789abcdef";
  return std::string("0x") + kHex[op >> 4] + kHex[op & 15];
}

}  // namespace

class PickleParser {
 public:
  explicit PickleParser(std::string bytes) : doc_(std::make_unique<PickleDocument>()) {
    doc_->bytes_ = std::move(bytes);
    in_ = doc_->bytes_;
  }

  StatusOr<std::unique_ptr<PickleDocument>> run() {
    while (true) {
      if (pos_ >= in_.size()) {
        op_at_ = pos_;
        return fail("the pickle ends without its STOP opcode");
      }
      op_at_ = pos_;
      const uint8_t op = static_cast<uint8_t>(in_[pos_++]);
      if (op == '.') {
        if (stack_.size() != 1 || !marks_.empty())
          return fail("STOP with " + std::to_string(stack_.size()) + " values on the stack and " +
                      std::to_string(marks_.size()) + " open marks (expected one value)");
        doc_->root_ = stack_.back();
        return std::move(doc_);
      }
      if (!step(op)) return Status(StatusCode::kInvalidArgument, error_);
    }
  }

 private:
  // The error of the opcode being read; false, so that `return fail(...)` ends step().
  bool fail_at(std::size_t at, const std::string& what) {
    error_ = "byte " + std::to_string(at) + ": " + what;
    return false;
  }
  Status fail(const std::string& what) {
    fail_at(op_at_, what);
    return Status(StatusCode::kInvalidArgument, error_);
  }
  bool bad(const std::string& what) { return fail_at(op_at_, what); }

  bool take(std::size_t n, std::string_view* out, const char* what) {
    if (n > in_.size() - pos_)
      return bad(std::string(what) + " needs " + std::to_string(n) + " bytes, " +
                 std::to_string(in_.size() - pos_) + " left");
    *out = in_.substr(pos_, n);
    pos_ += n;
    return true;
  }
  // A little-endian unsigned integer of n <= 8 bytes.
  bool uint_le(std::size_t n, uint64_t* v, const char* what) {
    std::string_view b;
    if (!take(n, &b, what)) return false;
    *v = 0;
    for (std::size_t k = 0; k < n; ++k) *v |= static_cast<uint64_t>(static_cast<uint8_t>(b[k])) << (8 * k);
    return true;
  }

  PickleNode* make(Kind kind) {
    doc_->nodes_.emplace_back();
    PickleNode* n = &doc_->nodes_.back();
    n->kind = kind;
    return n;
  }
  bool push(const PickleNode* n) {
    stack_.push_back(n);
    return true;
  }
  bool pop(const PickleNode** n, const char* op) {
    if (stack_.empty() || (!marks_.empty() && stack_.size() == marks_.back()))
      return bad(std::string(op) + " on an empty stack");
    *n = stack_.back();
    stack_.pop_back();
    return true;
  }
  // The items above the last mark, which is removed.
  bool pop_mark(std::vector<const PickleNode*>* items, const char* op) {
    if (marks_.empty()) return bad(std::string(op) + " without a MARK");
    const std::size_t m = marks_.back();
    marks_.pop_back();
    items->assign(stack_.begin() + static_cast<std::ptrdiff_t>(m), stack_.end());
    stack_.resize(m);
    return true;
  }
  // A container the stack's top must be, for an opcode that adds to it. Only lists and dicts
  // this pickle made are mutable; nodes are the document's own, so the cast is sound.
  bool top_of(Kind kind, PickleNode** out, const char* op) {
    if (stack_.empty() || (!marks_.empty() && stack_.size() == marks_.back()))
      return bad(std::string(op) + " with nothing to add to");
    const PickleNode* t = stack_.back();
    if (t->kind != kind)
      return bad(std::string(op) + " on a value that is not a " +
                 (kind == Kind::kList ? "list" : "dict"));
    *out = const_cast<PickleNode*>(t);
    return true;
  }

  bool integer(int64_t v) {
    PickleNode* n = make(Kind::kInt);
    n->i = v;
    return push(n);
  }
  // LONG1/LONG4: two's complement, little-endian. Beyond 64 bits: its nearest double.
  bool long_bytes(std::string_view b) {
    if (b.empty()) return integer(0);
    const bool negative = (static_cast<uint8_t>(b.back()) & 0x80) != 0;
    bool fits = b.size() <= 8;
    if (!fits) {
      // Wider encodings of a 64-bit value: the extra bytes are all sign.
      fits = true;
      const uint8_t sign = negative ? 0xff : 0x00;
      for (std::size_t k = 8; k < b.size(); ++k) fits &= static_cast<uint8_t>(b[k]) == sign;
      fits &= ((static_cast<uint8_t>(b[7]) & 0x80) != 0) == negative;
    }
    if (fits) {
      uint64_t u = negative ? ~uint64_t{0} : 0;
      for (std::size_t k = 0; k < b.size() && k < 8; ++k) {
        u &= ~(uint64_t{0xff} << (8 * k));
        u |= static_cast<uint64_t>(static_cast<uint8_t>(b[k])) << (8 * k);
      }
      int64_t v;
      std::memcpy(&v, &u, sizeof v);
      return integer(v);
    }
    double v = 0;
    for (std::size_t k = b.size(); k-- > 0;) {
      const uint8_t byte = static_cast<uint8_t>(b[k]);
      v = v * 256 + (negative ? static_cast<uint8_t>(~byte) : byte);
    }
    if (negative) v = -v - 1;
    PickleNode* n = make(Kind::kFloat);
    n->f = v;
    return push(n);
  }
  bool text(Kind kind, std::size_t len_bytes, const char* what) {
    uint64_t len;
    if (!uint_le(len_bytes, &len, what)) return false;
    if (len > in_.size() - pos_)
      return bad(std::string(what) + " of " + std::to_string(len) + " bytes, " +
                 std::to_string(in_.size() - pos_) + " left");
    PickleNode* n = make(kind);
    n->s = in_.substr(pos_, static_cast<std::size_t>(len));
    pos_ += static_cast<std::size_t>(len);
    return push(n);
  }
  bool memo_put(uint64_t index) {
    if (stack_.empty() || (!marks_.empty() && stack_.size() == marks_.back()))
      return bad("memo store of an empty stack");
    memo_[index] = stack_.back();
    return true;
  }
  bool memo_get(uint64_t index) {
    const auto it = memo_.find(index);
    if (it == memo_.end()) return bad("memo index " + std::to_string(index) + " was never stored");
    return push(it->second);
  }
  bool tuple_of(std::vector<const PickleNode*> items) {
    PickleNode* n = make(Kind::kTuple);
    n->items = std::move(items);
    return push(n);
  }
  bool tuple_n(std::size_t count, const char* op) {
    std::vector<const PickleNode*> items(count);
    for (std::size_t k = count; k-- > 0;)
      if (!pop(&items[k], op)) return false;
    return tuple_of(std::move(items));
  }
  bool global(std::string name) {
    doc_->names_.push_back(std::move(name));
    PickleNode* n = make(Kind::kGlobal);
    n->s = doc_->names_.back();
    return push(n);
  }
  // GLOBAL's "module\nname\n".
  bool text_line(std::string_view* line) {
    const std::size_t nl = in_.find('\n', pos_);
    if (nl == std::string_view::npos) return bad("GLOBAL's name has no end of line");
    *line = in_.substr(pos_, nl - pos_);
    pos_ = nl + 1;
    return true;
  }
  // REDUCE: only the functions libtorch's pickler wraps plain values in.
  bool reduce() {
    const PickleNode *args, *fn;
    if (!pop(&args, "REDUCE") || !pop(&fn, "REDUCE")) return false;
    if (fn->kind != Kind::kGlobal) return bad("REDUCE calls something that is not a global");
    if (args->kind != Kind::kTuple) return bad("REDUCE's arguments are not a tuple");
    const std::string_view name = fn->s;
    if (name == "torch.jit._pickle.restore_type_tag") {
      if (args->items.size() != 2) return bad("restore_type_tag takes 2 arguments");
      return push(args->items[0]);  // the value; its TorchScript type is not needed
    }
    if (name == "torch.jit._pickle.build_intlist" || name == "torch.jit._pickle.build_doublelist" ||
        name == "torch.jit._pickle.build_boollist") {
      if (args->items.size() != 1 || args->items[0]->kind != Kind::kList)
        return bad(std::string(name) + " takes one list");
      return push(args->items[0]);
    }
    if (name == "collections.OrderedDict" && args->items.empty()) return push(make(Kind::kDict));
    return bad("REDUCE of " + std::string(name) + ", which a memory snapshot does not hold");
  }

  bool step(uint8_t op) {
    uint64_t u = 0;
    std::string_view b;
    const PickleNode* v = nullptr;
    PickleNode* target = nullptr;
    std::vector<const PickleNode*> items;
    switch (op) {
      case 0x80:  // PROTO
        if (!uint_le(1, &u, "PROTO")) return false;
        if (u < 2 || u > 5) return bad("pickle protocol " + std::to_string(u) + " (2 to 5 are read)");
        return true;
      case 0x95:  // FRAME: a length hint only
        if (!uint_le(8, &u, "FRAME")) return false;
        if (u > in_.size() - pos_) return bad("FRAME of " + std::to_string(u) + " bytes runs past the end");
        return true;
      case '(':  // MARK
        marks_.push_back(stack_.size());
        return true;
      case '0':  // POP
        return pop(&v, "POP");
      case '1':  // POP_MARK
        return pop_mark(&items, "POP_MARK");
      case '2':  // DUP
        if (!pop(&v, "DUP")) return false;
        push(v);
        return push(v);
      case 'N':
        return push(make(Kind::kNone));
      case 0x88:
      case 0x89: {
        PickleNode* n = make(Kind::kBool);
        n->b = op == 0x88;
        return push(n);
      }
      case 'K':  // BININT1
        if (!uint_le(1, &u, "BININT1")) return false;
        return integer(static_cast<int64_t>(u));
      case 'M':  // BININT2
        if (!uint_le(2, &u, "BININT2")) return false;
        return integer(static_cast<int64_t>(u));
      case 'J':  // BININT: signed 32-bit
        if (!uint_le(4, &u, "BININT")) return false;
        return integer(static_cast<int32_t>(static_cast<uint32_t>(u)));
      case 0x8a:  // LONG1
        if (!uint_le(1, &u, "LONG1")) return false;
        if (!take(static_cast<std::size_t>(u), &b, "LONG1")) return false;
        return long_bytes(b);
      case 0x8b:  // LONG4
        if (!uint_le(4, &u, "LONG4")) return false;
        if (u > 4096) return bad("LONG4 of " + std::to_string(u) + " bytes");
        if (!take(static_cast<std::size_t>(u), &b, "LONG4")) return false;
        return long_bytes(b);
      case 'G': {  // BINFLOAT: big-endian IEEE double
        if (!take(8, &b, "BINFLOAT")) return false;
        uint64_t bits = 0;
        for (char c : b) bits = (bits << 8) | static_cast<uint8_t>(c);
        PickleNode* n = make(Kind::kFloat);
        std::memcpy(&n->f, &bits, sizeof bits);
        return push(n);
      }
      case 'X':
        return text(Kind::kStr, 4, "BINUNICODE");
      case 0x8c:
        return text(Kind::kStr, 1, "SHORT_BINUNICODE");
      case 0x8d:
        return text(Kind::kStr, 8, "BINUNICODE8");
      case 'B':
        return text(Kind::kBytes, 4, "BINBYTES");
      case 'C':
        return text(Kind::kBytes, 1, "SHORT_BINBYTES");
      case 0x8e:
        return text(Kind::kBytes, 8, "BINBYTES8");
      case ']':
        return push(make(Kind::kList));
      case '}':
        return push(make(Kind::kDict));
      case ')':
        return tuple_of({});
      case 'l': {  // LIST
        if (!pop_mark(&items, "LIST")) return false;
        PickleNode* n = make(Kind::kList);
        n->items = std::move(items);
        return push(n);
      }
      case 'd': {  // DICT
        if (!pop_mark(&items, "DICT")) return false;
        if (items.size() % 2 != 0) return bad("DICT with a key and no value");
        PickleNode* n = make(Kind::kDict);
        n->items = std::move(items);
        return push(n);
      }
      case 't':  // TUPLE
        if (!pop_mark(&items, "TUPLE")) return false;
        return tuple_of(std::move(items));
      case 0x85:
        return tuple_n(1, "TUPLE1");
      case 0x86:
        return tuple_n(2, "TUPLE2");
      case 0x87:
        return tuple_n(3, "TUPLE3");
      case 'a':  // APPEND
        if (!pop(&v, "APPEND") || !top_of(Kind::kList, &target, "APPEND")) return false;
        target->items.push_back(v);
        return true;
      case 'e':  // APPENDS
        if (!pop_mark(&items, "APPENDS") || !top_of(Kind::kList, &target, "APPENDS")) return false;
        target->items.insert(target->items.end(), items.begin(), items.end());
        return true;
      case 's': {  // SETITEM
        const PickleNode* key;
        if (!pop(&v, "SETITEM") || !pop(&key, "SETITEM") || !top_of(Kind::kDict, &target, "SETITEM"))
          return false;
        target->items.push_back(key);
        target->items.push_back(v);
        return true;
      }
      case 'u':  // SETITEMS
        if (!pop_mark(&items, "SETITEMS")) return false;
        if (items.size() % 2 != 0) return bad("SETITEMS with a key and no value");
        if (!top_of(Kind::kDict, &target, "SETITEMS")) return false;
        target->items.insert(target->items.end(), items.begin(), items.end());
        return true;
      case 'q':  // BINPUT
        return uint_le(1, &u, "BINPUT") && memo_put(u);
      case 'r':  // LONG_BINPUT
        return uint_le(4, &u, "LONG_BINPUT") && memo_put(u);
      case 0x94:  // MEMOIZE
        return memo_put(memo_.size());
      case 'h':  // BINGET
        return uint_le(1, &u, "BINGET") && memo_get(u);
      case 'j':  // LONG_BINGET
        return uint_le(4, &u, "LONG_BINGET") && memo_get(u);
      case 'c': {  // GLOBAL
        std::string_view module, name;
        if (!text_line(&module) || !text_line(&name)) return false;
        return global(std::string(module) + "." + std::string(name));
      }
      case 0x93: {  // STACK_GLOBAL
        const PickleNode *module, *name;
        if (!pop(&name, "STACK_GLOBAL") || !pop(&module, "STACK_GLOBAL")) return false;
        if (!module->is_str() || !name->is_str()) return bad("STACK_GLOBAL of values that are not strings");
        return global(std::string(module->s) + "." + std::string(name->s));
      }
      case 'R':
        return reduce();
      default:
        break;
    }
    switch (op) {
      case 'I': case 'L': case 'F': case 'S': case 'V': case 'p': case 'g': case 'U': case 'T':
      case '\\':
        return bad("opcode " + opcode_name(op) + " of pickle protocol 0 or 1 (2 to 5 are read)");
      case 'b': case 'o': case 'i': case 0x81: case 0x92: case 'P': case 'Q':
        return bad("opcode " + opcode_name(op) + " builds an object; a memory snapshot holds only "
                   "plain data");
      default:
        return bad("unknown opcode " + opcode_name(op));
    }
  }

  std::unique_ptr<PickleDocument> doc_;
  std::string_view in_;
  std::size_t pos_ = 0;
  std::size_t op_at_ = 0;
  std::vector<const PickleNode*> stack_;
  std::vector<std::size_t> marks_;
  std::unordered_map<uint64_t, const PickleNode*> memo_;
  std::string error_;
};

StatusOr<std::unique_ptr<PickleDocument>> read_pickle(std::string bytes) {
  return PickleParser(std::move(bytes)).run();
}

}  // namespace ptprof::detail
