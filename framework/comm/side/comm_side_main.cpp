// comm_side_main.cpp: kit_mpi_side, a rank's MPI side (comm_link.h). The launcher
// starts it in the program's place; it starts the program as its child,
// with no MPI, and carries out the child's requests.
//   tools/kitrun -n 4 build/student/kit_tests ...   (kitrun puts the side first:
//   mpirun ... build/kit_mpi_side build/student/kit_tests ...)
//
// Why a process of its own: whatever runs in the child's address space
// belongs to the student's code, which can rewrite any record the child
// keeps and call any function the child has mapped. The side is started
// before any student code, holds none, and can't be read or traced by the
// child (it is not dumpable, and the child's system-call filter refuses
// ptrace). The child's environment loses MPI's variables, so it can't join
// the job on its own either.
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "parts_table.h"  // the kit's stack size for threads (kit/limits.py)
#include "comm_side_child.h"
#include "comm_side_ops.h"
#include "comm_side_serve.h"
#include "comm_side_salt.h"
#include "traffic.h"

namespace dtrain::side {

namespace {

// The side's own record channel (kit/channels.py: DIR/side<r> beside the
// program's DIR/rank<r>), opened before the program starts, so the account
// it carries was never in reach of code under test; -1 when the program
// was given no --results=DIR (a run outside the runner).
int open_side_channel(const std::string& dir, const std::string& rank) {
  if (dir.empty() || rank == "-1") return -1;
  const std::string path = dir + "/side" + rank;
  const int fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    std::fprintf(stderr, "kit_mpi_side: cannot open its record channel %s: %s\n", path.c_str(), std::strerror(errno));
    return -1;
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

Traffic g_traffic;
pid_t g_child = -1;  // the program the side serves (in the driven mode, the harness)
std::atomic<bool> g_finalizing{false};

// The program ended: the side ends as it did, so the launcher sees what it
// would have seen of the program itself, and its account goes out first.
[[noreturn]] void end_like(pid_t child) {
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  g_traffic.flush();
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    signal(sig, SIG_DFL);
    raise(sig);
  }
  _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 70);
}

// The control pipe: an exit code asks for MPI_Abort (link::abort_job); its
// end means the program is gone (ended without finalizing: a crash, exit(), the watchdog).
void watch_control(int fd) {
  std::int32_t code = 0;
  if (link::move_all(false, fd, &code, sizeof code)) {
    g_traffic.flush();
    MPI_Abort(MPI_COMM_WORLD, code);
    _exit(code);
  }
  if (!g_finalizing) end_like(g_child);
}

void finalize(Ops& ops) {
  g_finalizing = true;
  ops.finish_requests();
  g_traffic.flush();
  MPI_Finalize();
}

// Whether a copy of the side's own memory comes back as it is: not under an
// emulator that passes the call on without its address translation.
bool copies_own_memory() {
  const std::uint64_t want = 0x6b69742d6c696e6bULL;
  std::uint64_t got = 0;
  iovec here{&got, sizeof got}, there{const_cast<std::uint64_t*>(&want), sizeof want};
  return ::process_vm_readv(getpid(), &here, 1, &there, 1, 0) == static_cast<ssize_t>(sizeof got) && got == want;
}

// One link's two ends, close-on-exec until a child is started on its own end.
struct Ends {
  int side = -1, child = -1;
};

bool make_ends(Ends& e) {
  int two[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, two) != 0) return false;
  e = {two[0], two[1]};
  return true;
}

}  // namespace

}  // namespace dtrain::side

