// ledger.h: how the communicator records its calls in the ledger (the
// ledger's public face is comm_runtime.h). Private to the communicator's files.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "comm_internal.h"
#include "comm_runtime.h"
#include "heap_watch.h"
#include "kit_facts.h"  // generated from kit/facts.py

namespace dtrain::comm_detail {

// The operations' codes and names, is_point_to_point and is_collective (the
// calls every rank of a communicator makes at the same point of its sequence,
// which the agreement check compares): kit/facts.py, shared with the records.
using namespace facts;

// The other end of a point-to-point call, by rank on its communicator; -1
// for the direction a call does not have (a send has no source).
struct Peers {
  int dest = -1, source = -1;
  int send_tag = -1, recv_tag = -1;
};

inline std::string plural(long n, const char* word) { return std::to_string(n) + " " + word + (n == 1 ? "" : "s"); }

}  // namespace dtrain::comm_detail

namespace dtrain {

// A request in flight and what started it (comm_request.cpp): the ledger
// lists it from its start until the kit sees it complete, for the
// roll-call, the trace and the message of a request dropped unwaited.
struct Request::State {
  comm_detail::RawRequest mpi = comm_detail::null_request();  // the side's number for it
  double* dst = nullptr;     // where its result goes when it completes
  long dst_count = 0;
  long id = 0;               // LedgerEntry::request
  bool complete = false;     // MPI said so (in wait, test or the kit's progress)
  bool claimed = false;      // the owner saw it complete (wait, or a test that returned true)
  comm_detail::OpCode op = comm_detail::kIallreduce;
  long seq = 0, count = 0;
  std::int64_t reduction = comm_detail::kNoReduction;
  std::string comm;          // the communicator's name when it started
  std::string function;      // the student function that started it, or ""
  std::vector<int> members;  // the communicator's, by rank in MPI's world
  double start = 0;          // steady_seconds() when it started
  std::uint64_t bytes = 0;
  // test() calls that found it still running in one student call (a loop of
  // them is a wait), and that call's serial: logged with its completion, or
  // as a tested_running entry when the call ends (ledger::student_call_ended).
  int failed_tests = 0;
  std::uint64_t tests_serial = 0;
};

}  // namespace dtrain

namespace dtrain::comm_detail {

// What the ledger holds, for ledger.cpp, which writes it, and
// ledger_state.cpp, which tells it in the roll-call.
struct Ledger {
  std::mutex mu;  // the watchdog thread reads what the main thread writes
  bool checking = false, tracing = false;
  // The call in flight.
  bool active = false;
  OpCode op = kAllreduce;
  long seq = 0, count = 0;
  std::int64_t reduction = kNoReduction;
  Peers peers;  // a point-to-point call's other ends, by rank on its communicator
  long request = 0;  // an iallreduce's: the id of the request it starts
  std::string comm;
  std::string function;
  const std::vector<int>* members = nullptr;  // the handle's, alive while the call lasts
  double since = 0;                           // when it was made, if tracing
  // This case's calls, per communicator id.
  struct Counts {
    std::string name;  // the communicator's at its last call
    long collectives = 0, point_to_point = 0;
  };
  std::map<int, Counts> per_comm;
  std::vector<LedgerEntry> kept;
  std::uint64_t recorded = 0;
  std::vector<std::vector<ledger::LoggedCall>*> logs;  // the open CallLogs' (a test's, and a rule check's inside it)
  // The requests started and not yet seen complete, oldest first, and the
  // one this rank waits for now (in Request::wait), if any.
  std::vector<Request::State*> pending;
  const Request::State* waiting_for = nullptr;
  long requests = 0;  // the last request id given
  // The requests whose failed test() calls in the student call now running are not logged yet.
  std::vector<Request::State*> tested_running;
};

Ledger& the_ledger();

// A rank on the call's communicator as a rank of MPI's world (the roll-call's and the trace's).
int world_rank(const Ledger& l, int rank);

// Held while the ledger's records change; the watchdog thread reads them,
// and a communicator's name with them.
std::mutex& ledger_mutex();

// Seconds inside the timed collectives so far (CommAccess::seconds_in_collectives).
double collective_seconds();

// Every rank shares (operation, count, reduction) of the call it is about
// to make on h; if they differ, every rank throws CollectiveMismatch naming
// each rank's call (comm_agreement.cpp). One small collective of its own.
void agree(Communicator::Handle& h, OpCode op, long count, std::int64_t reduction);

// One call of the ledger: recorded when made, checked against the other
// ranks' calls when checking is on (before MPI sees it), and timed.
class Call {
 public:
  // sent: the buffer it sends (nullptr: none), of `sent_count` elements
  // (-1: count), whose first element and sum the call logs keep.
  Call(Communicator::Handle& h, OpCode op, long count, std::int64_t reduction, bool timed,
       const double* sent = nullptr, long sent_count = -1);
  // A point-to-point call: recorded, timed, never agreed on (count: the elements it sends, or receives if none).
  Call(Communicator::Handle& h, OpCode op, long count, Peers peers, const double* sent = nullptr);
  void done(std::uint64_t bytes);
  ~Call();
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;

 private:
  // First, so that what the ledger, the agreement check and MPI allocate
  // for this call is never taken for the caller's (heap_watch.h).
  LibraryAllocations library_;
  bool timed_;
  bool finished_ = false;
  double start_ = 0;
};

// "iallreduce #3 on comm (66 elements), started in FUNCTION": a request as
// the roll-call and the messages name it.
std::string request_text(const Request::State& s);

// The request s, just started by the Call that is still in flight: the
// ledger lists it, and its start goes to the open CallLogs.
void request_started(Request::State& s);
// The kit has seen s complete, through `by` ("wait", "test", "progress",
// "destroyed"): the ledger lists it no more, and keeps its span when tracing.
void request_completed(Request::State& s, const char* by);
// Its owner saw it complete (wait, or a test that returned true): to the open
// CallLogs, with the test() calls of this student call that found it running.
void request_claimed(Request::State& s, ledger::LoggedCall::Event how);  // Waited or Tested
// A test() found s still running: counted for the student call now running.
void request_tested_running(Request::State& s);
// s goes away (its Request is destroyed): the ledger forgets it.
void request_gone(Request::State& s);

// While one lives, this rank waits in Request::wait for s: the roll-call
// says so, and the trace keeps the span (as a "wait" entry) when tracing.
class WaitingFor {
 public:
  explicit WaitingFor(const Request::State& s);
  ~WaitingFor();
  WaitingFor(const WaitingFor&) = delete;
  WaitingFor& operator=(const WaitingFor&) = delete;

 private:
  const Request::State& s_;
  double start_;
};

}  // namespace dtrain::comm_detail
