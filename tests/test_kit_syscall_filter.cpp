// The kit's own check of the test binary's system-call filter (platform.h,
// restrict_system_calls; not a graded part; run on the reference by CTest as
// reference/syscall_filter):
//   tools/kitrun -n 1 build/reference/kit_tests --gtest_filter='KitSyscallFilter*'
// The cases run as a handin's code does, after the filter is in place: each
// route a handin could take out of its computation must end in an error.
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include "abort_records.h"
#include "comm_runtime.h"
#include "harness.h"  // the data limit (kit/limits.py)
#include "heap_watch.h"
#include "job.h"
#include "kit_test.h"

namespace {

// errno after `result` says the call failed; a success is reported as "succeeded".
std::string failure_of(long result) { return result == -1 ? std::strerror(errno) : "succeeded"; }

const std::string kRefused = std::strerror(EPERM);

}  // namespace

TEST(KitSyscallFilter, IsOnInEveryCase) { EXPECT_EQ(harness::job().syscall_filter, "on"); }

TEST(KitSyscallFilter, OpensNoFile) {
  EXPECT_EQ(failure_of(::open("/etc/passwd", O_RDONLY)), kRefused);
  EXPECT_EQ(failure_of(::openat(AT_FDCWD, "/etc/passwd", O_RDONLY)), kRefused);
  EXPECT_EQ(std::fopen("/etc/passwd", "r"), nullptr);
  EXPECT_EQ(failure_of(::creat("/tmp/kit-filter-check", 0600)), kRefused);
}

TEST(KitSyscallFilter, ChangesNoName) {
  EXPECT_EQ(failure_of(::unlink("/tmp/kit-filter-no-such-file")), kRefused);  // EPERM, not ENOENT: refused before the lookup
  EXPECT_EQ(failure_of(::mkfifo("/tmp/kit-filter-fifo", 0600)), kRefused);
  EXPECT_EQ(failure_of(::symlink("/etc/passwd", "/tmp/kit-filter-link")), kRefused);
  EXPECT_EQ(failure_of(::mkdir("/tmp/kit-filter-dir", 0700)), kRefused);
  EXPECT_EQ(failure_of(::rename("/tmp/kit-filter-no-such-file", "/tmp/kit-filter-renamed")), kRefused);
  EXPECT_EQ(failure_of(::truncate("/tmp/kit-filter-no-such-file", 0)), kRefused);
  EXPECT_EQ(failure_of(::chmod("/tmp/kit-filter-no-such-file", 0600)), kRefused);
}

TEST(KitSyscallFilter, StartsNoProcessOrProgram) {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);  // only if the filter let it through: the case then fails below
  if (child > 0) ::waitpid(child, nullptr, 0);
  EXPECT_EQ(failure_of(child), kRefused);
  char* const argv[] = {const_cast<char*>("true"), nullptr};
  EXPECT_EQ(failure_of(::execve("/bin/true", argv, nullptr)), kRefused);
  // glibc's pthread_create tries clone3 first and falls back to clone on ENOSYS.
  EXPECT_EQ(failure_of(::syscall(SYS_clone3, nullptr, 0)), std::strerror(ENOSYS));
  bool ran = false;
  std::thread([&] { ran = true; }).join();  // threads are still fine
  EXPECT_TRUE(ran);
}

TEST(KitSyscallFilter, OpensNoChannelAndReadsNoOtherProcess) {
  EXPECT_EQ(failure_of(::socket(AF_UNIX, SOCK_STREAM, 0)), kRefused);
  int pair[2];
  EXPECT_EQ(failure_of(::socketpair(AF_UNIX, SOCK_STREAM, 0, pair)), kRefused);
  char buffer[16];
  iovec local{buffer, sizeof buffer}, remote{buffer, sizeof buffer};
  EXPECT_EQ(failure_of(::process_vm_readv(::getppid(), &local, 1, &remote, 1, 0)), kRefused);
  EXPECT_EQ(failure_of(::kill(::getppid(), 0)), kRefused);
  EXPECT_EQ(failure_of(::kill(0, 0)), kRefused);  // the process group: the other ranks, the launcher
  EXPECT_EQ(::kill(::getpid(), 0), 0);            // this process still may (raise, abort)
  EXPECT_EQ(failure_of(::syscall(SYS_shmget, IPC_PRIVATE, 4096, 0600)), kRefused);
  EXPECT_EQ(failure_of(::syscall(SYS_memfd_create, "x", 0)), kRefused);
}

TEST(KitSyscallFilter, RefusesTheRawCallThroughAPointerFromAnotherSymbol) {
  // What a handin that gets past the static checks might do: no name of a
  // forbidden call in its source, the raw call found from printf's address.
  const auto printf_at = reinterpret_cast<std::uintptr_t>(&std::printf);
  const std::intptr_t offset = static_cast<std::intptr_t>(reinterpret_cast<std::uintptr_t>(&::syscall) - printf_at);
  const auto raw = reinterpret_cast<long (*)(long, ...)>(printf_at + static_cast<std::uintptr_t>(offset));
  EXPECT_EQ(failure_of(raw(SYS_openat, AT_FDCWD, "/etc/passwd", O_RDONLY)), kRefused);
#ifdef SYS_fork
  EXPECT_EQ(failure_of(raw(SYS_fork)), kRefused);
#endif
  EXPECT_EQ(failure_of(raw(SYS_clone, SIGCHLD, 0, 0, 0, 0)), kRefused);  // fork's own clone
}

TEST(KitSyscallFilter, MakesNoNewExecutableMemory) {
  void* code = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  EXPECT_EQ(code, MAP_FAILED);
  void* data = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(data, MAP_FAILED);
  EXPECT_EQ(failure_of(::mprotect(data, 4096, PROT_READ | PROT_EXEC)), kRefused);
  ::munmap(data, 4096);
}

