#include "recording/on_demand.h"

#include <csignal>
#include <cstdlib>
#include <string>

namespace ptprof::detail {

namespace {

std::string_view trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string_view::npos) return {};
  const auto e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

bool parse_int(std::string_view v, int64_t* out) {
  if (v.empty() || v.size() > 18) return false;
  int64_t n = 0;
  for (char c : v) {
    if (c < '0' || c > '9') return false;
    n = n * 10 + (c - '0');
  }
  *out = n;
  return true;
}

}  // namespace

StatusOr<Trigger> parse_trigger(std::string_view text) {
  auto invalid = [](std::string message) {
    return Status(StatusCode::kInvalidArgument, std::move(message));
  };
  Trigger t;
  int line_no = 0;
  while (!text.empty()) {
    ++line_no;
    const auto nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (const auto hash = line.find('#'); hash != std::string_view::npos)
      line = line.substr(0, hash);
    line = trim(line);
    if (line.empty()) continue;
    const std::string where = "line " + std::to_string(line_no) + ": ";
    const auto eq = line.find('=');
    if (eq == std::string_view::npos)
      return invalid(where + "expected KEY=VALUE, got \"" + std::string(line) + "\"");
    const std::string key(trim(line.substr(0, eq)));
    const std::string_view value = trim(line.substr(eq + 1));
    t.empty = t.empty && key == "DUMP";
    // Each key's value, or the line's error.
    auto number = [&](int64_t* dst, int64_t min) {
      int64_t n = 0;
      if (!parse_int(value, &n) || n < min)
        return invalid(where + key + " must be a whole number >= " + std::to_string(min) +
                       " (got \"" + std::string(value) + "\")");
      *dst = n;
      return ok_status();
    };
    auto flag = [&](std::optional<bool>* dst) {
      if (value == "1" || value == "true") {
        *dst = true;
      } else if (value == "0" || value == "false") {
        *dst = false;
      } else {
        return invalid(where + key + " must be 0 or 1 (got \"" + std::string(value) + "\")");
      }
      return ok_status();
    };
    Status st;
    if (key == "STEPS") {
      st = number(&t.steps, 1);
    } else if (key == "WARMUP") {
      st = number(&t.warmup, 0);
    } else if (key == "START_STEP") {
      int64_t s = 0;
      st = number(&s, 0);
      t.start_step = s;
    } else if (key == "ROUNDUP") {
      st = number(&t.roundup, 1);
    } else if (key == "OUTPUT") {
      if (value.empty()) st = invalid(where + "OUTPUT is empty");
      t.output = std::string(value);
    } else if (key == "RECORD_SHAPES") {
      st = flag(&t.record_shapes);
    } else if (key == "PROFILE_MEMORY") {
      st = flag(&t.profile_memory);
    } else if (key == "WITH_STACK") {
      st = flag(&t.with_stack);
    } else if (key == "WITH_FLOPS") {
      st = flag(&t.with_flops);
    } else if (key == "REPORT") {
      st = flag(&t.report);
    } else if (key == "CUDA_MEMORY") {
      st = flag(&t.cuda_memory);
    } else if (key == "DUMP") {
      std::optional<bool> dump;
      st = flag(&dump);
      t.dump = dump.value_or(false);
    } else {
      st = invalid(where + "unknown key " + key +
                   " (known: STEPS, WARMUP, START_STEP, ROUNDUP, OUTPUT, RECORD_SHAPES, "
                   "PROFILE_MEMORY, WITH_STACK, WITH_FLOPS, REPORT, CUDA_MEMORY, DUMP)");
    }
    if (!st.ok()) return st;
  }
  if (t.start_step && t.roundup != 1) return invalid("START_STEP and ROUNDUP exclude each other");
  return t;
}

std::optional<int64_t> first_active_step(const Trigger& t, int64_t now) {
  if (t.start_step) {
    if (*t.start_step < now) return std::nullopt;
    return *t.start_step;
  }
  // The smallest multiple of ROUNDUP whose warmup starts at `now` or later.
  const int64_t earliest = now + t.warmup;
  return (earliest + t.roundup - 1) / t.roundup * t.roundup;
}

std::optional<ProfilerAction> demand_action(const Trigger& t, int64_t start, int64_t step) {
  if (step < start - t.warmup) return ProfilerAction::NONE;
  if (step < start) return ProfilerAction::WARMUP;
  if (step < start + t.steps - 1) return ProfilerAction::RECORD;
  if (step == start + t.steps - 1) return ProfilerAction::RECORD_AND_SAVE;
  return std::nullopt;
}

int signal_number(std::string_view name) {
  int64_t n = 0;
  if (parse_int(name, &n)) return n > 0 && n < 65 ? static_cast<int>(n) : 0;
  if (name.substr(0, 3) == "SIG") name.remove_prefix(3);
  if (name == "USR1") return SIGUSR1;
  if (name == "USR2") return SIGUSR2;
  if (name == "HUP") return SIGHUP;
  if (name == "URG") return SIGURG;
  return 0;
}

}  // namespace ptprof::detail
