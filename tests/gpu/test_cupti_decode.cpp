// The decoding layer, fed hand-built records of the CUDA 13 CUPTI struct types.
#include <gtest/gtest.h>

#include <string>

#include "cupti_test_util.h"
#include "gpu/cupti_decode.h"

namespace ptprof::detail {
namespace {

using test::h100;

ActivityDecoder::CallbackNamer real_namer() {
  return
      [](CUpti_CallbackDomain d, uint32_t cbid) { return real_cupti_api().callback_name(d, cbid); };
}

TEST(CuptiDecode, KernelFieldsAndArgs) {
  Trace trace;
  ActivityDecoder dec(trace, {h100(0)}, real_namer());
  CUpti_ActivityKernel10 k = test::kernel_record("_Z6kernelPfi", 77, 5000, 7500, 0, 13);
  k.contextId = 3;
  k.gridX = 66;
  k.gridY = 4;
  k.gridZ = 2;  // 528 blocks over 132 SMs: 4 blocks per SM
  k.blockX = 128;
  k.blockY = 2;  // 256 threads per block
  k.staticSharedMemory = 1024;
  k.dynamicSharedMemory = 2048;
  k.registersPerThread = 32;
  k.queued = 4000;
  DecodedActivity a;
  ExternalCorrelationRecord x;
  ASSERT_EQ(dec.decode(reinterpret_cast<const CUpti_Activity&>(k), &a, &x), RecordRole::Activity);
  const Event& e = a.event;
  EXPECT_EQ(e.kind, EventKind::Kernel);
  EXPECT_EQ(e.name, "kernel(float*, int)");
  EXPECT_EQ(e.start_ns, 5000);
  EXPECT_EQ(e.duration_ns, 2500);
  EXPECT_EQ(e.pid, 0);
  EXPECT_EQ(e.tid, 13);
  EXPECT_EQ(e.device, 0);
  EXPECT_EQ(e.stream, 13);
  EXPECT_EQ(e.correlation, 77u);
  EXPECT_EQ(e.kernel.grid[0], 66);
  EXPECT_EQ(e.kernel.grid[1], 4);
  EXPECT_EQ(e.kernel.grid[2], 2);
  EXPECT_EQ(e.kernel.block[0], 128);
  EXPECT_EQ(e.kernel.block[1], 2);
  EXPECT_EQ(e.kernel.block[2], 1);
  EXPECT_EQ(e.kernel.registers_per_thread, 32);
  EXPECT_EQ(e.kernel.shared_memory, 3072);
  EXPECT_EQ(e.kernel.context, 3u);
  EXPECT_EQ(e.kernel.queued, 4);  // Kineto writes CUPTI's queued time in us
  EXPECT_FLOAT_EQ(e.kernel.blocks_per_sm, 4.0f);
  EXPECT_FLOAT_EQ(e.kernel.warps_per_sm, 32.0f);  // 4 x 256 / 32
  // 8 blocks of 256 fit an SM (threads, registers and 3 KiB + 1 KiB reserved shared memory
  // per block allow it); only 4 per SM exist: 4 x 256 / 2048 = 50%.
  EXPECT_EQ(e.kernel.occupancy_pct, 50);
  EXPECT_EQ(a.context, 3u);
  EXPECT_FALSE(e.flow_start);
  EXPECT_FALSE(e.flow_end);
  EXPECT_EQ(e.external_id, 0u);
}

TEST(CuptiDecode, KernelOccupancyLimitedByRegisters) {
  const test::GpuDeviceInfo d = h100();
  const int32_t grid[3] = {1320, 1, 1};  // 10 blocks per SM requested
  const int32_t block[3] = {256, 1, 1};
  // 128 registers x 256 threads = 32768 per block: two blocks fill the 65536 of an SM.
  KernelOccupancy o = kernel_occupancy(&d, grid, block, 128, 0, 0, false);
  EXPECT_FLOAT_EQ(o.blocks_per_sm, 10.0f);
  EXPECT_FLOAT_EQ(o.warps_per_sm, 80.0f);
  EXPECT_EQ(o.occupancy_pct, 25);
  // 32 registers: the 2048-thread limit allows 8 blocks of 256: 100%.
  o = kernel_occupancy(&d, grid, block, 32, 0, 0, false);
  EXPECT_EQ(o.occupancy_pct, 100);
  // A block over the default 48 KiB of shared memory cannot run without the opt-in...
  o = kernel_occupancy(&d, grid, block, 32, 0, 100 * 1024, false);
  EXPECT_EQ(o.occupancy_pct, 0);
  // ...and with it two such blocks share the SM's 228 KiB: 2 x 256 / 2048 = 25%.
  o = kernel_occupancy(&d, grid, block, 32, 0, 100 * 1024, true);
  EXPECT_EQ(o.occupancy_pct, 25);
}

TEST(CuptiDecode, KernelOnUnknownDeviceHasZeroFigures) {
  Trace trace;
  ActivityDecoder dec(trace, {h100(0)}, real_namer());
  CUpti_ActivityKernel10 k = test::kernel_record("my_c_kernel", 1, 10, 20, /*device=*/5);
  const DecodedActivity a = dec.kernel(k);
  EXPECT_EQ(a.event.name, "my_c_kernel");  // extern "C": not mangled, kept as is
  EXPECT_EQ(a.event.device, 5);
  EXPECT_EQ(a.event.kernel.blocks_per_sm, 0.0f);
  EXPECT_EQ(a.event.kernel.warps_per_sm, 0.0f);
  EXPECT_EQ(a.event.kernel.occupancy_pct, 0);
}

TEST(CuptiDecode, KernelNamesAreDemangledOnceAndOwnedByTheTrace) {
  Trace trace;
  ActivityDecoder dec(trace, {}, real_namer());
  std::string name =
      "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEEEEviT0_";
  const DecodedActivity a = dec.kernel(test::kernel_record(name.c_str(), 1, 0, 1));
  const DecodedActivity b = dec.kernel(test::kernel_record(name.c_str(), 2, 0, 1));
  EXPECT_EQ(a.event.name,
            "void at::native::vectorized_elementwise_kernel<4, "
            "at::native::FillFunctor<float> >(int, at::native::FillFunctor<float>)");
  EXPECT_EQ(a.event.name.data(), b.event.name.data());
  // The same address holding another name later (module reloaded) is not mistaken.
  name = "_Z5otherv";
  const DecodedActivity c = dec.kernel(test::kernel_record(name.c_str(), 3, 0, 1));
  EXPECT_EQ(c.event.name, "other()");
  EXPECT_EQ(a.event.name.substr(0, 4), "void");
}

struct CopyCase {
  uint8_t copy, src, dst;
  const char* name;
};

TEST(CuptiDecode, MemcpyEveryCopyKind) {
  const CopyCase cases[] = {
      {CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE,
       CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, "Memcpy HtoD (Pageable -> Device)"},
      {CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
       CUPTI_ACTIVITY_MEMORY_KIND_PINNED, "Memcpy DtoH (Device -> Pinned)"},
      {CUPTI_ACTIVITY_MEMCPY_KIND_HTOA, CUPTI_ACTIVITY_MEMORY_KIND_PINNED,
       CUPTI_ACTIVITY_MEMORY_KIND_ARRAY, "Memcpy HtoA (Pinned -> Array)"},
      {CUPTI_ACTIVITY_MEMCPY_KIND_ATOH, CUPTI_ACTIVITY_MEMORY_KIND_ARRAY,
       CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE, "Memcpy AtoH (Array -> Pageable)"},
      {CUPTI_ACTIVITY_MEMCPY_KIND_ATOA, CUPTI_ACTIVITY_MEMORY_KIND_ARRAY,
       CUPTI_ACTIVITY_MEMORY_KIND_ARRAY, "Memcpy AtoA (Array -> Array)"},
      {CUPTI_ACTIVITY_MEMCPY_KIND_ATOD, CUPTI_ACTIVITY_MEMORY_KIND_ARRAY,
       CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, "Memcpy AtoD (Array -> Device)"},
      {CUPTI_ACTIVITY_MEMCPY_KIND_DTOA, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
       CUPTI_ACTIVITY_MEMORY_KIND_ARRAY, "Memcpy DtoA (Device -> Array)"},
      {CUPTI_ACTIVITY_MEMCPY_KIND_DTOD, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
       CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, "Memcpy DtoD (Device -> Device)"},
      {CUPTI_ACTIVITY_MEMCPY_KIND_HTOH, CUPTI_ACTIVITY_MEMORY_KIND_PINNED,
       CUPTI_ACTIVITY_MEMORY_KIND_MANAGED, "Memcpy HtoH (Pinned -> Managed)"},
      {CUPTI_ACTIVITY_MEMCPY_KIND_PTOP, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
       CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, "Memcpy PtoP (Device -> Device)"},
      {CUPTI_ACTIVITY_MEMCPY_KIND_UNKNOWN, CUPTI_ACTIVITY_MEMORY_KIND_UNKNOWN,
       CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC, "Memcpy <unknown> (Unknown -> Device Static)"},
  };
  Trace trace;
  ActivityDecoder dec(trace, {h100(0), h100(1)}, real_namer());
  uint32_t corr = 10;
  for (const CopyCase& c : cases) {
    SCOPED_TRACE(c.name);
    CUpti_ActivityMemcpy6 m =
        test::memcpy_record(c.copy, c.src, c.dst, 1 << 20, corr, 1000, 1000 + 2000, 1, 21);
    m.contextId = 9;
    DecodedActivity a;
    ExternalCorrelationRecord x;
    ASSERT_EQ(dec.decode(reinterpret_cast<const CUpti_Activity&>(m), &a, &x), RecordRole::Activity);
    const Event& e = a.event;
    EXPECT_EQ(e.kind, EventKind::Memcpy);
    EXPECT_EQ(e.name, c.name);
    EXPECT_EQ(e.start_ns, 1000);
    EXPECT_EQ(e.duration_ns, 2000);
    EXPECT_EQ(e.pid, 1);
    EXPECT_EQ(e.tid, 21);
    EXPECT_EQ(e.device, 1);
    EXPECT_EQ(e.stream, 21);
    EXPECT_EQ(e.correlation, corr);
    EXPECT_EQ(e.transfer.bytes, 1u << 20);
    EXPECT_EQ(e.transfer.context, 9u);
    EXPECT_EQ(e.transfer.copy_kind, c.copy);
    EXPECT_EQ(e.transfer.src_kind, c.src);
    EXPECT_EQ(e.transfer.dst_kind, c.dst);
    ++corr;
  }
}

TEST(CuptiDecode, PeerToPeerCopy) {
  Trace trace;
  ActivityDecoder dec(trace, {}, real_namer());
  CUpti_ActivityMemcpyPtoP4 m;
  std::memset(&m, 0, sizeof(m));
  m.kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
  m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
  m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  m.bytes = 4096;
  m.start = 100;
  m.end = 300;
  m.deviceId = 1;
  m.contextId = 2;
  m.streamId = 14;
  m.srcDeviceId = 0;
  m.dstDeviceId = 1;
  m.correlationId = 55;
  DecodedActivity a;
  ExternalCorrelationRecord x;
  ASSERT_EQ(dec.decode(reinterpret_cast<const CUpti_Activity&>(m), &a, &x), RecordRole::Activity);
  EXPECT_EQ(a.event.kind, EventKind::Memcpy);
  EXPECT_EQ(a.event.name, "Memcpy PtoP (Device -> Device)");
  EXPECT_EQ(a.event.transfer.bytes, 4096u);
  EXPECT_EQ(a.event.duration_ns, 200);
  EXPECT_EQ(a.event.pid, 1);
  EXPECT_EQ(a.event.tid, 14);
  EXPECT_EQ(a.event.correlation, 55u);
  EXPECT_EQ(a.event.transfer.context, 2u);
}

TEST(CuptiDecode, Memset) {
  Trace trace;
  ActivityDecoder dec(trace, {}, real_namer());
  CUpti_ActivityMemset4 m = test::memset_record(512, 31, 40, 90, 0, 7);
  m.contextId = 4;
  DecodedActivity a;
  ExternalCorrelationRecord x;
  ASSERT_EQ(dec.decode(reinterpret_cast<const CUpti_Activity&>(m), &a, &x), RecordRole::Activity);
  EXPECT_EQ(a.event.kind, EventKind::Memset);
  EXPECT_EQ(a.event.name, "Memset (Device)");
  EXPECT_EQ(a.event.start_ns, 40);
  EXPECT_EQ(a.event.duration_ns, 50);
  EXPECT_EQ(a.event.pid, 0);
  EXPECT_EQ(a.event.tid, 7);
  EXPECT_EQ(a.event.stream, 7);
  EXPECT_EQ(a.event.correlation, 31u);
  EXPECT_EQ(a.event.transfer.bytes, 512u);
  EXPECT_EQ(a.event.transfer.context, 4u);
  m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_MANAGED;
  EXPECT_EQ(dec.memset(m).event.name, "Memset (Managed)");
}

TEST(CuptiDecode, RuntimeAndDriverCalls) {
  Trace trace;
  ActivityDecoder dec(trace, {}, real_namer());
  struct Case {
    bool driver;
    CUpti_CallbackId cbid;
    const char* name;
    bool launch;
  };
  const Case cases[] = {
      {false, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, "cudaLaunchKernel", true},
      {false, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000, "cudaLaunchKernel", true},
      {false, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060, "cudaLaunchKernelExC", true},
      {false, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, "cudaMemcpyAsync", true},
      {false, CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020, "cudaMemsetAsync", true},
      {false, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, "cudaStreamSynchronize", true},
      {false, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000, "cudaGraphLaunch", true},
      {false, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, "cudaMalloc", false},
      {false, CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020, "cudaEventRecord", false},
      {false, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchHostFunc_v10000, "cudaLaunchHostFunc", false},
      {true, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, "cuLaunchKernel", true},
      {true, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, "cuLaunchKernelEx", true},
      {true, CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2, "cuMemcpyHtoDAsync_v2", true},
      {true, CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent, "cuCtxGetCurrent", false},
  };
  uint32_t corr = 1;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const CUpti_ActivityAPI r = test::api_record(c.driver, c.cbid, corr, 1000, 1600, 0xBEEF, 77);
    DecodedActivity a;
    ExternalCorrelationRecord x;
    ASSERT_EQ(dec.decode(reinterpret_cast<const CUpti_Activity&>(r), &a, &x), RecordRole::Activity);
    EXPECT_EQ(a.event.kind, c.driver ? EventKind::CudaDriver : EventKind::CudaRuntime);
    EXPECT_EQ(a.event.name, c.name);
    EXPECT_EQ(a.launch, c.launch);
    EXPECT_EQ(a.event.cbid, static_cast<int32_t>(c.cbid));
    EXPECT_EQ(a.event.correlation, corr);
    EXPECT_EQ(a.event.start_ns, 1000);
    EXPECT_EQ(a.event.duration_ns, 600);
    EXPECT_EQ(a.event.pid, 77);
    EXPECT_EQ(a.event.tid, 0xBEEF);
    EXPECT_EQ(a.raw_thread, 0xBEEFu);
    EXPECT_EQ(a.event.device, -1);
    EXPECT_EQ(a.event.stream, -1);
    ++corr;
  }
}

TEST(CuptiDecode, HiddenRuntimeCallsAreSkipped) {
  Trace trace;
  ActivityDecoder dec(trace, {}, real_namer());
  for (CUpti_CallbackId cbid :
       {CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaSetDevice_v3020,
        CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020}) {
    const CUpti_ActivityAPI r = test::api_record(false, cbid, 1, 0, 1, 1);
    DecodedActivity a;
    ExternalCorrelationRecord x;
    EXPECT_EQ(dec.decode(reinterpret_cast<const CUpti_Activity&>(r), &a, &x), RecordRole::Skipped);
  }
  EXPECT_EQ(dec.unknown_records(), 0u);
}

TEST(CuptiDecode, UnnamedCallbackGetsANumberedName) {
  Trace trace;
  ActivityDecoder dec(trace, {},
                      [](CUpti_CallbackDomain, uint32_t) -> const char* { return nullptr; });
  const DecodedActivity a = dec.api(test::api_record(false, 9999, 1, 0, 1, 1), false);
  EXPECT_EQ(a.event.name, "cuda_runtime_cbid_9999");
  EXPECT_FALSE(a.launch);
  const DecodedActivity b = dec.api(test::api_record(true, 8888, 1, 0, 1, 1), true);
  EXPECT_EQ(b.event.name, "cuda_driver_cbid_8888");
}

TEST(CuptiDecode, ExternalCorrelation) {
  Trace trace;
  ActivityDecoder dec(trace, {}, real_namer());
  const CUpti_ActivityExternalCorrelation r = test::ext_record(123, 987654321);
  DecodedActivity a;
  ExternalCorrelationRecord x;
  ASSERT_EQ(dec.decode(reinterpret_cast<const CUpti_Activity&>(r), &a, &x),
            RecordRole::ExternalCorrelation);
  EXPECT_EQ(x.kind, CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2);
  EXPECT_EQ(x.correlation, 123u);
  EXPECT_EQ(x.external_id, 987654321u);
  const CUpti_ActivityExternalCorrelation k =
      test::ext_record(124, 5, CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0);
  ASSERT_EQ(dec.decode(reinterpret_cast<const CUpti_Activity&>(k), &a, &x),
            RecordRole::ExternalCorrelation);
  EXPECT_EQ(x.kind, CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0);
}

TEST(CuptiDecode, Overhead) {
  Trace trace;
  ActivityDecoder dec(trace, {}, real_namer());
  const CUpti_ActivityOverhead3 o =
      test::overhead_record(CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH, 300, 450);
  DecodedActivity a;
  ExternalCorrelationRecord x;
  ASSERT_EQ(dec.decode(reinterpret_cast<const CUpti_Activity&>(o), &a, &x), RecordRole::Activity);
  EXPECT_EQ(a.event.kind, EventKind::Overhead);
  EXPECT_EQ(a.event.name, "Buffer Flush");
  EXPECT_EQ(a.event.start_ns, 300);
  EXPECT_EQ(a.event.duration_ns, 150);
  EXPECT_EQ(a.event.pid, -1);
  EXPECT_EQ(a.event.tid, 0);
  EXPECT_EQ(
      dec.overhead(test::overhead_record(CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER, 0, 1)).event.name,
      "Driver Compiler");
  EXPECT_EQ(dec.overhead(test::overhead_record(CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION, 0, 1))
                .event.name,
            "Instrumentation");
}

TEST(CuptiDecode, Synchronization) {
  Trace trace;
  ActivityDecoder dec(trace, {}, real_namer());
  const CUpti_ActivitySynchronization2 s = test::sync_record(
      CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, 61, 1000, 5000, 13, 2);
  DecodedActivity a;
  ExternalCorrelationRecord x;
  ASSERT_EQ(dec.decode(reinterpret_cast<const CUpti_Activity&>(s), &a, &x), RecordRole::Activity);
  EXPECT_EQ(a.event.kind, EventKind::CudaSync);
  EXPECT_EQ(a.event.name, "Stream Sync");
  EXPECT_EQ(a.event.start_ns, 1000);
  EXPECT_EQ(a.event.duration_ns, 4000);
  EXPECT_EQ(a.event.stream, 13);
  EXPECT_EQ(a.event.tid, 13);
  EXPECT_EQ(a.event.correlation, 61u);
  EXPECT_EQ(a.context, 2u);
  const DecodedActivity c =
      dec.sync(test::sync_record(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE, 62, 0, 1,
                                 CUPTI_SYNCHRONIZATION_INVALID_VALUE));
  EXPECT_EQ(c.event.name, "Context Sync");
  EXPECT_EQ(c.event.stream, -1);  // no stream: Kineto writes stream -1 on tid 1
  EXPECT_EQ(c.event.tid, 1);
  EXPECT_EQ(
      dec.sync(test::sync_record(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE, 1, 0, 1, 7))
          .event.name,
      "Event Sync");
  EXPECT_EQ(
      dec.sync(test::sync_record(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT, 1, 0, 1, 7))
          .event.name,
      "Stream Wait Event");
}

TEST(CuptiDecode, UnknownKindsAreCountedAndSkipped) {
  Trace trace;
  ActivityDecoder dec(trace, {}, real_namer());
  CUpti_ActivityAPI r = test::api_record(false, 1, 1, 0, 1, 1);
  r.kind = CUPTI_ACTIVITY_KIND_MARKER;
  DecodedActivity a;
  ExternalCorrelationRecord x;
  EXPECT_EQ(dec.decode(reinterpret_cast<const CUpti_Activity&>(r), &a, &x), RecordRole::Skipped);
  EXPECT_EQ(dec.unknown_records(), 1u);
}

TEST(CuptiDecode, ApiNames) {
  EXPECT_EQ(api_display_name("cudaLaunchKernel_v7000", CUPTI_CB_DOMAIN_RUNTIME_API),
            "cudaLaunchKernel");
  EXPECT_EQ(api_display_name("cudaLaunchKernel_ptsz_v7000", CUPTI_CB_DOMAIN_RUNTIME_API),
            "cudaLaunchKernel_ptsz");
  EXPECT_EQ(api_display_name("__cudaLaunchKernel_v13000", CUPTI_CB_DOMAIN_RUNTIME_API),
            "cudaLaunchKernel");
  EXPECT_EQ(api_display_name("cudaGraphAddNode_v2_v12030", CUPTI_CB_DOMAIN_RUNTIME_API),
            "cudaGraphAddNode_v2");
  // Driver names are the exported symbols; their _v2 is part of the name.
  EXPECT_EQ(api_display_name("cuMemcpyHtoD_v2", CUPTI_CB_DOMAIN_DRIVER_API), "cuMemcpyHtoD_v2");
  EXPECT_TRUE(is_launch_api("cudaLaunchKernel_ptsz"));
  EXPECT_TRUE(is_launch_api("cudaDeviceSynchronize"));
  EXPECT_TRUE(is_launch_api("cuGraphLaunch"));
  EXPECT_FALSE(is_launch_api("cudaFree"));
  EXPECT_FALSE(is_launch_api("cudaStreamIsCapturing"));
}

}  // namespace
}  // namespace ptprof::detail
