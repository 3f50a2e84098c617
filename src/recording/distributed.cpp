// distributed_info(): a c10d process group as distributedInfo describes it, and
// collective_args(): a collective op's arguments. The only file of the recorder that includes
// c10d, and only where libtorch has it (USE_DISTRIBUTED arrives from the torch target's compile
// definitions).
#include "ptprof/distributed.h"

#include <dlfcn.h>

#include <cstring>
#include <string>
#include <vector>

#include "ptprof/error.h"
#include "recording/collective_args.h"

#ifdef USE_DISTRIBUTED
#include <torch/csrc/distributed/c10d/GroupRegistry.hpp>
#include <torch/csrc/distributed/c10d/ParamCommsUtils.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#endif

namespace ptprof {

#ifndef USE_DISTRIBUTED

DistributedInfo distributed_info(const c10d::ProcessGroup&) {
  throw Error(
      "ptprof::distributed_info: this libtorch was built without distributed support "
      "(USE_DISTRIBUTED); set Options::distributed by hand");
}

namespace detail {
bool collective_args(const at::RecordFunction&, bool, CollectiveInfo*) {
  return false;
}
bool default_group_seq(int64_t*) {
  return false;
}
}  // namespace detail

#else

namespace {

// c10d::getNcclVersion() lives in libtorch_cuda and its header needs <nccl.h>, which the torch
// wheel does not ship: looked up at run time, so a CPU-only libtorch links too.
std::string nccl_version() {
  using Fn = std::string (*)();
  auto fn = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, "_ZN4c10d14getNcclVersionB5cxx11Ev"));
  if (fn == nullptr) return "";
  try {
    return fn();
  } catch (...) {
    return "";
  }
}

// The group's members' global ranks: its backend's list (Gloo and NCCL keep one; the base
// class throws), else 0..size-1 (the default group's list is left empty).
std::vector<int64_t> group_ranks(const c10d::ProcessGroup& pg) {
  std::vector<int64_t> ranks;
  try {
    for (uint64_t r : pg.getDefaultBackend()->getBackendOptions()->global_ranks_in_group)
      ranks.push_back(static_cast<int64_t>(r));
  } catch (const std::exception&) {
  }
  if (ranks.empty())
    for (int64_t r = 0; r < pg.getSize(); ++r) ranks.push_back(r);
  return ranks;
}

