// comm_side_child.cpp: how a rank's MPI side starts its program
// (comm_side_child.h): the program's environment without MPI's variables,
// and no descriptor of the side's but the link's two ends.
#include "comm_side_child.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "comm_link.h"
#include "side_page.h"

extern char** environ;

namespace dtrain::side {

namespace {

// Each MPI's variables, which would let the child join the job by itself.
bool mpi_variable(const char* entry) {
  for (const char* prefix : {"OMPI_", "PMIX_", "PMI_", "HYDRA_", "MPIR_", "MPICH_", "OPAL_", "ORTE_", "PRTE_"})
    if (std::strncmp(entry, prefix, std::strlen(prefix)) == 0) return true;
  return false;
}

// Every descriptor but the standard three and `kept` closes when the child
// starts its program: whatever the launcher or MPI opened (MPI starts
// before the child in a job of hidden cases) stays the side's.
void close_on_exec_all_but(std::vector<int> kept) {
  kept.erase(std::remove_if(kept.begin(), kept.end(), [](int fd) { return fd < 3; }), kept.end());
  std::sort(kept.begin(), kept.end());
#ifdef SYS_close_range
  constexpr unsigned kCloexec = 1u << 2;  // CLOSE_RANGE_CLOEXEC (Linux 5.11)
  bool ranged = true;
  unsigned from = 3;
  for (int fd : kept) {
    const unsigned at = static_cast<unsigned>(fd);
    if (at > from) ranged = ranged && syscall(SYS_close_range, from, at - 1, kCloexec) == 0;
    from = std::max(from, at + 1);
  }
  ranged = ranged && syscall(SYS_close_range, from, ~0u, kCloexec) == 0;
  if (ranged) return;
#endif
  // An older kernel (or an emulator without close_range): each open descriptor, as /proc lists them.
  if (DIR* dir = opendir("/proc/self/fd")) {
    const int own = dirfd(dir);
    while (const dirent* entry = readdir(dir)) {
      const int fd = std::atoi(entry->d_name);
      if (fd > 2 && fd != own && std::find(kept.begin(), kept.end(), fd) == kept.end()) fcntl(fd, F_SETFD, FD_CLOEXEC);
    }
    closedir(dir);
  }
}

}  // namespace

// The rank as the launcher announced it, before MPI starts (each MPI names it differently); -1 if none did.
std::string launcher_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"}) {
    const char* value = std::getenv(name);
    if (value != nullptr && *value != '\0') return value;
  }
  return "-1";
}

[[noreturn]] void start_child(char** argv, int link_end, int control_end, pid_t parent, int page) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);  // the child never outlives its side
  if (getppid() != parent) _exit(70);
  // A program with no control pipe (the student's, in the driven mode) keeps the link alone.
  close_on_exec_all_but({link_end, control_end, page});
  for (int fd : {link_end, control_end, page})
    if (fd >= 0) fcntl(fd, F_SETFD, 0);
  if (page >= 0) setenv(side_page::kEnvVariable, std::to_string(page).c_str(), 1);
  const std::string rank = launcher_rank();
  std::vector<std::string> names;
  for (char** e = environ; *e != nullptr; ++e)
    if (mpi_variable(*e)) names.emplace_back(*e, std::strchr(*e, '=') - *e);
  for (const auto& name : names) unsetenv(name.c_str());
  setenv(link::kEnvVariable, (std::to_string(link_end) + "," + std::to_string(control_end)).c_str(), 1);
  setenv("KIT_LAUNCHER_RANK", rank.c_str(), 1);
  execv(argv[0], argv);
  std::fprintf(stderr, "kit_mpi_side: cannot start %s: %s\n", argv[0], std::strerror(errno));
  _exit(127);
}

// The runner's directory for the job's channels, from the test program's
// arguments; "" for a program the runner did not start (a trainer).
std::string results_dir(char** program_argv) {
  std::string dir;
  for (char** a = program_argv + 1; *a != nullptr; ++a)
    if (std::strncmp(*a, "--results=", 10) == 0) dir = *a + 10;
  return dir;
}

}  // namespace dtrain::side
