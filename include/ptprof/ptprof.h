// ptprof/ptprof.h: the whole public API.
#pragma once

#include "ptprof/cross_rank.h"
#include "ptprof/distributed.h"
#include "ptprof/distributed_info.h"
#include "ptprof/error.h"
#include "ptprof/event.h"
#include "ptprof/key_averages.h"
#include "ptprof/log.h"
#include "ptprof/merge.h"
#include "ptprof/options.h"
#include "ptprof/range.h"
#include "ptprof/report.h"
#include "ptprof/schedule.h"
#include "ptprof/session.h"
#include "ptprof/status.h"
#include "ptprof/trace.h"
#include "ptprof/trace_handler.h"
