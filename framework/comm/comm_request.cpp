// comm_request.cpp: the Request of comm.h (a non-blocking call in flight),
// and CommAccess::progress. The ledger lists a request from its start
// (Communicator::iallreduce, comm.cpp) until the kit sees it complete.
#include <cstdio>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "comm_internal.h"
#include "comm_runtime.h"
#include "ledger.h"
#include "observe.h"

namespace dtrain {

using namespace comm_detail;

namespace {

// The side holds the request's buffers; its result reaches the owner's dst
// only when the kit sees it complete.
bool test_side(Request::State& s) {
  link::Header h = link::request(link::Kind::Test);
  h.ask.pending.request = s.mpi;
  const link::Reply r = ask(h, nullptr, 0, s.dst,
                            static_cast<std::size_t>(s.dst_count) * sizeof(double));
  return r.answer.test.complete == 1;
}

void wait_side(Request::State& s) {
  link::Header h = link::request(link::Kind::Wait);
  h.ask.pending.request = s.mpi;
  ask(h, nullptr, 0, s.dst, static_cast<std::size_t>(s.dst_count) * sizeof(double));
}

// A request dropped unwaited fails the case, and the kit waits for it: its
// dst then holds the result, as it would have had the owner waited.
// Then the ledger forgets it (past MPI's end, at the program's exit, the
// ledger may be gone before it: nothing is touched then).
void drop(Request::State& s) {
  const std::string what = "a Request was destroyed before anyone waited for it: " + request_text(s) +
                           "; call wait() on every request (or test() it until it returns true) before it goes away";
  if (MpiSession::finalized()) return;  // a request kept past the end of the program: nothing left to wait for
  if (under_test()) {
    rule_broken(what);  // the case fails; the rank goes on
  } else {
    const int rank = Communicator::world().rank();
    std::fprintf(stderr, "[rank %d] %s\n", rank, what.c_str());
    std::fflush(stderr);
    MpiSession::abort_job(1);
  }
  if (!s.complete) {  // else the kit's progress saw it complete: nothing left to wait for
    try {
      WaitingFor waiting(s);
      wait_side(s);
      request_completed(s, "destroyed");
    } catch (...) {
      // MPI failed: nothing more a destructor can do
    }
  }
  request_gone(s);
}

}  // namespace

Request::Request() noexcept = default;
Request::Request(std::unique_ptr<State> state) noexcept : state_(std::move(state)) {}
Request::Request(Request&& other) noexcept = default;

Request& Request::operator=(Request&& other) noexcept {
  if (this != &other) {
    Request old(std::move(*this));  // assigning over a request in flight drops it
    state_ = std::move(other.state_);
  }
  return *this;
}

Request::~Request() {
  if (state_ && !state_->claimed) drop(*state_);
}

void Request::wait() {
  if (!state_ || state_->claimed) return;
  State& s = *state_;
  if (!s.complete) {
    // A peer may still be computing its backward: sleep between polls after a while.
    WaitingFor waiting(s);
    wait_side(s);
    request_completed(s, "wait");
  }
  request_claimed(s, ledger::LoggedCall::Event::Waited);
}

bool Request::test() {
  if (!state_ || state_->claimed) return true;
  State& s = *state_;
  if (!s.complete) {
    if (!test_side(s)) {
      request_tested_running(s);
      return false;
    }
    request_completed(s, "test");
  }
  request_claimed(s, ledger::LoggedCall::Event::Tested);
  return true;
}

void CommAccess::progress() {
  std::vector<Request::State*> pending;
  {
    const std::lock_guard<std::mutex> lock(ledger_mutex());
    pending = the_ledger().pending;
  }
  for (Request::State* s : pending)
    if (test_side(*s)) request_completed(*s, "progress");
}

}  // namespace dtrain
