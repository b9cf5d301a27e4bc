// comm_side_mpi.cpp: see comm_side_mpi.h.
#include "comm_side_mpi.h"

#include <sched.h>

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

void poll_until(const std::function<bool()>& done, Idle idle) {
  constexpr long kPollsBeforeIdle = 100;
  constexpr double kYieldSeconds = 0.05;  // YieldThenSleep: a wait longer than this has a peer elsewhere
  double idle_since = 0;
  for (long polls = 0;; ++polls) {
    if (done()) return;
    if (polls < kPollsBeforeIdle) continue;
    if (idle == Idle::YieldThenSleep) {
      if (polls == kPollsBeforeIdle) idle_since = steady_seconds();
      if (polls % 256 == 0 && steady_seconds() - idle_since > kYieldSeconds) idle = Idle::Sleep;
    }
    if (idle != Idle::Sleep) {
      sched_yield();
    } else {
      timespec pause{0, 500000};  // 0.5 ms
      nanosleep(&pause, nullptr);
    }
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
