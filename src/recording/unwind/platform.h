// platform.h: where the CFI unwinder runs. Elsewhere capture_stack falls back to
// _Unwind_Backtrace (backtrace.h); the .eh_frame parser (eh_frame_cfi.h) builds everywhere.
#pragma once

#if defined(__x86_64__) && defined(__linux__)
#define PTPROF_CFI_UNWINDER 1
#endif
