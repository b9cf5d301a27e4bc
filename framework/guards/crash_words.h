// crash_words.h: how the kit says a program ended by a signal, in one place:
// a test program's own handler (tests/harness/abort_records.cpp) and the
// driven harness, which learns it from the MPI side (framework/calls/driven_harness.cpp).
// Signal-safe: constant text only.
#pragma once

#include <csignal>

namespace dtrain {

// A process that exited while a case ran (exit() in the student's code).
inline constexpr const char* kExitedWords = "the process exited in the middle of the case (exit() or quick_exit() called?)";

inline const char* crash_words(int sig) {
  return sig == SIGSEGV   ? "crashed with SIGSEGV (invalid memory access)"
         : sig == SIGBUS  ? "crashed with SIGBUS (invalid memory access)"
         : sig == SIGFPE  ? "crashed with SIGFPE (arithmetic error, e.g. integer division by zero)"
         : sig == SIGILL  ? "crashed with SIGILL (illegal instruction)"
         : sig == SIGABRT ? "aborted (SIGABRT: abort(), a failed assert, or an uncaught exception)"
         : sig == SIGKILL ? "was killed (SIGKILL: a limit, or from outside)"
                          : "was ended by a signal";
}

}  // namespace dtrain
