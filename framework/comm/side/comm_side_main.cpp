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

#include "parts_table.h"  // the kit's stack size for threads (kit/parts.py)
#include "comm_side_child.h"
#include "comm_side_ops.h"
#include "comm_side_salt.h"
#include "traffic.h"

namespace dtrain::side {

namespace {

// The largest request the side reads: a rank's whole data limit in one buffer is more than any case needs.
constexpr std::uint64_t kMostRequestBytes = std::uint64_t(1) << 30;

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

bool read_all(int fd, void* data, std::size_t n) { return link::move_all(false, fd, data, n); }

Traffic g_traffic;
pid_t g_child = -1;
std::atomic<bool> g_finalizing{false};

// The child ended without finalizing (a crash, exit(), the watchdog): the
// side ends as it did, so the launcher sees what it would have seen of the
// program itself, and its account goes out first.
[[noreturn]] void end_like_child() {
  int status = 0;
  while (waitpid(g_child, &status, 0) < 0 && errno == EINTR) {
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
// end means the child is gone.
void watch_control(int fd) {
  std::int32_t code = 0;
  if (read_all(fd, &code, sizeof code)) {
    g_traffic.flush();
    MPI_Abort(MPI_COMM_WORLD, code);
    _exit(code);
  }
  if (!g_finalizing) end_like_child();
}

// Whether this side copies its child's buffers itself (comm_link.h): on
// until the system refuses, once; never where a copy of the side's own
// memory does not come back as it is (an emulator that passes the call on
// without its address translation), nor for a child under an emulator.
bool g_direct = true;

enum class Copied { Done, Refused, Outside };

Copied copy_child(bool to_child, std::uint64_t at, void* data, std::size_t n) {
  iovec here{data, n}, there{reinterpret_cast<void*>(static_cast<std::uintptr_t>(at)), n};
  const ssize_t k = to_child ? ::process_vm_writev(g_child, &here, 1, &there, 1, 0)
                             : ::process_vm_readv(g_child, &here, 1, &there, 1, 0);
  if (k == static_cast<ssize_t>(n)) return Copied::Done;
  if (k < 0 && (errno == EPERM || errno == EACCES || errno == ENOSYS)) return Copied::Refused;
  return Copied::Outside;
}

bool copies_own_memory() {
  const std::uint64_t want = 0x6b69742d6c696e6bULL;
  std::uint64_t got = 0;
  iovec here{&got, sizeof got}, there{const_cast<std::uint64_t*>(&want), sizeof want};
  return ::process_vm_readv(getpid(), &here, 1, &there, 1, 0) == static_cast<ssize_t>(sizeof got) && got == want;
}

Answer refusal(link::Status status, const std::string& why) {
  Answer a;
  a.reply.status = status;
  a.data.assign(why.begin(), why.end());
  return a;
}

// Writes an Ok answer's data where the request asked, if it asked and it
// fits: then `placed`, and no data follows the reply on the socket.
void place_answer(const link::Header& h, Answer& answer) {
  answer.reply.out_bytes = answer.data.size();
  if (answer.reply.status != link::Status::Ok || h.out_at == 0 || !g_direct || answer.data.empty() ||
      answer.data.size() > h.out_capacity)
    return;
  const Copied placed = copy_child(true, h.out_at, answer.data.data(), answer.data.size());
  if (placed == Copied::Done) answer.reply.placed = 1;
  if (placed == Copied::Refused) g_direct = false;  // this answer, and all after it, inline
  if (placed == Copied::Outside) {
    answer = refusal(link::Status::BadArgument, "the kit's MPI side could not place an answer: its buffer is not "
                                                "all in the program's memory");
    answer.reply.out_bytes = answer.data.size();
  }
}

std::string no_room(std::uint64_t bytes) {
  return "the rank's MPI side has no room for a call of " + std::to_string(bytes) + " bytes (it holds at most " +
         std::to_string(harness::kSideDataLimitBytes >> 20) + " MiB: a call of the assignment's moves a few MiB)";
}

[[noreturn]] void serve(int fd) {
  Ops ops(g_traffic);
  for (;;) {
    link::Header h{};
    if (!read_all(fd, &h, sizeof h)) {
      // The child is gone; the control thread ends the side as it ended.
      for (;;) pause();
    }
    if (h.in_bytes > kMostRequestBytes) {
      std::fprintf(stderr, "kit_mpi_side: a request of %llu bytes: the program broke its link\n",
                   static_cast<unsigned long long>(h.in_bytes));
      g_traffic.flush();
      MPI_Abort(MPI_COMM_WORLD, 70);
    }
    if (!link::answered(h.kind)) {  // an Enter mark: no answer, and its name always inline
      std::string name(h.in_at == 0 ? h.in_bytes : 0, '\0');
      if (!name.empty() && !read_all(fd, name.data(), name.size())) for (;;) pause();
      g_traffic.enter(h.in_at == 0 && name.size() <= link::kMostNameBytes ? name : std::string(),
                      h.ask.enter.argument);
      continue;
    }
    const bool inline_data = h.in_at == 0;
    std::vector<char> in;
    bool room = true;
    try {
      in.resize(h.in_bytes);
    } catch (const std::bad_alloc&) {
      room = false;  // read past, then answered below
      char sink[1 << 16];
      for (std::uint64_t left = inline_data ? h.in_bytes : 0; left > 0;) {
        const std::size_t n = left < sizeof sink ? static_cast<std::size_t>(left) : sizeof sink;
        if (!read_all(fd, sink, n)) for (;;) pause();
        left -= n;
      }
    }
    if (inline_data && !in.empty() && !read_all(fd, in.data(), in.size())) for (;;) pause();
    // An emulated child's addresses are the emulator's to translate, each
    // process its own way: asked once, when the child (by then started) first names one.
    static bool asked_emulator = false;
    if ((!inline_data || h.out_at != 0) && !asked_emulator) {
      asked_emulator = true;
      if (emulated(g_child)) g_direct = false;
    }
    const Copied fetched = inline_data || !room || !g_direct ? Copied::Done : copy_child(false, h.in_at, in.data(), in.size());
    Answer answer;
    if (!room) {
      answer = refusal(link::Status::Failed, no_room(h.in_bytes));
    } else if ((!inline_data && !g_direct) || fetched == Copied::Refused) {
      g_direct = false;  // carried out by nothing: the child sends it again inline
      answer.reply.status = link::Status::Resend;
    } else if (fetched == Copied::Outside) {
      answer = refusal(link::Status::BadArgument, "the kit's MPI side refused a request: its data is not all in "
                                                  "the program's memory");
    } else if (h.kind == link::Kind::Finalize) {
      g_finalizing = true;
      ops.finish_requests();
      g_traffic.flush();
      MPI_Finalize();
    } else {
      try {
        answer = ops.handle(h, in);
      } catch (const std::bad_alloc&) {
        answer = refusal(link::Status::Failed, no_room(h.in_bytes));
      } catch (const std::invalid_argument& e) {
        answer = refusal(link::Status::BadArgument, e.what());
      } catch (const std::exception& e) {
        answer = refusal(link::Status::Failed, e.what());
      }
    }
    place_answer(h, answer);
    const std::size_t trailing = answer.reply.placed != 0 ? 0 : answer.data.size();
    if (!link::send_both(fd, &answer.reply, sizeof answer.reply, answer.data.data(), trailing)) for (;;) pause();
    if (h.kind == link::Kind::Finalize) {
      int status = 0;
      while (waitpid(g_child, &status, 0) < 0 && errno == EINTR) {
      }
      if (WIFSIGNALED(status)) {
        signal(WTERMSIG(status), SIG_DFL);
        raise(WTERMSIG(status));
      }
      _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 70);
    }
  }
}

}  // namespace

}  // namespace dtrain::side

int main(int argc, char** argv) {
  using namespace dtrain::side;
  if (argc < 2) {
    std::fprintf(stderr, "usage: kit_mpi_side PROGRAM [ARGS...]  (tools/kitrun starts it)\n");
    return 2;
  }
  int link_ends[2], control_ends[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, link_ends) != 0 ||
      socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, control_ends) != 0) {
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
  const pid_t parent = getpid();
  g_child = fork();
  if (g_child < 0) {
    std::perror("kit_mpi_side: fork");
    return 70;
  }
  if (g_child == 0) start_child(argv + 1, link_ends[1], control_ends[1], parent);
  g_traffic.watch(g_child);
  close(link_ends[1]);
  close(control_ends[1]);
  signal(SIGPIPE, SIG_IGN);
  // A test job's side keeps to its share of the rank's memory (kit/parts.py,
  // SIDE_DATA_LIMIT_MIB): a grading job at every limit fits the smallest
  // platform by construction. A trainer's, like the trainer, has no limit
  // of the kit's: its buckets may hold a whole model's gradients in flight.
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
  g_direct = !(copies != nullptr && std::strcmp(copies, "inline") == 0) && copies_own_memory();
  if (!salted && MPI_Init(&argc, &argv) != MPI_SUCCESS) return 70;
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  std::thread(watch_control, control_ends[0]).detach();
  serve(link_ends[0]);
}
