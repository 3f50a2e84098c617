// arg_lookup.h: the reader's side of arg_keys.h: which of an event's "args" keys the model
// keeps, as an Arg, found per key by a switch the compiler resolves against constants. A
// static_assert holds the switch to the table, so a key cannot be found under another Arg.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "trace/arg_keys.h"

namespace ptprof::detail {

// The keys of "args" the model keeps.
enum class Arg : uint8_t {
  kUnknown,
  kExternalId,
  kRecordFunctionId,
  kSequenceNumber,
  kFwdThreadId,
  kInputDims,
  kInputType,
  kInputStrides,
  kConcreteInputs,
  kCallStack,
  kFlops,
  kFinished,
  kCbid,
  kCorrelation,
  kDevice,
  kStream,
  kContext,
  kQueued,
  kRegisters,
  kSharedMemory,
  kBlocksPerSm,
  kWarpsPerSm,
  kGrid,
  kBlock,
  kOccupancy,
  kBytes,
  kName,
  kLabels,
  kTotalReserved,
  kTotalAllocated,
  kMemBytes,
  kAddr,
  kDeviceId,
  kDeviceType,
  // Collectives (CollectiveInfo): numbers here, strings in RawEvent::coll.
  kInNelems,
  kOutNelems,
  kGroupSize,
  kRank,
  kGlobalRankStart,
  kGlobalRankStride,
  kSeq,
  kCollName,
  kDtype,
  kInSplit,
  kOutSplit,
  kPgName,
  kPgDesc,
  kPgRanks,
  // CUDA graphs (GraphNodeInfo): numbers here, strings in RawEvent.
  kGraphId,
  kGraphNode,
  kCapturedBy,
  kCaptureRanges,
  kCount
};

// The keys the model keeps (arg_keys.h's spellings) and the older spellings still read.
struct KeyArg {
  std::string_view key;
  Arg arg = Arg::kUnknown;
};
inline constexpr KeyArg kKeptArgs[] = {
    {arg_keys::kExternalId, Arg::kExternalId},
    {"external id", Arg::kExternalId},  // older Kineto
    {arg_keys::kRecordFunctionId, Arg::kRecordFunctionId},
    {arg_keys::kSequenceNumber, Arg::kSequenceNumber},
    {arg_keys::kFwdThreadId, Arg::kFwdThreadId},
    {arg_keys::kInputDims, Arg::kInputDims},
    {"Input dims", Arg::kInputDims},  // older Kineto
    {arg_keys::kInputType, Arg::kInputType},
    {arg_keys::kInputStrides, Arg::kInputStrides},
    {arg_keys::kConcreteInputs, Arg::kConcreteInputs},
    {arg_keys::kCallStack, Arg::kCallStack},
    {arg_keys::kFlops, Arg::kFlops},
    {arg_keys::kFinished, Arg::kFinished},
    {arg_keys::kCbid, Arg::kCbid},
    {arg_keys::kCorrelation, Arg::kCorrelation},
    {arg_keys::kDevice, Arg::kDevice},
    {arg_keys::kStream, Arg::kStream},
    {arg_keys::kContext, Arg::kContext},
    {arg_keys::kQueued, Arg::kQueued},
    {arg_keys::kRegisters, Arg::kRegisters},
    {arg_keys::kSharedMemory, Arg::kSharedMemory},
    {arg_keys::kBlocksPerSm, Arg::kBlocksPerSm},
    {arg_keys::kWarpsPerSm, Arg::kWarpsPerSm},
    {arg_keys::kGrid, Arg::kGrid},
    {arg_keys::kBlock, Arg::kBlock},
    {arg_keys::kOccupancy, Arg::kOccupancy},
    {arg_keys::kBytes, Arg::kBytes},
    {arg_keys::kName, Arg::kName},
    {arg_keys::kLabels, Arg::kLabels},
    {arg_keys::kTotalReserved, Arg::kTotalReserved},
    {arg_keys::kTotalAllocated, Arg::kTotalAllocated},
    {arg_keys::kMemBytes, Arg::kMemBytes},
    {arg_keys::kAddr, Arg::kAddr},
    {arg_keys::kDeviceId, Arg::kDeviceId},
    {arg_keys::kDeviceType, Arg::kDeviceType},
    {arg_keys::kInNelems, Arg::kInNelems},
    {arg_keys::kOutNelems, Arg::kOutNelems},
    {arg_keys::kGroupSize, Arg::kGroupSize},
    {arg_keys::kRank, Arg::kRank},
    {arg_keys::kGlobalRankStart, Arg::kGlobalRankStart},
    {arg_keys::kGlobalRankStride, Arg::kGlobalRankStride},
    {arg_keys::kSeq, Arg::kSeq},
    {arg_keys::kCollName, Arg::kCollName},
    {arg_keys::kDtype, Arg::kDtype},
    {arg_keys::kInSplit, Arg::kInSplit},
    {arg_keys::kOutSplit, Arg::kOutSplit},
    {arg_keys::kPgName, Arg::kPgName},
    {arg_keys::kPgDesc, Arg::kPgDesc},
    {arg_keys::kPgRanks, Arg::kPgRanks},
    {arg_keys::kGraphId, Arg::kGraphId},
    {arg_keys::kGraphNode, Arg::kGraphNode},
    {arg_keys::kCapturedBy, Arg::kCapturedBy},
    {arg_keys::kCaptureRanges, Arg::kCaptureRanges},
};
inline constexpr std::size_t kKeptCount = sizeof(kKeptArgs) / sizeof(kKeptArgs[0]);

constexpr Arg arg_of(std::string_view k) {
  // By length first: one or two comparisons per key, each against a constant the compiler
  // knows (a generic table lookup cost 4x the instructions per key under callgrind).
  switch (k.size()) {
    case 3:
      if (k == arg_keys::kSeq) return Arg::kSeq;
      break;
    case 4:
      if (k == arg_keys::kRank) return Arg::kRank;
      if (k == arg_keys::kCbid) return Arg::kCbid;
      if (k == arg_keys::kGrid) return Arg::kGrid;
      if (k == arg_keys::kName) return Arg::kName;
      if (k == arg_keys::kAddr) return Arg::kAddr;
      break;
    case 5:
      if (k == arg_keys::kFlops) return Arg::kFlops;
      if (k == arg_keys::kBytes) return Arg::kBytes;
      if (k == arg_keys::kBlock) return Arg::kBlock;
      if (k == arg_keys::kMemBytes) return Arg::kMemBytes;
      if (k == arg_keys::kDtype) return Arg::kDtype;
      break;
    case 6:
      if (k == arg_keys::kDevice) return Arg::kDevice;
      if (k == arg_keys::kStream) return Arg::kStream;
      if (k == arg_keys::kQueued) return Arg::kQueued;
      if (k == arg_keys::kLabels) return Arg::kLabels;
      break;
    case 7:
      if (k == arg_keys::kContext) return Arg::kContext;
      break;
    case 8:
      if (k == arg_keys::kFinished) return Arg::kFinished;
      if (k == arg_keys::kGraphId) return Arg::kGraphId;
      break;
    case 9:
      if (k == arg_keys::kDeviceId) return Arg::kDeviceId;
      break;
    case 10:
      if (k == arg_keys::kInputDims || k == "Input dims") return Arg::kInputDims;
      if (k == arg_keys::kInputType) return Arg::kInputType;
      if (k == arg_keys::kCallStack) return Arg::kCallStack;
      if (k == arg_keys::kGroupSize) return Arg::kGroupSize;
      if (k == arg_keys::kGraphNode) return Arg::kGraphNode;
      break;
    case 11:
      if (k == arg_keys::kExternalId || k == "external id") return Arg::kExternalId;
      if (k == arg_keys::kCorrelation) return Arg::kCorrelation;
      if (k == arg_keys::kDeviceType) return Arg::kDeviceType;
      if (k == arg_keys::kCapturedBy) return Arg::kCapturedBy;
      break;
    case 12:
      if (k == arg_keys::kWarpsPerSm) return Arg::kWarpsPerSm;
      break;
    case 13:
      if (k == arg_keys::kFwdThreadId) return Arg::kFwdThreadId;
      if (k == arg_keys::kInputStrides) return Arg::kInputStrides;
      if (k == arg_keys::kSharedMemory) return Arg::kSharedMemory;
      if (k == arg_keys::kBlocksPerSm) return Arg::kBlocksPerSm;
      if (k == arg_keys::kInNelems) return Arg::kInNelems;
      if (k == arg_keys::kInSplit) return Arg::kInSplit;
      break;
    case 14:
      if (k == arg_keys::kTotalReserved) return Arg::kTotalReserved;
      if (k == arg_keys::kOutNelems) return Arg::kOutNelems;
      if (k == arg_keys::kOutSplit) return Arg::kOutSplit;
      if (k == arg_keys::kCaptureRanges) return Arg::kCaptureRanges;
      break;
    case 15:
      if (k == arg_keys::kSequenceNumber) return Arg::kSequenceNumber;
      if (k == arg_keys::kConcreteInputs) return Arg::kConcreteInputs;
      if (k == arg_keys::kTotalAllocated) return Arg::kTotalAllocated;
      if (k == arg_keys::kCollName) return Arg::kCollName;
      break;
    case 17:
      if (k == arg_keys::kGlobalRankStart) return Arg::kGlobalRankStart;
      break;
    case 18:
      if (k == arg_keys::kRecordFunctionId) return Arg::kRecordFunctionId;
      if (k == arg_keys::kGlobalRankStride) return Arg::kGlobalRankStride;
      if (k == arg_keys::kPgName) return Arg::kPgName;
      break;
    case 19:
      if (k == arg_keys::kPgRanks) return Arg::kPgRanks;
      break;
    case 20:
      if (k == arg_keys::kRegisters) return Arg::kRegisters;
      break;
    case 25:
      if (k == arg_keys::kOccupancy) return Arg::kOccupancy;
      if (k == arg_keys::kPgDesc) return Arg::kPgDesc;
      break;
    default:
      break;
  }
  return Arg::kUnknown;
}

// The table and the switch agree: every Arg has a key, no key two Args, and arg_of finds
// each key's Arg (a key put under the wrong length would not be found).
constexpr bool keys_agree() {
  for (std::size_t a = 1; a < static_cast<std::size_t>(Arg::kCount); ++a) {
    bool found = false;
    for (const KeyArg& k : kKeptArgs) found = found || static_cast<std::size_t>(k.arg) == a;
    if (!found) return false;
  }
  for (std::size_t i = 0; i < kKeptCount; ++i) {
    if (arg_of(kKeptArgs[i].key) != kKeptArgs[i].arg) return false;
    for (std::size_t j = i + 1; j < kKeptCount; ++j)
      if (kKeptArgs[i].key == kKeptArgs[j].key) return false;
  }
  return true;
}
static_assert(keys_agree(), "kKeptArgs and arg_of disagree");

}  // namespace ptprof::detail
