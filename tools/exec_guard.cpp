// tools/exec_guard: starts an MPI launcher so that, once the job's ranks have
// all started, neither the launcher nor anything it starts can run a program.
//   build/exec_guard --program build/student/kit_tests --ranks 8 -- mpirun -n 8 build/student/kit_tests ...
//   (--program twice in the driven mode: the harness and the student's process, each started once per rank)
//   build/exec_guard --probe        exit 0 if this machine lets it guard a job, else 1 and why
// tools/kitrun puts it before the launcher when the grader asks (KIT_EXEC_GUARD).
//
// Why: the ranks run under a system-call filter that refuses execve, but MPI's
// launcher (mpirun, orted, Hydra's proxies) has none, and MPI's Comm_spawn, or
// PMIx's spawn, called by address from a rank asks the launcher to start a
// program: it would run outside the ranks' filter. So the launcher runs under
// a filter of its own whose execve and execveat go to this process
// (SECCOMP_RET_USER_NOTIF; Linux 5.5 for SECCOMP_USER_NOTIF_FLAG_CONTINUE,
// no root needed, Docker's and podman's default profiles allow seccomp and
// ioctl). While the job starts, each exec is let through; every exec of the
// test program is counted, and once `--ranks` of them have run, every exec
// of the job is refused with EPERM, for good. No student code runs before
// then: it runs in a rank after MPI's Init, which waits for every rank.
// If this process dies, the kernel fails the job's execs (ENOSYS): it fails closed.
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

// The filter's first test: the architecture of this build's system calls
// (install_filter refuses to guard on any but these two).
#if defined(__aarch64__)
constexpr unsigned kArch = AUDIT_ARCH_AARCH64;
#else
constexpr unsigned kArch = AUDIT_ARCH_X86_64;
#endif

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "exec_guard: %s\nusage: exec_guard --program PATH [--program PATH] --ranks N -- LAUNCHER [ARGS...]\n"
               "       exec_guard --probe\n",
               why);
  std::exit(2);
}

// The launcher's filter: execve and execveat go to the listener; a call of
// another ABI (int 0x80 on x86-64, x32 numbers) is refused, since no
// launcher makes one and it would pass the numbers below.
int install_filter(std::string& why) {
#if !defined(__x86_64__) && !defined(__aarch64__)
  why = "only x86-64 and aarch64 are supported";
  return -1;
#else
  const unsigned refused = SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA);
  std::vector<sock_filter> ops = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kArch, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, refused),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
#if defined(__x86_64__)
      BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u /* __X32_SYSCALL_BIT */, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, refused),
#endif
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<unsigned>(SYS_execve), 1, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<unsigned>(SYS_execveat), 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog program{static_cast<unsigned short>(ops.size()), ops.data()};
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    why = std::string("PR_SET_NO_NEW_PRIVS: ") + std::strerror(errno);
    return -1;
  }
  const long fd = ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &program);
  if (fd < 0) {
    why = std::string("a seccomp filter with a listener (Linux 5.0+, not in this container's profile?): ") +
          std::strerror(errno);
    return -1;
  }
  return static_cast<int>(fd);
#endif
}

// The path an execve asks for, read from the asking process's memory (it
// waits in the call); a relative one is taken from its working directory.
bool exec_path(const seccomp_notif& req, std::string& path) {
  const std::string proc = "/proc/" + std::to_string(req.pid);
  const int mem = ::open((proc + "/mem").c_str(), O_RDONLY | O_CLOEXEC);
  if (mem < 0) return false;
  char buffer[4097];
  const ssize_t got = ::pread(mem, buffer, sizeof buffer - 1, static_cast<off_t>(req.data.args[0]));
  ::close(mem);
  if (got <= 0) return false;
  buffer[got] = '\0';
  path = buffer;
  if (!path.empty() && path[0] != '/') path = proc + "/cwd/" + path;
  return true;
}

struct Program {
  dev_t dev = 0;
  ino_t ino = 0;
  long started = 0;  // its execs let through
};

struct Job {
  std::vector<Program> programs;  // each runs once per rank
  long ranks = 0;
  bool closed = false;

  // Whether every program has started on every rank.
  bool all_started() const {
    for (const Program& p : programs)
      if (p.started < ranks) return false;
    return true;
  }
};

// Lets the exec through while the job starts; refuses it once every rank has.
// A CONTINUE reply needs Linux 5.5: an older kernel refuses the reply, the
// exec fails, and so does the job (the probe said so first).
void answer(int listener, Job& job) {
  seccomp_notif req{};
  if (::ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req) != 0) return;  // the caller went away (a signal)
  seccomp_notif_resp resp{};
  resp.id = req.id;
  if (job.closed) {
    resp.error = -EPERM;
  } else {
    std::string path;
    struct stat st {};
    if (req.data.nr == SYS_execve && exec_path(req, path) && ::stat(path.c_str(), &st) == 0)
      for (Program& p : job.programs)
        if (st.st_dev == p.dev && st.st_ino == p.ino) ++p.started;
    // The memory read must have been the waiting caller's, not a new process's of the same pid.
    if (::ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &req.id) != 0) return;
    resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
    if (job.all_started()) job.closed = true;
  }
  ::ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
}

