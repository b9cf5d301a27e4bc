// syscall_filter.cpp: platform.h's restrict_system_calls on Linux, a seccomp
// filter (seccomp(2), a classic BPF program). The kit check of what it
// refuses: tests/test_kit_syscall_filter.cpp
//   tools/kitrun -n 1 build/reference/kit_tests --gtest_filter='KitSyscallFilter*'
#include <execinfo.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "heap_watch.h"
#include "platform.h"

namespace dtrain::platform {

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
  // mmap: `action` for new executable memory and for anonymous shared
  // memory; `grows_down` for a mapping that grows down. Neither of the last
  // two is counted by the data limit (the kernel counts as data a private,
  // writable mapping that is no stack, and MAP_GROWSDOWN makes a stack of
  // any size). The rest is allowed.
  void mmap_rule(unsigned action, unsigned grows_down) {
    add(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<unsigned>(SYS_mmap), 0, 10));
    load_argument(2);  // prot
    add(BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, PROT_EXEC, 0, 1));
    ret(action);
    load_argument(3);  // flags
    add(BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, MAP_GROWSDOWN, 0, 1));
    ret(grows_down);
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

// The calls the filter traps rather than refuses outright, so that the
// refusal reaches the case's message: the rule's number travels in the
// trap's data (si_errno), its words are here.
enum TrappedRule : unsigned { kGrowsDown = 1 };

#if defined(__x86_64__) || defined(__aarch64__)
// SIGSYS from the filter's trap: the call did not run. Its caller sees
// EPERM, as from any refusal, and the running case keeps the refusal for
// its message (heap_watch.h, heap_budget), naming the rule.
void on_trapped_call(int, siginfo_t* info, void* context) {
  auto* uc = static_cast<ucontext_t*>(context);
#if defined(__x86_64__)
  const auto length = static_cast<std::size_t>(uc->uc_mcontext.gregs[REG_RSI]);  // mmap's second argument
  uc->uc_mcontext.gregs[REG_RAX] = -EPERM;
#elif defined(__aarch64__)
  const auto length = static_cast<std::size_t>(uc->uc_mcontext.regs[1]);
  uc->uc_mcontext.regs[0] = static_cast<unsigned long long>(-EPERM);
#endif
  if (info->si_errno == kGrowsDown)
    heap_hooks::refused_by_filter(length, "a mapping that grows down (mmap with MAP_GROWSDOWN)");
}
#endif

}  // namespace

std::string restrict_system_calls(bool allow_opening_files) {
#if !defined(__x86_64__) && !defined(__aarch64__)
  (void)allow_opening_files;
  return "no system-call filter for this architecture (only x86-64 and aarch64)";
#else
  // What the process still needs after this and cannot get then: the
  // watchdog's load figure (a kept file), and the unwinder glibc's
  // backtrace loads on first use (libgcc_s, by dlopen).
  runnable_tasks();
  void* frame[2];
  ::backtrace(frame, 2);
  struct sigaction trap {};
  trap.sa_sigaction = on_trapped_call;
  trap.sa_flags = SA_SIGINFO;
  sigemptyset(&trap.sa_mask);
  if (::sigaction(SIGSYS, &trap, nullptr) != 0) return std::string("sigaction(SIGSYS) failed: ") + std::strerror(errno);

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
  // Every mapping counts against the data limit (platform.h,
  // limit_private_memory): no anonymous shared memory, no mapping that grows
  // down (glibc makes neither). mremap could move the one stack mapping a
  // process has, [stack], and make it any size, outside the data limit:
  // refused, after which glibc's realloc copies instead.
  f.mmap_rule(refused, SECCOMP_RET_TRAP | (kGrowsDown & SECCOMP_RET_DATA));
  f.refuse(SYS_mremap, refused);
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
         // new channels: MPI's own are connected during MPI's start-up. A pipe's buffer is the
         // kernel's memory, outside the data limit.
         SYS_socket, SYS_socketpair, SYS_connect, SYS_bind, SYS_listen, SYS_accept, SYS_accept4, SYS_pipe2,
         // New kernel objects that outlive the process (System V's, POSIX message queues) and
         // anonymous shared memory, and other routes to a new channel or to the kernel. Attaching to a
         // segment that exists stays (shmat, shmdt, shmctl): MPICH's UCX attaches to a peer's segment
         // when it first sends to it, long after start-up, and removes its own at the end; a segment
         // is reached only with its owner's permission, and in the grader's IPC namespace only the
         // job's own exist.
         SYS_shmget, SYS_semget, SYS_msgget, SYS_mq_open, SYS_mq_unlink, SYS_memfd_create, SYS_memfd_secret,
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
         SYS_ioperm, SYS_modify_ldt, SYS_pipe,
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

}  // namespace dtrain::platform
