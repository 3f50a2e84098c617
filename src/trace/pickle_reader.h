// pickle_reader.h: the pickles CUDA memory snapshots come in, read without Python: what
// libtorch's pickler writes (torch::cuda::_memory_snapshot_pickled(); protocol 2, memoized
// strings, type tags through torch.jit._pickle.restore_type_tag) and what Python's pickle
// writes for torch.cuda.memory._snapshot() (protocols 2 to 5, FRAME, MEMOIZE).
//
// Only plain data is built: None, bool, int, float, str, bytes, list, tuple and dict, and the
// few globals libtorch's pickler wraps them in. Anything else (an object, a persistent id, the
// text opcodes of protocols 0 and 1) is an error naming the opcode and its byte offset; so is
// any truncated or inconsistent input. The reader never trusts a length, index or count it
// reads: each is checked against what is left of the input before use.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace ptprof::detail {

struct PickleNode {
  enum class Kind : uint8_t { kNone, kBool, kInt, kFloat, kStr, kBytes, kList, kTuple, kDict, kGlobal };
  Kind kind = Kind::kNone;
  bool b = false;
  int64_t i = 0;
  double f = 0;           // kFloat; also an int beyond 64 bits, as its nearest double
  std::string_view s;     // kStr, kBytes (into the document's bytes); kGlobal: "module.name"
  // kList, kTuple: the items; kDict: key, value, key, value, ... in insertion order.
  std::vector<const PickleNode*> items;

  bool is_int() const { return kind == Kind::kInt; }
  bool is_str() const { return kind == Kind::kStr; }
  // kDict: the value of the last item whose key is the string `key`; nullptr if none.
  const PickleNode* get(std::string_view key) const;
};

// A read pickle: the nodes it built, owned here. Nodes may be shared (the memo) and may even
// refer to themselves (a list appended to itself); walkers bound their depth.
class PickleDocument {
 public:
  const PickleNode* root() const { return root_; }

 private:
  friend class PickleParser;
  std::string bytes_;  // strings are views into it
  std::deque<PickleNode> nodes_;
  std::deque<std::string> names_;  // globals' "module.name"
  const PickleNode* root_ = nullptr;
};

// Reads one pickle from `bytes` (up to its STOP; what follows is ignored, as Python does).
// An error is kInvalidArgument: "byte N: what was wrong".
StatusOr<std::unique_ptr<PickleDocument>> read_pickle(std::string bytes);

}  // namespace ptprof::detail
