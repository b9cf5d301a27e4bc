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
