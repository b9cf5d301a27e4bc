// reaper.h: a case may not leave processes behind. The test binary is its
// processes' subreaper (platform.h), so every process a case started, and
// theirs, stays below it, and is ended after the case.
#pragma once

namespace harness {

// Ends every process below this one; returns how many there were.
int end_stray_processes();

}  // namespace harness
