// comm_link_in_process.cpp: the trainers' end of the link (comm_link.h),
// with the side's Ops in the program's own process instead of a process of
// their own.
//
// The side is a process apart so that a grading's account is kept where the
// student's code can't write it. A trainer is graded by no one: it is the
// student's own run, whose figures (loss, accuracy, bytes by comm.h's
// formulas) are the program's to print. Across a link, each of its
// collectives cost two more wakeups of two more processes, which on a host
// with fewer cores than ranks made an 8-rank epoch half as slow again as
// before the side (docs/internals.md). Here the same Ops carry out the same
// requests, checked the same way, as a function call: the trainers are
// linked with this file ahead of the framework's comm_link_client.cpp
// (CMakeLists.txt), and tools/kitrun starts them without a side
// (BUILD/kit_in_process.txt), unless KIT_TRAINERS_SIDE=1 asks for one.
// The test binaries and the student's process of the driven mode never link it.
#include <malloc.h>
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "comm_link.h"
#include "comm_side_child.h"
#include "comm_side_ops.h"
#include "traffic.h"

namespace dtrain::link {

// comm_link_client.cpp, compiled into this link as well: a trainer started
// under a side (KIT_TRAINERS_SIDE=1, tools/kitrun) talks to it as the tests do.
namespace socket {
bool available();
void enter(const char* function, std::int64_t argument);
Reply call(const Header& request, const void* in, void* out, std::size_t out_capacity, std::string* text);
[[noreturn]] void abort_job(int exit_code);
}  // namespace socket

namespace {

struct InProcess {
  side::Traffic traffic;  // keeps no record: no runner reads a trainer's account
  std::unique_ptr<side::Ops> ops;
  bool finalized = false;
};

// Whatever thread asks first starts MPI; the calls are one at a time (the
// mutex below), so MPI sees one thread at a time.
InProcess& state() {
  static InProcess* s = [] {
    int provided = 0;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) {
      std::fprintf(stderr, "kit: MPI_Init failed\n");
      std::_Exit(70);
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    // Each request's buffers come and go at the same few sizes, as in a
    // side (comm_side_main.cpp): glibc keeps the freed ones for the next,
    // rather than mapping each anew and faulting its pages in.
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 64 << 20);
    auto* made = new InProcess;
    made->ops = std::make_unique<side::Ops>(made->traffic);
    return made;
  }();
  return *s;
}

std::mutex& call_mutex() {
  static std::mutex& mu = *new std::mutex;  // never destroyed: a thread may call at exit
  return mu;
}

// The launcher announced a rank: the program was started by mpirun or
// mpiexec (through tools/kitrun), so MPI_Init will find its job.
bool launched() { return side::launcher_rank() != "-1"; }

// A collective MPI can carry from the caller's buffer into the caller's
// answer, with no request's copy between: the data a trainer's collectives
// move, where the buffers don't overlap (or are one, for a reduction: in place).
bool carried_on_the_callers_buffers(const Header& h, const void* in, void* out, std::size_t out_capacity,
                                    const std::string* text) {
  if (h.kind != Kind::Allreduce && h.kind != Kind::Allgather && h.kind != Kind::ReduceScatter) return false;
  if (text != nullptr || in == nullptr || out == nullptr || h.in_bytes == 0) return false;
  const auto* a = static_cast<const char*>(in);
  const auto* b = static_cast<const char*>(out);
  return (a == b && h.kind != Kind::Allgather) || a + h.in_bytes <= b || b + out_capacity <= a;
}

}  // namespace

bool available() { return socket::available() || launched(); }

void enter(const char* function, std::int64_t argument) {
  if (socket::available()) return socket::enter(function, argument);
  if (!available()) return;
  const std::lock_guard<std::mutex> lock(call_mutex());
  const std::string name(function, std::min(std::strlen(function), kMostNameBytes));
  state().traffic.enter(name, argument);
}

Reply call(const Header& request, const void* in, void* out, std::size_t out_capacity, std::string* text) {
  if (socket::available()) return socket::call(request, in, out, out_capacity, text);
  if (!available())
    throw std::runtime_error("this program was not started by an MPI launcher: start it with tools/kitrun "
                             "(make train, ...)");
  const std::lock_guard<std::mutex> lock(call_mutex());
  InProcess& s = state();
  if (request.kind == Kind::Finalize) {
    if (!s.finalized) {
      s.finalized = true;
      s.ops->finish_requests();
      s.traffic.flush();
      MPI_Finalize();
    }
    return Reply{};
  }
  Header h = request;
  h.in_at = h.out_at = h.out_capacity = 0;
  if (carried_on_the_callers_buffers(h, in, out, out_capacity, text)) {
    Reply reply{};
    reply.out_bytes = s.ops->collective(h, in, request.in_bytes, out, out_capacity);
    return reply;
  }
  const char* from = static_cast<const char*>(in);
  std::vector<char> data(from, from + (from != nullptr ? request.in_bytes : 0));
  // What Ops throws (std::invalid_argument for a request that breaks the
  // link's rules, std::runtime_error for MPI's failures) is what the
  // client throws for a side's refusal: it goes to the caller as it is.
  const side::Answer answer = s.ops->handle(h, data);
  Reply reply = answer.reply;
  reply.out_bytes = answer.data.size() + answer.tail.size();
  if (text != nullptr) {
    text->assign(answer.data.begin(), answer.data.end());
    text->append(answer.tail.begin(), answer.tail.end());
    return reply;
  }
  if (reply.out_bytes > out_capacity)
    throw std::runtime_error("the kit's link: an answer of " + std::to_string(reply.out_bytes) +
                             " bytes for a buffer of " + std::to_string(out_capacity));
  if (!answer.data.empty()) std::memcpy(out, answer.data.data(), answer.data.size());
  if (!answer.tail.empty()) std::memcpy(static_cast<char*>(out) + answer.data.size(), answer.tail.data(), answer.tail.size());
  return reply;
}

void abort_job(int exit_code) {
  if (socket::available()) socket::abort_job(exit_code);
  int started = 0;
  if (MPI_Initialized(&started) == MPI_SUCCESS && started != 0) MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::_Exit(exit_code);
}

}  // namespace dtrain::link
