// platform_linux.cpp: platform.h on Linux: prctl(2), seccomp(2), /proc,
// glibc's malloc and backtrace, binutils' addr2line.
#include "platform.h"

#include <dirent.h>
#include <dlfcn.h>
#include <execinfo.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <malloc.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
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

#if defined(__x86_64__)
constexpr unsigned kArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr unsigned kArch = AUDIT_ARCH_AARCH64;
#endif

// The filter's program, built in a few shapes: each test of the call's
// number is followed by what to return when it matches.
class FilterProgram {
 public:
  void load_number() { add(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr))); }
  // The low 32 bits of argument i: flags, pids and protections all fit in them.
  void load_argument(int i) {
    add(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, static_cast<unsigned>(offsetof(seccomp_data, args) + 8 * i)));
  }
  void ret(unsigned action) { add(BPF_STMT(BPF_RET | BPF_K, action)); }
  // The call `nr` gets `action` (the number is in the accumulator).
  void refuse(long nr, unsigned action) {
    add(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<unsigned>(nr), 0, 1));
    ret(action);
  }
  // Another call's number still sits in the accumulator: both tests below
  // skip their block whole, which always returns.
  // The call `nr` is allowed when bit(s) `mask` of argument `arg` are
  // `set_allows` ? set : clear, and otherwise gets `action`.
  void by_bits(long nr, int arg, unsigned mask, bool set_allows, unsigned action) {
    add(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<unsigned>(nr), 0, 4));
    load_argument(arg);
    add(BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, mask, 0, 1));
    ret(set_allows ? SECCOMP_RET_ALLOW : action);
    ret(set_allows ? action : SECCOMP_RET_ALLOW);
  }
  // mmap: `action` for new executable memory, and for anonymous shared
  // memory, which the data limit (RLIMIT_DATA) doesn't count; the rest is
  // allowed.
  void mmap_rule(unsigned action) {
    add(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<unsigned>(SYS_mmap), 0, 8));
    load_argument(2);  // prot
    add(BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, PROT_EXEC, 0, 1));
    ret(action);
    load_argument(3);  // flags
    add(BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, MAP_ANONYMOUS, 0, 2));
    add(BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, MAP_SHARED, 0, 1));  // MAP_SHARED_VALIDATE has its bit too
    ret(action);
    ret(SECCOMP_RET_ALLOW);
  }
  // The call `nr` is allowed only when pointer argument `arg` is null (both
  // of its 32-bit halves: an address can have a low half of zero).
  void only_null(long nr, int arg, unsigned action) {
    add(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<unsigned>(nr), 0, 6));
    load_argument(arg);
    add(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 3));
    add(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, static_cast<unsigned>(offsetof(seccomp_data, args) + 8 * arg + 4)));
    add(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 1));
    ret(SECCOMP_RET_ALLOW);
    ret(action);
  }
  // The call `nr` is allowed only when argument `arg` equals `value`.
  void only_with(long nr, int arg, unsigned value, unsigned action) {
    add(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<unsigned>(nr), 0, 4));
    load_argument(arg);
    add(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, value, 0, 1));
    ret(SECCOMP_RET_ALLOW);
    ret(action);
  }
  void add(sock_filter op) { ops_.push_back(op); }
  sock_fprog program() { return {static_cast<unsigned short>(ops_.size()), ops_.data()}; }

 private:
  std::vector<sock_filter> ops_;
};

}  // namespace

std::string restrict_system_calls(bool allow_opening_files) {
#if !defined(__x86_64__) && !defined(__aarch64__)
  (void)allow_opening_files;
  return "no system-call filter for this architecture (only x86-64 and aarch64)";
#else
  // What the process still needs after this and cannot get then: the
  // watchdog's load figure (a kept file), and the unwinder glibc's
  // backtrace loads on first use (libgcc_s, by dlopen).
  loadavg_fd();
  void* frame[2];
  ::backtrace(frame, 2);

  const unsigned refused = SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA);
  // Only hand-made code makes a call of another ABI (int 0x80, x32 numbers)
  // that would slip past the numbers below: no library does, so it ends the process.
  const unsigned kill = SECCOMP_RET_KILL_PROCESS;
  FilterProgram f;
  f.add(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)));
  f.add(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kArch, 1, 0));
  f.ret(kill);
  f.load_number();
#if defined(__x86_64__)
  f.add(BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u /* __X32_SYSCALL_BIT */, 0, 1));
  f.ret(kill);
