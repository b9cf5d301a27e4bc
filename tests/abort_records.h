// abort_records.h: what a case that crashes or exits leaves behind: an
// abort record naming the signal or the exit, and the student function
// running, written from the signal handler or the exit hook (records.h).
#pragma once

#include <string>

namespace harness {

// Catches fatal signals and exits for the rest of the process.
void install_abort_handlers();
// The case now running (its abort record's text is made here, before any
// signal can need it), and whether one is running at all.
void case_begins(const std::string& name);
void case_ends();

}  // namespace harness
