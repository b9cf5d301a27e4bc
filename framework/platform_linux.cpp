// platform_linux.cpp: platform.h on Linux: prctl(2) and /proc.
#include "platform.h"

#include <dirent.h>
#include <fcntl.h>
#include <malloc.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>

namespace dtrain::platform {

void adopt_orphans() { ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); }

std::vector<pid_t> descendants(pid_t pid) {
  std::map<pid_t, std::vector<pid_t>> children_of;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return {};
  while (const dirent* entry = ::readdir(proc)) {
    const pid_t child = static_cast<pid_t>(std::atol(entry->d_name));
    if (child <= 0) continue;
    char path[64], stat[512];
    std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(child));
    const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    const ssize_t n = ::read(fd, stat, sizeof stat - 1);
    ::close(fd);
    if (n <= 0) continue;
    stat[n] = '\0';
    const char* after_name = std::strrchr(stat, ')');  // "pid (name) state ppid ..."
    char state = 0;
    int ppid = 0;
    if (after_name && std::sscanf(after_name + 1, " %c %d", &state, &ppid) == 2) children_of[ppid].push_back(child);
  }
  ::closedir(proc);
  std::vector<pid_t> found;
  std::vector<pid_t> todo = {pid};
  while (!todo.empty()) {
    const pid_t parent = todo.back();
    todo.pop_back();
    for (pid_t child : children_of[parent]) {
      found.push_back(child);
      todo.push_back(child);
    }
  }
  return found;
}

int runnable_tasks() {
  // The 4th field of /proc/loadavg: "runnable/total".
  std::FILE* f = std::fopen("/proc/loadavg", "re");
  if (!f) return 0;
  double one, five, fifteen;
  int runnable = 0, total = 0;
  const bool ok = std::fscanf(f, "%lf %lf %lf %d/%d", &one, &five, &fifteen, &runnable, &total) == 5;
  std::fclose(f);
  return ok ? std::max(1, runnable - 1) : 0;
}

void forbid_reading_memory() { ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0); }

std::int64_t resident_bytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "re");
  if (!f) return 0;
  long size = 0, resident = 0;
  const int got = std::fscanf(f, "%ld %ld", &size, &resident);
  std::fclose(f);
  return got == 2 ? static_cast<std::int64_t>(resident) * ::sysconf(_SC_PAGESIZE) : 0;
}

void tune_malloc(long mmap_threshold, long trim_threshold) {
  ::mallopt(M_MMAP_THRESHOLD, static_cast<int>(mmap_threshold));
  ::mallopt(M_TRIM_THRESHOLD, static_cast<int>(trim_threshold));
}

}  // namespace dtrain::platform