#endif
  // Threads, yes (MPI's and the harness's helpers, a student's std::thread);
  // a new process, no. clone3 passes its flags in memory, which a filter
  // can't read: ENOSYS sends glibc back to clone, whose flags it can.
  f.by_bits(SYS_clone, 0, CLONE_THREAD, true, refused);
  f.refuse(SYS_clone3, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA));
  // Signals to this process only (raise, abort, a thread's cancellation):
  // the other ranks, the launcher and the runner are out of reach.
  const unsigned me = static_cast<unsigned>(::getpid());
  f.only_with(SYS_kill, 0, me, refused);
  f.only_with(SYS_tgkill, 0, me, refused);
  f.only_with(SYS_tkill, 0, me, refused);
  f.only_with(SYS_rt_sigqueueinfo, 0, me, refused);
  f.only_with(SYS_rt_tgsigqueueinfo, 0, me, refused);
  // No new executable memory: code a handin writes into a buffer never runs.
  // No anonymous shared memory: all memory a rank takes is private, and so
  // within its data limit (platform.h, limit_private_memory).
  f.mmap_rule(refused);
  // Limits may be read, never changed: a raised stack limit would hold
  // memory that neither the heap budget nor the data limit counts.
  f.only_null(SYS_prlimit64, 2, refused);
  f.by_bits(SYS_mprotect, 2, PROT_EXEC, false, refused);
  f.by_bits(SYS_pkey_mprotect, 2, PROT_EXEC, false, refused);
  if (!allow_opening_files) {
#ifdef SYS_open
    f.refuse(SYS_open, refused);
#endif
#ifdef SYS_creat
    f.refuse(SYS_creat, refused);
#endif
    f.refuse(SYS_openat, refused);
  }
  static const long kRefused[] = {
         // files by name: the only files a rank needs are open already
         SYS_openat2, SYS_open_by_handle_at, SYS_name_to_handle_at,
         SYS_mknodat, SYS_mkdirat, SYS_unlinkat, SYS_linkat, SYS_symlinkat, SYS_renameat, SYS_renameat2,
         SYS_truncate, SYS_fchmod, SYS_fchmodat, SYS_fchown, SYS_fchownat, SYS_utimensat,
         SYS_setxattr, SYS_lsetxattr, SYS_fsetxattr, SYS_removexattr, SYS_lremovexattr, SYS_fremovexattr,
         SYS_chdir, SYS_fchdir, SYS_chroot, SYS_pivot_root,
         // programs and processes
         SYS_execve, SYS_execveat, SYS_ptrace, SYS_process_vm_readv, SYS_process_vm_writev, SYS_kcmp,
         SYS_pidfd_open, SYS_pidfd_getfd, SYS_pidfd_send_signal, SYS_setns, SYS_unshare, SYS_personality,
         // new channels: MPI's own are connected during MPI's start-up
         SYS_socket, SYS_socketpair, SYS_connect, SYS_bind, SYS_listen, SYS_accept, SYS_accept4,
         // New System V objects and anonymous shared memory, and other routes to a new channel or to
         // the kernel. Attaching to a segment that exists stays (shmat, shmdt, shmctl): MPICH's UCX
         // attaches to a peer's segment when it first sends to it, long after start-up, and removes
         // its own at the end; a segment is reached only with its owner's permission, and in the
         // grader's IPC namespace only the job's own exist.
         SYS_shmget, SYS_semget, SYS_msgget, SYS_memfd_create, SYS_memfd_secret,
         SYS_io_uring_setup, SYS_io_uring_enter, SYS_io_uring_register, SYS_bpf, SYS_perf_event_open,
         SYS_userfaultfd, SYS_keyctl, SYS_add_key, SYS_request_key, SYS_fanotify_init,
         // identity and the machine
         SYS_setrlimit, SYS_setuid, SYS_setgid, SYS_setreuid, SYS_setregid, SYS_setresuid, SYS_setresgid, SYS_setfsuid,
         SYS_setfsgid, SYS_setgroups, SYS_capset, SYS_mount, SYS_umount2, SYS_mount_setattr, SYS_move_mount,
         SYS_open_tree, SYS_fsopen, SYS_fsconfig, SYS_fsmount, SYS_fspick, SYS_swapon, SYS_swapoff,
         SYS_reboot, SYS_kexec_load, SYS_kexec_file_load, SYS_init_module, SYS_finit_module,
         SYS_delete_module, SYS_acct, SYS_quotactl, SYS_syslog, SYS_settimeofday, SYS_clock_settime,
         SYS_clock_adjtime, SYS_adjtimex, SYS_sethostname, SYS_setdomainname, SYS_vhangup,
#if defined(__x86_64__)
         // the same, in x86-64's older forms
         SYS_fork, SYS_vfork, SYS_mknod, SYS_mkdir, SYS_rmdir, SYS_unlink, SYS_link, SYS_symlink, SYS_rename,
         SYS_chmod, SYS_chown, SYS_lchown, SYS_utime, SYS_utimes, SYS_futimesat, SYS_uselib, SYS_iopl,
         SYS_ioperm, SYS_modify_ldt,
#endif
  };
  for (long nr : kRefused) f.refuse(nr, refused);
  f.ret(SECCOMP_RET_ALLOW);

  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
    return std::string("prctl(PR_SET_NO_NEW_PRIVS) failed: ") + std::strerror(errno);
  sock_fprog program = f.program();
  // TSYNC: every thread MPI and the harness started so far gets it too.
  const long tid = ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &program);
  if (tid == 0) return "";
  if (tid > 0) return "thread " + std::to_string(tid) + " could not take the system-call filter";
  return std::string("seccomp(SECCOMP_SET_MODE_FILTER) failed: ") + std::strerror(errno) +
         (errno == EINVAL || errno == ENOSYS ? " (a kernel without seccomp filters or TSYNC, before 3.17)" : "");
#endif
}

void limit_private_memory(long long bytes) {
  rlimit now{};
  if (::getrlimit(RLIMIT_DATA, &now) != 0) return;
  const rlim_t wanted = static_cast<rlim_t>(bytes);
  if (now.rlim_max != RLIM_INFINITY && now.rlim_max <= wanted) return;
  // The hard limit too: raising it back takes a privilege no rank has.
  const rlimit lower{std::min(now.rlim_cur, wanted), wanted};
  ::setrlimit(RLIMIT_DATA, &lower);
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
