// student_line.cpp: the call stack's first frame in a student file. The
// student files are compiled with line tables (-g1, CMakeLists.txt); binutils'
// addr2line, which g++ brings, turns return addresses into file:line.
#include "student_line.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <sstream>
#include <vector>

extern char** environ;

namespace dtrain {

namespace {

// The student files by name, wherever they were compiled from (student/,
// reference/, the grader's scratch directory).
const char* const kStudentFiles[] = {"func_impl.cpp", "data_parallel_preprocess.cpp", "zero_dp_stage3.cpp"};

bool is_student_file(const std::string& path) {
  for (const char* name : kStudentFiles) {
    const std::string n(name);
    if (path.size() >= n.size() && path.compare(path.size() - n.size(), n.size(), n) == 0 &&
        (path.size() == n.size() || path[path.size() - n.size() - 1] == '/'))
      return path.find("/framework/") == std::string::npos;
  }
  return false;
}

// addr2line's answer for these offsets in `object`: "file:line" per frame,
// inlined callers included (-i), innermost first.
std::vector<std::string> resolve(const std::string& object, const std::vector<unsigned long>& offsets) {
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

std::string student_line_now() {
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
    if (object.find(".so") != std::string::npos) continue;  // MPI, libc: never student code
    // The executable itself may be named by a relative path, or not at all.
    if (object.empty() || object.find('/') == std::string::npos) object = "/proc/self/exe";
    if (by_object.find(object) == by_object.end()) order.push_back(object);
    by_object[object].push_back(address - reinterpret_cast<unsigned long>(info.dli_fbase));
  }
  for (const std::string& object : order) {
    for (const std::string& where : resolve(object, by_object[object])) {
      const size_t colon = where.rfind(':');
      if (colon == std::string::npos || !is_student_file(where.substr(0, colon))) continue;
      std::string line = where.substr(colon + 1);
      line = line.substr(0, line.find(' '));  // "57 (discriminator 2)"
      if (line.empty() || line == "?" || line == "0") continue;
      const std::string path = where.substr(0, colon);
      return "student/" + path.substr(path.rfind('/') + 1) + ":" + line;
    }
  }
  return "";
}

}  // namespace dtrain
