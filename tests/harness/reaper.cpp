// reaper.cpp: ends the processes a case left (reaper.h).
#include "reaper.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <set>

#include "platform.h"

namespace harness {

// They are stopped first, so that a process that keeps forking can't outrun
// us; this process is their subreaper (see main), so none escapes to init.
int end_stray_processes() {
  // The usual case, without a look at the process table: no child at all, so no descendant
  // either (an orphaned grandchild would have become our child).
  if (::waitpid(-1, nullptr, WNOHANG) == -1 && errno == ECHILD) return 0;
  std::set<pid_t> stopped;
  for (int round = 0; round < 500; ++round) {
    bool new_ones = false;
    for (pid_t pid : dtrain::platform::descendants(::getpid())) {
      if (stopped.insert(pid).second) {
        ::kill(pid, SIGSTOP);
        new_ones = true;
      }
    }
    if (!new_ones) break;
  }
  for (pid_t pid : stopped) ::kill(pid, SIGKILL);
  for (int round = 0; round < 100 && !dtrain::platform::descendants(::getpid()).empty(); ++round) {
    for (pid_t pid : dtrain::platform::descendants(::getpid())) ::kill(pid, SIGKILL);
    while (::waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    ::usleep(1000);
  }
  while (::waitpid(-1, nullptr, WNOHANG) > 0) {
  }
  return static_cast<int>(stopped.size());
}

}  // namespace harness