// "[0, 1]": PyTorch writes rank lists and split sizes as Python prints a list.
std::string list_text(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

int64_t numel_of(const c10::IValue& v, std::string* dtype) {
  auto tensor = [&](const at::Tensor& t) -> int64_t {
    if (!t.defined()) return 0;
    if (dtype->empty()) *dtype = c10::toString(t.scalar_type());
    return t.numel();
  };
  if (v.isTensor()) return tensor(v.toTensor());
  int64_t n = 0;
  if (v.isTensorList()) {
    for (const at::Tensor& t : v.toTensorVector()) n += tensor(t);
  } else if (v.isList()) {  // a list of tensor lists (allgather_'s outputs, ...)
    for (const c10::IValue& item : v.toListRef()) n += numel_of(item, dtype);
  }
  return n;
}

// A c10d op from its inputs: the tensors, the group (a TorchBind object among the inputs) and,
// for all-to-all, the split sizes.
bool c10d_op_args(const at::RecordFunction& fn, CollectiveInfo* out) {
  const auto inputs = fn.inputs();
  c10::intrusive_ptr<c10d::ProcessGroup> pg;
  std::size_t pg_at = 0;
  for (std::size_t i = 0; i < inputs.size() && !pg; ++i) {
    if (!inputs[i].isObject()) continue;
    try {
      pg = inputs[i].toCustomClass<c10d::ProcessGroup>();
      pg_at = i;
    } catch (const std::exception&) {  // another class
    }
  }
  if (!pg) return false;
  std::string op = fn.name() + 6;  // past "c10d::"
  while (!op.empty() && op.back() == '_') op.pop_back();
  while (!op.empty() && op.front() == '_') op.erase(op.begin());
  out->name = op;
  // Gathers, scatters and all-to-alls take their outputs first; the others work in place.
  const bool out_first = op.find("gather") != std::string::npos ||
                         op.find("scatter") != std::string::npos ||
                         op.find("alltoall") != std::string::npos;
  std::string dtype;
  if (pg_at > 0) {
    const std::size_t in_at = out_first && pg_at > 1 ? 1 : 0;
    out->in_nelems = numel_of(inputs[in_at], &dtype);
    out->out_nelems = out_first ? numel_of(inputs[0], &dtype) : out->in_nelems;
  }
  out->dtype = dtype;
  if (op == "alltoall_base" && inputs.size() > pg_at + 2 && inputs[pg_at + 1].isIntList() &&
      inputs[pg_at + 2].isIntList()) {
    out->out_split = list_text(inputs[pg_at + 1].toIntVector());
    out->in_split = list_text(inputs[pg_at + 2].toIntVector());
  } else {
    out->in_split = out->out_split = "[]";
  }
  out->group_size = pg->getSize();
  out->rank = pg->getRank();
  out->pg_name = pg->getGroupName();
  out->pg_desc = pg->getGroupDesc();
  out->pg_ranks = list_text(group_ranks(*pg));
  try {
    out->seq = static_cast<int64_t>(pg->getSequenceNumberForGroup());
  } catch (const std::exception&) {  // a backend that does not count
  }
  return true;
}

// NCCL's record_param_comms: the debug info ProcessGroupNCCL sets around it, as Kineto reads it;
// the sequence number only from its inputs (a tuple (seq, is_p2p), or the number alone).
bool param_comms_args(const at::RecordFunction& fn, bool with_inputs, CollectiveInfo* out) {
  const auto* info = dynamic_cast<const torch::ParamCommsDebugInfo*>(
      c10::ThreadLocalDebugInfo::get(c10::DebugInfoKind::PARAM_COMMS_INFO));
  if (info == nullptr) return false;
  out->name = info->getCollectiveName();
  out->dtype = c10::toString(info->getDType());
  out->in_nelems = info->getInMessageNelems();
  out->out_nelems = info->getOutMessageNelems();
  out->group_size = info->getWorldSize();
  out->in_split = list_text(info->getInputSplitSizes());
  out->out_split = list_text(info->getOutputSplitSizes());
  out->pg_name = info->getProcessGroupName();
  out->pg_desc = info->getProcessGroupDesc();
  out->pg_ranks = list_text(info->getGroupRanks());
  out->rank = info->getRank();
  out->global_rank_start = info->getGlobalRankStart();
  out->global_rank_stride = info->getGlobalRankStride();
  if (with_inputs) {
    for (const c10::IValue& v : fn.inputs()) {
      if (v.isTuple() && !v.toTupleRef().elements().empty() &&
          v.toTupleRef().elements()[0].isInt()) {
        out->seq = v.toTupleRef().elements()[0].toInt();
        break;
      }
      if (v.isInt()) {  // RECORD_PARAM_COMMS: the number first
        out->seq = v.toInt();
        break;
      }
    }
  }
  return true;
}

}  // namespace

namespace detail {

bool collective_args(const at::RecordFunction& fn, bool with_inputs, CollectiveInfo* out) {
  try {
    if (std::strcmp(fn.name(), "record_param_comms") == 0)
      return param_comms_args(fn, with_inputs, out);
    return with_inputs && c10d_op_args(fn, out);
  } catch (const std::exception&) {
    return false;
  }
}

bool default_group_seq(int64_t* seq) {
  try {
    const c10::intrusive_ptr<c10d::ProcessGroup> pg = c10d::resolve_process_group("0");
    if (!pg) return false;
    *seq = static_cast<int64_t>(pg->getSequenceNumberForGroup());
    return true;
  } catch (const std::exception&) {  // none registered, or a backend that does not count
    return false;
  }
}

}  // namespace detail

DistributedInfo distributed_info(const c10d::ProcessGroup& group) {
  auto& pg = const_cast<c10d::ProcessGroup&>(group);  // getBackend(DeviceType) is not const
  DistributedInfo d;
  d.rank = pg.getRank();
  d.world_size = pg.getSize();
  ProcessGroupInfo g;
  g.name = pg.getGroupName();
  g.desc = pg.getGroupDesc();
  g.size = pg.getSize();
  c10::intrusive_ptr<c10d::Backend> backend;
  try {
    backend = pg.getDefaultBackend();
    d.backend = backend->getBackendName();
  } catch (const std::exception&) {
    d.backend = pg.getBackendName();  // a group without backends: its type's name
  }
  for (const c10::Device& dev : pg.getDeviceTypes()) {
    try {
      const std::string name = pg.getBackend(dev.type())->getBackendName();
      g.backend_config += (g.backend_config.empty() ? "" : ",") +
                          c10::DeviceTypeName(dev.type(), /*lower_case=*/true) + ":" + name;
    } catch (const std::exception&) {
    }
  }
  g.ranks = group_ranks(pg);
  d.groups.push_back(std::move(g));
  if (d.backend == "nccl") d.nccl_version = nccl_version();
  return d;
}

#endif

}  // namespace ptprof
