// comm_side_mpi.cpp: see comm_side_mpi.h.
#include "comm_side_mpi.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <stdexcept>
#include <string>

namespace dtrain::side {

void check_mpi(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(rc, text, &length) != MPI_SUCCESS) length = 0;
  throw std::runtime_error(std::string(call) + " failed: " + std::string(text, static_cast<size_t>(length)));
}

void bad_request(const std::string& why) { throw std::invalid_argument("the kit's MPI side refused a request: " + why); }

static double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

namespace {
constexpr double kLongWait = 0.05;       // s: see idle_pause
constexpr double kSameWaitGap = 0.001;   // s between two pauses of one wait, at most
constexpr timespec kSleep{0, 500000};    // 0.5 ms
// Per thread: Open MPI's own threads pause too, and none of them serves requests.
thread_local double request_start = 0;   // 0: no pause yet since the request began
thread_local double last_pause_end = 0;
}  // namespace

void request_begins() { request_start = 0; }

void idle_pause(Idle idle) {
  const double now = steady_seconds();
  // A pause long after the last one is a new wait (a thread that serves no
  // requests, or a wait outside one).
  if (request_start == 0 || now - last_pause_end > kSameWaitGap) request_start = now;
  if (idle == Idle::Sleep || now - request_start > kLongWait)
    nanosleep(&kSleep, nullptr);
  else
    syscall(SYS_sched_yield);  // the kernel's: the name sched_yield is idle_pause's now
  last_pause_end = steady_seconds();
}

void poll_until(const std::function<bool()>& done, Idle idle) {
  constexpr long kPollsBeforeIdle = 100;
  for (long polls = 0;; ++polls) {
    if (done()) return;
    if (polls >= kPollsBeforeIdle) idle_pause(idle);
  }
}

bool request_done(MPI_Request& request, const char* call) {
  int done = 0;
  check_mpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), call);
  return done != 0;
}

void wait_polling(MPI_Request& request, const char* call, Idle idle) {
  poll_until([&] { return request_done(request, call); }, idle);
}

}  // namespace dtrain::side

// Open MPI's idle progress (mpi_yield_when_idle) calls sched_yield between
// polls of a blocking collective: the side's executable defines it, and
// exports it (CMakeLists.txt), so that those waits pause as the side's own
// do. It is C's, outside the namespace.
extern "C" int sched_yield() noexcept {
  dtrain::side::idle_pause(dtrain::link::Idle::Yield);
  return 0;
}