// The launcher's status as ours: its exit code, or the signal that ended it.
[[noreturn]] void end_as(int status) {
  if (WIFSIGNALED(status)) {
    ::signal(WTERMSIG(status), SIG_DFL);
    ::kill(::getpid(), WTERMSIG(status));
  }
  std::exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}

// Answers the job's execs until `child` ends: its wait status, or -1 if it
// can't be waited for. The child's pidfd (Linux 5.3) wakes the wait the
// moment it ends; where the kernel or a container's profile refuses one,
// the wait looks every 10 ms instead. (A fixed 100 ms look cost each job's
// end 50 ms on average, and the probe's two children 200 ms.)
int serve_until_end(int listener, pid_t child, Job& job) {
#ifdef SYS_pidfd_open
  const int ended = static_cast<int>(::syscall(SYS_pidfd_open, child, 0));
#else
  const int ended = -1;
#endif
  pollfd fds[2] = {{listener, POLLIN, 0}, {ended, POLLIN, 0}};  // poll skips a negative descriptor
  int status = 0;
  for (;;) {
    const pid_t done = ::waitpid(child, &status, WNOHANG);
    if (done == child) break;
    if (done < 0 && errno != EINTR) {
      status = -1;
      break;
    }
    const int ready = ::poll(fds, 2, ended >= 0 ? -1 : 10);
    if (ready > 0 && (fds[0].revents & POLLIN)) answer(listener, job);
    // No task holds the filter any more: only the child's end is left to wait for.
    else if (ready > 0 && (fds[0].revents & (POLLHUP | POLLERR | POLLNVAL))) fds[0].fd = -1;
  }
  if (ended >= 0) ::close(ended);
  return status;
}

int supervise(int listener, pid_t launcher, Job& job) {
  const int status = serve_until_end(listener, launcher, job);
  if (status < 0) return 1;
  end_as(status);
}

// A child that execs /bin/true under the guard: its wait status.
int exec_true(int listener, Job& job) {
  const pid_t child = ::fork();
  if (child == 0) {
    ::execl("/bin/true", "true", static_cast<char*>(nullptr));
    ::_exit(errno == EPERM ? 3 : 4);
  }
  return serve_until_end(listener, child, job);
}

// Guards a child that execs /bin/true, then tries again: the first must run,
// the second be refused. Exit 0 when both did.
int probe() {
  std::string why;
  const int listener = install_filter(why);
  if (listener < 0) {
    std::fprintf(stderr, "exec_guard: %s\n", why.c_str());
    return 1;
  }
  Job job;
  struct stat st {};
  if (::stat("/bin/true", &st) != 0) return 1;
  job.programs.push_back({st.st_dev, st.st_ino, 0});
  job.ranks = 1;
  const int status = exec_true(listener, job);
  const int refused = exec_true(listener, job);
  const bool ran = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  const bool stopped = WIFEXITED(refused) && WEXITSTATUS(refused) == 3;
  if (!ran || !stopped) {
    std::fprintf(stderr, "exec_guard: %s\n",
                 !ran ? "an exec let through did not run (SECCOMP_USER_NOTIF_FLAG_CONTINUE needs Linux 5.5; or "
                        "this process may not read its child's memory)"
                      : "an exec after the job started was not refused");
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "--probe") == 0) return probe();
  Job job;
  int at = 1;
  for (; at < argc && std::strcmp(argv[at], "--") != 0; ++at) {
    if (std::strcmp(argv[at], "--program") == 0 && at + 1 < argc) {
      const char* program = argv[++at];
      struct stat st {};
      if (::stat(program, &st) != 0) usage((std::string(program) + ": " + std::strerror(errno)).c_str());
      job.programs.push_back({st.st_dev, st.st_ino, 0});
    } else if (std::strcmp(argv[at], "--ranks") == 0 && at + 1 < argc) {
      job.ranks = std::strtol(argv[++at], nullptr, 10);
    } else {
      usage((std::string("unknown argument ") + argv[at]).c_str());
    }
  }
  if (job.programs.empty() || job.ranks <= 0 || at + 1 >= argc)
    usage("--program, --ranks and a launcher after -- are needed");
  std::string why;
  const int listener = install_filter(why);
  if (listener < 0) {
    std::fprintf(stderr, "exec_guard: %s\n", why.c_str());
    return 2;
  }
  const pid_t launcher = ::fork();
  if (launcher < 0) {
    std::perror("exec_guard: fork");
    return 2;
  }
  if (launcher == 0) {
    ::close(listener);
    ::execvp(argv[at + 1], argv + at + 1);
    std::fprintf(stderr, "exec_guard: %s: %s\n", argv[at + 1], std::strerror(errno));
    ::_exit(127);
  }
  return supervise(listener, launcher, job);
}