TEST(KitSyscallFilter, ReadsLimitsButChangesNone) {
  rlimit stack{};
  ASSERT_EQ(::getrlimit(RLIMIT_STACK, &stack), 0) << "reading a limit stays allowed";
  EXPECT_EQ(failure_of(::setrlimit(RLIMIT_STACK, &stack)), kRefused);
  EXPECT_EQ(failure_of(::prlimit(0, RLIMIT_STACK, &stack, nullptr)), kRefused);
  EXPECT_EQ(failure_of(::syscall(SYS_setrlimit, RLIMIT_STACK, &stack)), kRefused);
}

TEST(KitSyscallFilter, MakesNoAnonymousSharedMemory) {
  // Shared memory is outside the data limit (RLIMIT_DATA counts private
  // memory only): a rank takes none of its own.
  for (int shared : {MAP_SHARED, MAP_SHARED_VALIDATE}) {
    void* p = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, shared | MAP_ANONYMOUS, -1, 0);
    EXPECT_EQ(failure_of(p == MAP_FAILED ? -1 : 0), kRefused) << "flags " << (shared | MAP_ANONYMOUS);
    if (p != MAP_FAILED) ::munmap(p, 4096);
  }
}

TEST(KitSyscallFilter, CountsEveryMappingAgainstTheDataLimit) {
  // The kernel counts as data (RLIMIT_DATA) a private writable mapping that
  // is not a stack; MAP_GROWSDOWN makes a stack of any size, so it is
  // refused, and the refusal names the rule in the case's message.
  const long long limit = harness::kRankDataLimitBytes;
  const auto whole = static_cast<size_t>(limit);
  {
    dtrain::StudentScope scope("ZeroDPStage3FCLayer::forward");
    void* down = ::mmap(nullptr, whole, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_GROWSDOWN, -1, 0);
    EXPECT_EQ(failure_of(down == MAP_FAILED ? -1 : 0), kRefused);
    if (down != MAP_FAILED) ::munmap(down, whole);
  }
  const dtrain::heap_budget::Refusal refusal = dtrain::heap_budget::take();
  ASSERT_TRUE(refusal.happened) << "the filter's refusal was not kept for the case";
  char text[400];
  harness::budget_refusal_text(text, sizeof text, refusal);
  EXPECT_EQ(std::string(text).rfind("refused by the system-call filter: ZeroDPStage3FCLayer::forward asked for a "
                                    "mapping that grows down (mmap with MAP_GROWSDOWN) of " +
                                        std::to_string(limit >> 20) + ".0 MiB",
                                    0),
            0u)
      << text;
  // What the filter lets through, the limit counts: a thread stack's kind
  // (MAP_STACK) and a mapping made writable later.
  void* stack = ::mmap(nullptr, whole, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  EXPECT_EQ(failure_of(stack == MAP_FAILED ? -1 : 0), std::strerror(ENOMEM)) << "a MAP_STACK mapping went uncounted";
  if (stack != MAP_FAILED) ::munmap(stack, whole);
  void* later = ::mmap(nullptr, whole, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  ASSERT_NE(later, MAP_FAILED) << "a read-only mapping (no data: the zero page) is allowed";
  EXPECT_EQ(failure_of(::mprotect(later, whole, PROT_READ | PROT_WRITE)), std::strerror(ENOMEM));
  // mremap could move [stack], a mapping that grows down, and make it any size.
  void* small = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(small, MAP_FAILED);
  EXPECT_EQ(failure_of(::syscall(SYS_mremap, small, 4096, 8192, MREMAP_MAYMOVE)), kRefused);
  ::munmap(later, whole);
  ::munmap(small, 4096);
}

TEST(KitSyscallFilter, MakesNoKernelObjectThatOutlivesTheProcess) {
  // System V objects and POSIX message queues stay after their process ends
  // (the grader's threat model lists what it removes besides).
  // What the filter wrongly let through is removed again, so that a failing
  // run leaves nothing either.
  const long queue = ::syscall(SYS_mq_open, "kit-filter-queue", O_CREAT | O_RDWR, 0600, nullptr);
  EXPECT_EQ(failure_of(queue), kRefused);
  if (queue >= 0) ::close(static_cast<int>(queue));
  EXPECT_EQ(failure_of(::syscall(SYS_mq_unlink, "kit-filter-queue")), kRefused);
  const long shm = ::syscall(SYS_shmget, IPC_PRIVATE, 4096, IPC_CREAT | 0600);
  EXPECT_EQ(failure_of(shm), kRefused);
  if (shm >= 0) ::shmctl(static_cast<int>(shm), IPC_RMID, nullptr);
  const long sem = ::syscall(SYS_semget, IPC_PRIVATE, 1, IPC_CREAT | 0600);
  EXPECT_EQ(failure_of(sem), kRefused);
  if (sem >= 0) ::semctl(static_cast<int>(sem), 0, IPC_RMID);
  const long msg = ::syscall(SYS_msgget, IPC_PRIVATE, IPC_CREAT | 0600);
  EXPECT_EQ(failure_of(msg), kRefused);
  if (msg >= 0) ::msgctl(static_cast<int>(msg), IPC_RMID, nullptr);
  // A pipe's buffer is kernel memory outside the data limit.
  int ends[2];
  for (const bool with_flags : {false, true}) {
    const long made = with_flags ? ::pipe2(ends, O_CLOEXEC) : ::pipe(ends);
    EXPECT_EQ(failure_of(made), kRefused) << (with_flags ? "pipe2" : "pipe");
    if (made == 0) ::close(ends[0]), ::close(ends[1]);
  }
}
