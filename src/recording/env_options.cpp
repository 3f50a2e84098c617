#include "recording/env_options.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <optional>
#include <string>

#include "ptprof/error.h"
#include "recording/on_demand.h"

namespace ptprof::detail {

namespace {

const char* env_value(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : nullptr;
}

bool env_flag(const char* name) {
  const char* v = env_value(name);
  if (v == nullptr) return false;
  const std::string s(v);
  if (s == "1" || s == "true") return true;
  if (s == "0" || s == "false") return false;
  throw Error(std::string("ptprof: ") + name + " must be 0 or 1 (got \"" + s + "\")");
}

// PTPROF_SCHEDULE=W,U,A[,R[,S]]: wait, warmup, active, repeat, skip_first.
Schedule schedule_from_env(const std::string& text) {
  std::vector<int64_t> v;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const std::size_t comma = std::min(text.find(',', pos), text.size());
    const std::string part = text.substr(pos, comma - pos);
    char* end = nullptr;
    errno = 0;
    const long long n = std::strtoll(part.c_str(), &end, 10);
    if (part.empty() || *end != '\0' || errno != 0 || n < 0)
      throw Error(
          "ptprof: PTPROF_SCHEDULE must be wait,warmup,active[,repeat[,skip_first]] "
          "in whole numbers (got \"" +
          text + "\")");
    v.push_back(n);
    pos = comma + 1;
  }
  if (v.size() < 3 || v.size() > 5)
    throw Error("ptprof: PTPROF_SCHEDULE must be wait,warmup,active[,repeat[,skip_first]] (got \"" +
                text + "\")");
  Schedule sch;
  sch.wait = v[0];
  sch.warmup = v[1];
  sch.active = v[2];
  if (v.size() > 3) sch.repeat = v[3];
  if (v.size() > 4) sch.skip_first = v[4];
  return sch;
}

}  // namespace

// Not ptprof's variables: one that is not a number is a warning, and the pair ignored.
std::optional<DistributedInfo> distributed_from_environment(std::vector<Status>* warnings) {
  static const char* const kPairs[][2] = {{"RANK", "WORLD_SIZE"},
                                          {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
                                          {"PMI_RANK", "PMI_SIZE"},
                                          {"SLURM_PROCID", "SLURM_NTASKS"}};
  for (const auto& pair : kPairs) {
    const char* rank = env_value(pair[0]);
    const char* size = env_value(pair[1]);
    if (rank == nullptr || size == nullptr) continue;
    auto number = [](const char* v, int64_t* out) {
      char* end = nullptr;
      errno = 0;
      const long long n = std::strtoll(v, &end, 10);
      if (*v == '\0' || *end != '\0' || errno != 0 || n < 0) return false;
      *out = n;
      return true;
    };
    DistributedInfo d;
    if (!number(rank, &d.rank) || !number(size, &d.world_size) || d.rank >= d.world_size) {
      warnings->emplace_back(
          StatusCode::kInvalidArgument,
          std::string(pair[0]) + "=\"" + rank + "\" and " + pair[1] + "=\"" + size +
              "\" are not a rank and a world size; no distributedInfo from them");
      continue;
    }
    return d;
  }
  return std::nullopt;
}

FlightRecorderOptions flight_with_environment(FlightRecorderOptions f) {
  if (env_flag("PTPROF_FLIGHT_RECORDER")) f.enabled = true;
  if (const char* v = env_value("PTPROF_FLIGHT_RECORDER_HANG_S"); v != nullptr && f.hang_seconds == 0) {
    char* end = nullptr;
    errno = 0;
    const double t = std::strtod(v, &end);
    if (*end != '\0' || errno != 0 || !(t >= 0) || t > 1e9)
      throw Error(std::string("ptprof: PTPROF_FLIGHT_RECORDER_HANG_S must be seconds >= 0 (got \"") +
                  v + "\")");
    f.hang_seconds = t;
  }
  if (f.enabled && f.dir.empty()) {
    const char* logdir = env_value("PTPROF_LOGDIR");
    f.dir = logdir != nullptr ? std::string(logdir) + "/flight" : "ptprof_flight";
  }
  return f;
}

Options with_environment(Options o, std::vector<Status>* warnings) {
  if (const char* v = env_value("PTPROF_LOGDIR"); v != nullptr && o.on_trace_ready.empty())
    o.on_trace_ready.push_back(tensorboard_trace_handler(v));
  if (const char* v = env_value("PTPROF_SCHEDULE"); v != nullptr && !o.schedule)
    o.schedule = schedule_from_env(v);
  if (const char* v = env_value("PTPROF_TRIGGER_FILE"); v != nullptr && o.trigger_file.empty())
    o.trigger_file = v;
  if (const char* v = env_value("PTPROF_TRIGGER_SIGNAL"); v != nullptr && o.trigger_signal == 0) {
    o.trigger_signal = signal_number(v);
    if (o.trigger_signal == 0)
      throw Error(
          std::string("ptprof: PTPROF_TRIGGER_SIGNAL names no signal ptprof takes (got \"") + v +
          "\"; SIGUSR1, SIGUSR2, SIGHUP, SIGURG or a number)");
  }
  if (env_flag("PTPROF_ON_DEMAND_ONLY")) o.on_demand_only = true;
  if (env_flag("PTPROF_CUDA_MEMORY_HISTORY")) o.cuda_memory_history.enabled = true;
  if (!o.distributed) o.distributed = distributed_from_environment(warnings);
  o.flight_recorder = flight_with_environment(std::move(o.flight_recorder));
  return o;
}

}  // namespace ptprof::detail