int main(int argc, char** argv) {
  using namespace dtrain::side;
  if (argc < 2) {
    std::fprintf(stderr, "usage: kit_mpi_side PROGRAM [ARGS...]  (tools/kitrun starts it)\n");
    return 2;
  }
  // The driven mode (comm_side_serve.h): PROGRAM is the kit's harness, and
  // the student's code runs in this program of its own, with a link of its own.
  const char* student_program = std::getenv("KIT_STUDENT_PROGRAM");
  const std::string student = student_program != nullptr ? student_program : "";
  unsetenv("KIT_STUDENT_PROGRAM");
  Ends link_ends, control_ends, student_ends;
  if (!make_ends(link_ends) || !make_ends(control_ends) || (!student.empty() && !make_ends(student_ends))) {
    std::perror("kit_mpi_side: socketpair");
    return 70;
  }
  const std::string rank = launcher_rank();
  const std::string results = results_dir(argv + 1);
  g_traffic.open(open_side_channel(results, rank), std::atoi(rank.c_str()));
  // Before the child exists, so that no instant of its life finds this
  // process dumpable (its own exec makes it dumpable again), and before the
  // salt is in this process's memory.
  prctl(PR_SET_DUMPABLE, 0);
  // MPI's threads (its runtime's progress and events) at the kit's stack
  // size rather than glibc's 8 MiB: the data limit counts a stack whole.
  pthread_attr_t stacks;
  if (pthread_attr_init(&stacks) == 0 && pthread_attr_setstacksize(&stacks, harness::kThreadStackBytes) == 0)
    pthread_setattr_default_np(&stacks);
  // A job with hidden cases: every rank's side takes its copy of the salt,
  // and the ranks meet, before any rank's program exists, so no program
  // finds a copy still waiting in the job's folder. MPI starts first then.
  const bool salted = take_salt(results);
  if (salted && (MPI_Init(&argc, &argv) != MPI_SUCCESS || MPI_Barrier(MPI_COMM_WORLD) != MPI_SUCCESS)) return 70;
  // The driven mode's page of what the student's process does (side_page.h): the harness's to read alone.
  dtrain::side_page::Page* page = nullptr;
  const int page_fd = student.empty() ? -1 : memfd_create("kit-side-page", MFD_CLOEXEC);
  if (page_fd >= 0 && ftruncate(page_fd, sizeof(dtrain::side_page::Page)) == 0) {
    void* at = mmap(nullptr, sizeof(dtrain::side_page::Page), PROT_READ | PROT_WRITE, MAP_SHARED, page_fd, 0);
    if (at != MAP_FAILED) page = static_cast<dtrain::side_page::Page*>(at);
  }
  // The driven mode's strays come here, not to init: the side ends them (end_strays).
  if (!student.empty()) prctl(PR_SET_CHILD_SUBREAPER, 1);
  const pid_t parent = getpid();
  g_child = fork();
  if (g_child < 0) {
    std::perror("kit_mpi_side: fork");
    return 70;
  }
  if (g_child == 0) start_child(argv + 1, link_ends.child, control_ends.child, parent, page != nullptr ? page_fd : -1);
  if (page_fd >= 0) close(page_fd);
  pid_t student_pid = -1;
  if (!student.empty()) {
    student_pid = fork();
    if (student_pid < 0) {
      std::perror("kit_mpi_side: fork");
      return 70;
    }
    if (student_pid == 0) {
      // A process group of its own, which what it starts shares: a call
      // that leaves a fork bomb behind is stopped by one signal to the
      // group (end_strays), not one process at a time by a side that gets
      // a two-hundredth of a core among them.
      setpgid(0, 0);
      // The harness's runs without the system-call filter are the student's too.
      bool unfiltered = false;
      for (char** a = argv + 2; *a != nullptr; ++a) unfiltered = unfiltered || std::strcmp(*a, "--no-syscall-filter") == 0;
      char no_filter[] = "--no-syscall-filter";
      char* student_argv[] = {const_cast<char*>(student.c_str()), unfiltered ? no_filter : nullptr, nullptr};
      start_child(student_argv, student_ends.child, -1, parent);
    }
    setpgid(student_pid, student_pid);  // as the child does: whichever comes first (the other finds it done)
    close(student_ends.child);
  }
  // The account's memory figures are of the process that runs the student's code.
  g_traffic.watch(student.empty() ? g_child : student_pid);
  close(link_ends.child);
  close(control_ends.child);
  signal(SIGPIPE, SIG_IGN);
  // A test job's side keeps to its share of the rank's memory (kit/limits.py,
  // SIDE_DATA_LIMIT_MIB): a grading job at every limit fits the smallest
  // platform by construction. A trainer's, like the trainer, has no limit
  // of the kit's: its requests may hold a whole model's gradients in flight.
  rlimit data{};
  if (!results.empty() && getrlimit(RLIMIT_DATA, &data) == 0 &&
      (data.rlim_cur == RLIM_INFINITY || data.rlim_cur > static_cast<rlim_t>(harness::kSideDataLimitBytes))) {
    data.rlim_cur = static_cast<rlim_t>(harness::kSideDataLimitBytes);
    setrlimit(RLIMIT_DATA, &data);
  }
  // Every request's buffers come and go at the same few sizes: glibc keeps
  // the freed ones for the next request, rather than mapping each anew and
  // faulting its pages in (the side's system time, before).
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 64 << 20);
  // KIT_LINK_COPIES=inline (staff, tests): every buffer through the socket, the path of a host that refuses the copies.
  const char* copies = std::getenv("KIT_LINK_COPIES");
  const bool direct = !(copies != nullptr && std::strcmp(copies, "inline") == 0) && copies_own_memory();
  if (!salted && MPI_Init(&argc, &argv) != MPI_SUCCESS) return 70;
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  std::thread(watch_control, control_ends.side).detach();
  Ops ops(g_traffic);
  ops.keep_page(page);
  Peer program{link_ends.side, g_child, direct, false, student.empty() ? "program" : "harness"};
  if (student.empty()) serve_program(ops, g_traffic, program, finalize, end_like);
  Peer student_peer{student_ends.side, student_pid, direct, false, "student's process"};
  serve_driven(ops, g_traffic, program, student_peer, finalize, end_like);
}
