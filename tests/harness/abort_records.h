// abort_records.h: what a case that crashes or exits leaves behind: an
// abort record naming the signal or the exit, and the student function
// running, written from the signal handler or the exit hook (records.h).
#pragma once

#include <cstddef>
#include <string>

#include "heap_watch.h"

namespace harness {

// The memory budget's refusal in words, into `out` (async-signal-safe: a
// crash after a refused block says it too):
//   "over its memory budget: get_info asked for a block of 572.2 MiB while the
//    rank held 12.3 MiB; a rank may hold 64.0 MiB of heap at once, on every
//    machine (handout: Memory)"
void budget_refusal_text(char* out, std::size_t size, const dtrain::heap_budget::Refusal& refusal);

// Catches fatal signals and exits for the rest of the process.
void install_abort_handlers();
// The case now running (its abort record's text is made here, before any
// signal can need it), and whether one is running at all.
void case_begins(const std::string& name);
void case_ends();

// The driven mode: the rank's student process ended during a call of the
// case (`why`, as a crash or an exit of this process would say it). Its
// abort record goes out and the job ends, as if this process had crashed:
// the runner starts the remaining cases in a new job.
[[noreturn]] void student_process_ended(const std::string& why);

}  // namespace harness
