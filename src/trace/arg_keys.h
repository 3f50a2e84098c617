// arg_keys.h: the keys of an event's "args" in PyTorch's trace schema, spelled once for the
// writer (chrome_trace.cpp) and the reader (trace_reader.cpp), so a key cannot be written one
// way and read another. Spelled as Kineto writes them (docs/trace-format.md); the ones ptprof
// adds are marked. Char arrays, not string_views: JsonWriter::key writes a literal unscanned.
#pragma once

namespace ptprof::detail::arg_keys {

// CPU ops and user ranges.
inline constexpr char kExternalId[] = "External id";
inline constexpr char kRecordFunctionId[] = "Record function id";
inline constexpr char kSequenceNumber[] = "Sequence number";
inline constexpr char kFwdThreadId[] = "Fwd thread id";
inline constexpr char kEvIdx[] = "Ev Idx";
inline constexpr char kCallStack[] = "Call stack";  // frames joined with ';'
inline constexpr char kFlops[] = "flops";
inline constexpr char kFinished[] = "finished";  // ptprof's: false on an op still open at the end

// record_shapes.
inline constexpr char kInputDims[] = "Input Dims";
inline constexpr char kInputType[] = "Input type";
inline constexpr char kInputStrides[] = "Input Strides";
inline constexpr char kConcreteInputs[] = "Concrete Inputs";

// GPU activity.
inline constexpr char kQueued[] = "queued";
inline constexpr char kDevice[] = "device";
inline constexpr char kContext[] = "context";
inline constexpr char kStream[] = "stream";
inline constexpr char kCorrelation[] = "correlation";
inline constexpr char kCbid[] = "cbid";
inline constexpr char kRegisters[] = "registers per thread";
inline constexpr char kSharedMemory[] = "shared memory";
inline constexpr char kBlocksPerSm[] = "blocks per SM";
inline constexpr char kWarpsPerSm[] = "warps per SM";
inline constexpr char kGrid[] = "grid";
inline constexpr char kBlock[] = "block";
inline constexpr char kOccupancy[] = "est. achieved occupancy %";
inline constexpr char kBytes[] = "bytes";
inline constexpr char kBandwidth[] = "memory bandwidth (GB/s)";  // written, not read

// profile_memory's [memory] instant events.
inline constexpr char kTotalReserved[] = "Total Reserved";
inline constexpr char kTotalAllocated[] = "Total Allocated";
inline constexpr char kMemBytes[] = "Bytes";
inline constexpr char kAddr[] = "Addr";
inline constexpr char kDeviceId[] = "Device Id";
inline constexpr char kDeviceType[] = "Device Type";

// Collectives (record_param_comms, and NCCL kernels copying their op's).
inline constexpr char kCollName[] = "Collective name";
inline constexpr char kInNelems[] = "In msg nelems";
inline constexpr char kOutNelems[] = "Out msg nelems";
inline constexpr char kGroupSize[] = "Group size";
inline constexpr char kDtype[] = "dtype";
inline constexpr char kInSplit[] = "In split size";
inline constexpr char kOutSplit[] = "Out split size";
inline constexpr char kPgName[] = "Process Group Name";
inline constexpr char kPgDesc[] = "Process Group Description";
inline constexpr char kPgRanks[] = "Process Group Ranks";
inline constexpr char kRank[] = "Rank";
inline constexpr char kGlobalRankStart[] = "Global rank start";
inline constexpr char kGlobalRankStride[] = "Global rank stride";
inline constexpr char kSeq[] = "Seq";

// CUDA graphs (ptprof's: Kineto writes none).
inline constexpr char kGraphId[] = "graph id";
inline constexpr char kGraphNode[] = "graph node";
inline constexpr char kCapturedBy[] = "captured by";
inline constexpr char kCaptureRanges[] = "capture ranges";

// Metadata events' args (process and thread names and labels).
inline constexpr char kName[] = "name";
inline constexpr char kLabels[] = "labels";

}  // namespace ptprof::detail::arg_keys
