// comm_side_strays.cpp: the processes a driven call of the student's
// process left running (comm_side_child.h, end_strays). The side is the
// subreaper of what it starts, so an orphan of that process comes to it,
// not to init; the student's process can't hide one from the side.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "comm_side_child.h"

namespace dtrain::side {

namespace {

// The children of each thread of `pid` (/proc/PID/task/TID/children): cheap
// enough to read at every call's return, unlike a walk of /proc.
std::vector<pid_t> children_of(pid_t pid) {
  std::vector<pid_t> out;
  const std::string tasks = "/proc/" + std::to_string(pid) + "/task";
  DIR* dir = ::opendir(tasks.c_str());
  if (dir == nullptr) return out;
  while (const dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] == '.') continue;
    const std::string path = tasks + "/" + entry->d_name + "/children";
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    char text[4096];
    const ssize_t n = ::read(fd, text, sizeof text - 1);
    ::close(fd);
    if (n <= 0) continue;
    text[n] = '\0';
    for (char* at = text; *at != '\0';) {
      char* end = nullptr;
      const long child = std::strtol(at, &end, 10);
      if (end == at) break;
      if (child > 0) out.push_back(static_cast<pid_t>(child));
      at = end;
    }
  }
  ::closedir(dir);
  return out;
}

// Whether `pid` has ended and waits for its parent (a zombie): the
// student's process's own, which only it can reap, run nothing.
bool ended(pid_t pid) {
  const std::string path = "/proc/" + std::to_string(pid) + "/stat";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return true;
  char text[512];
  const ssize_t n = ::read(fd, text, sizeof text - 1);
  ::close(fd);
  if (n <= 0) return true;
  text[n] = '\0';
  const char* after_name = std::strrchr(text, ')');  // "pid (name) state ..."
  return after_name == nullptr || after_name[1] == '\0' || after_name[2] == 'Z' || after_name[2] == 'X';
}

// The strays now: the student's process's live children, and this side's but the two programs.
std::vector<pid_t> stray_roots(pid_t harness, pid_t student) {
  std::vector<pid_t> roots;
  for (pid_t p : children_of(student))
    if (!ended(p)) roots.push_back(p);
  for (pid_t p : children_of(::getpid()))
    if (p != harness && p != student) roots.push_back(p);
  return roots;
}

}  // namespace

int end_strays(pid_t harness, pid_t student) {
  std::vector<pid_t> todo = stray_roots(harness, student);
  if (todo.empty()) return 0;
  // The student's process leads a group its strays share unless they left
  // it: one signal stops them all, and a fork under way when it comes fails
  // rather than start one more. The walk below finds any that left.
  const bool grouped = ::getpgid(student) == student;
  if (grouped) ::kill(-student, SIGSTOP);
  // Stopped as they are found, so that one that keeps forking can't outrun the walk.
  std::set<pid_t> stopped;
  for (int round = 0; round < 500 && !todo.empty(); ++round) {
    std::vector<pid_t> next;
    for (pid_t p : todo) {
      if (!stopped.insert(p).second) continue;
      ::kill(p, SIGSTOP);
      for (pid_t c : children_of(p)) next.push_back(c);
    }
    for (pid_t p : stray_roots(harness, student))
      if (!stopped.count(p)) next.push_back(p);
    todo = std::move(next);
  }
  for (pid_t p : stopped) ::kill(p, SIGKILL);
  if (grouped) ::kill(student, SIGCONT);  // it waits for its next call, as before
  // A killed process is a stray until it has died: the next call's return
  // must not find it still exiting (on a busy host it may wait for a CPU)
  // and count it again, against a case that started nothing.
  std::vector<pid_t> dying(stopped.begin(), stopped.end());
  for (int round = 0; round < 2000 && !dying.empty(); ++round) {
    dying.erase(std::remove_if(dying.begin(), dying.end(), [](pid_t p) { return ended(p); }), dying.end());
    if (!dying.empty()) ::usleep(500);
  }
  // The orphans are this side's children: reaped by their own numbers, never
  // by waitpid(-1), which could take the harness's or the student's status.
  for (int round = 0; round < 100; ++round) {
    std::vector<pid_t> left = children_of(::getpid());
    left.erase(std::remove_if(left.begin(), left.end(), [&](pid_t p) { return p == harness || p == student; }),
               left.end());
    if (left.empty()) break;
    for (pid_t p : left)
      if (::waitpid(p, nullptr, WNOHANG) == 0) ::kill(p, SIGKILL);
    ::usleep(1000);
  }
  return static_cast<int>(stopped.size());
}

}  // namespace dtrain::side
