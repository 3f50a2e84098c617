// crash.h: the flight recorder's crash dump. A fatal signal's handler does only what is safe
// in a signal handler: it writes the raw rings (flight_format.h) with write(2) into a file
// opened in advance, links it into place under its final name, puts the previous action back
// and lets the signal go on to it (or to the default action), so core dumps and exit statuses
// are unchanged. `ptprof` reads the raw dump later.
//
// - One crashing thread at a time: another thread that faults meanwhile waits for it (up to
//   5 s), then takes the previous action itself.
// - A thread that faults again inside the handler takes the previous action at once.
// - std::terminate (an uncaught exception, a failed TORCH_CHECK nobody caught) keeps the
//   exception's type and what() for the dump, then calls the previous terminate handler,
//   whose abort() brings the SIGABRT that writes it. c10d's exceptions about a timed-out
//   collective (NCCL's watchdog rethrows one on its thread) make it a collective timeout.
// - The file is an O_TMPFILE where the filesystem has them (a process killed by SIGKILL then
//   leaves nothing), else a hidden temporary file removed when the recorder stops.
// - A process forked after the handlers were installed does not dump from the child (it
//   would share the parent's file).
#pragma once

#include <string>

#include "trace/flight_format.h"

namespace ptprof::detail::flight {

// What the handler writes besides the live rings: the header's identity, options and clock
// reference (the handler fills the rest), and where the dump goes.
struct CrashSetup {
  std::string dir;
  std::string worker;
  FileHeader header{};
};

// Opens the dump's file in `setup.dir` and installs the handlers (SIGSEGV, SIGBUS, SIGFPE,
// SIGILL, SIGABRT, on an alternate stack where the thread has one) and the terminate handler.
// "" on success, else why not (the file could not be opened).
std::string install_crash_handlers(const CrashSetup& setup);
// Puts the previous handlers back and removes the unused file.
void uninstall_crash_handlers();
// In a child forked while they were installed: puts the previous handlers back and closes the
// child's copy of the file, leaving the parent's file where it is.
void forget_crash_handlers_after_fork();

// The raw dump of the live rings, written to `fd` with write(2) alone (async-signal-safe).
// `header` gets the sections' counts. False when a write failed.
bool write_raw_dump(int fd, FileHeader* header);

// Fills the header's dump time and clock pairs now (async-signal-safe).
void stamp_now(FileHeader* header);

}  // namespace ptprof::detail::flight
