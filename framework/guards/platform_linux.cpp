// platform_linux.cpp: platform.h on Linux: prctl(2), /proc, rlimits,
// glibc's malloc and backtrace, binutils' addr2line. The system-call filter
// (seccomp(2)) is syscall_filter.cpp.
#include "platform.h"

#include <dirent.h>
#include <dlfcn.h>
#include <execinfo.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <vector>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>

extern char** environ;

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

namespace {

// Opened once and read again from its start at each look: after
// restrict_system_calls the process can open nothing, and /proc/loadavg is
// written anew at every read from offset 0.
int loadavg_fd() {
  static const int fd = ::open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
  return fd;
}

}  // namespace

int runnable_tasks() {
  // The 4th field of /proc/loadavg: "runnable/total".
  const int fd = loadavg_fd();
  if (fd < 0) return 0;
  char text[128];
  const ssize_t n = ::pread(fd, text, sizeof text - 1, 0);
  if (n <= 0) return 0;
  text[n] = '\0';
  double one, five, fifteen;
  int runnable = 0, total = 0;
  const bool ok = std::sscanf(text, "%lf %lf %lf %d/%d", &one, &five, &fifteen, &runnable, &total) == 5;
  return ok ? std::max(1, runnable - 1) : 0;
}

void forbid_reading_memory() { ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0); }

namespace {

void lower_for_good(int resource, long long bytes) {
  rlimit now{};
  if (::getrlimit(resource, &now) != 0) return;
  const rlim_t wanted = static_cast<rlim_t>(bytes);
  if (now.rlim_max != RLIM_INFINITY && now.rlim_max <= wanted) return;
  // The hard limit too: raising it back takes a privilege no rank has.
  const rlimit lower{std::min(now.rlim_cur, wanted), wanted};
  ::setrlimit(resource, &lower);
}

}  // namespace

void limit_private_memory(long long bytes) { lower_for_good(RLIMIT_DATA, bytes); }

// The kernel checks the limit each time the stack grows, so lowering it
// now bounds the main thread's stack from here on.
void limit_main_stack(long long bytes) { lower_for_good(RLIMIT_STACK, bytes); }

bool set_thread_stack_size(long long bytes) {
  pthread_attr_t attr;
  if (::pthread_attr_init(&attr) != 0) return false;
  const bool set = ::pthread_attr_setstacksize(&attr, static_cast<size_t>(bytes)) == 0 &&
                   ::pthread_setattr_default_np(&attr) == 0;
  ::pthread_attr_destroy(&attr);
  return set;
}

long long private_memory_limit() {
  rlimit now{};
  if (::getrlimit(RLIMIT_DATA, &now) != 0 || now.rlim_cur == RLIM_INFINITY) return -1;
  return static_cast<long long>(now.rlim_cur);
}

void tune_malloc(long mmap_threshold, long trim_threshold) {
  ::mallopt(M_MMAP_THRESHOLD, static_cast<int>(mmap_threshold));
  ::mallopt(M_TRIM_THRESHOLD, static_cast<int>(trim_threshold));
}

void release_free_memory() { ::malloc_trim(0); }

namespace {

// addr2line's answer for these offsets in `object`: "file:line" per frame,
// inlined callers included (-i), innermost first.
std::vector<std::string> addr2line(const std::string& object, const std::vector<unsigned long>& offsets) {
  if (::access(object.c_str(), R_OK) != 0) return {};
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return {};
  std::vector<std::string> args = {"addr2line", "-i", "-e", object};
  for (unsigned long offset : offsets) {
    char hex[32];
    std::snprintf(hex, sizeof hex, "%#lx", offset);
    args.push_back(hex);
  }
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, "addr2line", &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out[1]);
  std::string text;
  if (spawned == 0) {
    char buffer[4096];
    for (ssize_t n; (n = ::read(out[0], buffer, sizeof buffer)) > 0;) text.append(buffer, static_cast<size_t>(n));
    int status = 0;
    ::waitpid(pid, &status, 0);
  }
  ::close(out[0]);
  std::vector<std::string> lines;
  std::stringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

}  // namespace

std::vector<std::string> call_stack_lines() {
  void* frames[64];
  const int depth = ::backtrace(frames, 64);
  // Frames by the object they are in, as offsets into it (what addr2line reads).
  std::map<std::string, std::vector<unsigned long>> by_object;
  std::vector<std::string> order;
  for (int i = 0; i < depth; ++i) {
    Dl_info info{};
    // A return address points after the call: one byte back is inside it.
    const auto address = reinterpret_cast<unsigned long>(frames[i]) - 1;
    if (::dladdr(reinterpret_cast<void*>(address), &info) == 0 || info.dli_fname == nullptr) continue;
    std::string object = info.dli_fname;
    if (object.find(".so") != std::string::npos) continue;  // MPI, libc: never the kit's or a student's code
    // The executable itself may be named by a relative path, or not at all.
    if (object.empty() || object.find('/') == std::string::npos) object = "/proc/self/exe";
    if (by_object.find(object) == by_object.end()) order.push_back(object);
    by_object[object].push_back(address - reinterpret_cast<unsigned long>(info.dli_fbase));
  }
  std::vector<std::string> lines;
  for (const std::string& object : order)
    for (std::string& line : addr2line(object, by_object[object])) lines.push_back(std::move(line));
  return lines;
}

}  // namespace dtrain::platform
