// comm_runtime.h: MPI start-up and the few extra operations the framework's
// own programs and test harness need, and the ledger's public face. Student
// code never includes it.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <vector>

#include "call_context.h"  // which student function runs (StudentScope sets it)
#include "kit_facts.h"     // the ledger's operations (facts::OpCode), generated from kit/facts.py
#include "comm.h"

namespace dtrain {

// The one scope object of the link to the rank's MPI side (comm_link.h), which
// holds MPI: the side started this program, and ends MPI when the session
// ends. Every program and test main creates exactly one, first thing in main.
class MpiSession {
 public:
  MpiSession(int& argc, char**& argv);
  ~MpiSession();
  // Whether the session is over (MPI with it).
  static bool finalized();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  // Ends every rank of the job at once, from any rank (MPI_Abort).
  [[noreturn]] static void abort_job(int exit_code);

  // This process's rank as the launcher announced it, readable before the
  // link is used (the side passes it on); -1 if none did.
  static int launcher_rank();
};

struct CommAccess {
  // A private copy of the world communicator, so that framework traffic can
  // never be matched against a student's collective. Collective.
  static Communicator duplicate_world();
  // The same for any communicator; collective over its ranks only.
  static Communicator duplicate(Communicator& comm);

  // A barrier whose waiting ranks sleep instead of spinning, so ranks with
  // nothing to do leave the CPU to the others (more ranks than cores).
  static void rendezvous(Communicator& comm);

  // Every rank passes its text; rank `root` receives all of them, indexed by
  // rank (other ranks receive an empty vector). Not counted in bytes_transferred.
  static std::vector<std::string> gather_text(Communicator& comm, const std::string& mine, int root);

  // Collective max of one integer over the communicator. Not counted.
  static long max_over_ranks(Communicator& comm, long value);

  // `values` salted in place by the rank's MPI side, with the hidden cases'
  // salt, which only the side holds (side/comm_side_salt.h); unchanged in a
  // job without one. Not collective.
  static void salt(double* values, std::size_t count);

  // Seconds on this host's steady clock (CLOCK_MONOTONIC), which every
  // process of the host reads alike; MPI_Wtime may count from each process's
  // start, so two ranks' times could not be compared.
  static double wall_time();

  // This host's steady clock against that of rank 0's host, measured by the
  // quickest of a few round trips between rank 0 and the host's first rank.
  // Ranks on rank 0's host (same processor name) read 0 and 0. Collective.
  struct ClockOffset {
    double seconds = 0;      // this host's clock minus rank 0's host's
    double uncertainty = 0;  // half the round trip that measured it
    std::string host;        // this rank's processor name
  };
  static ClockOffset clock_offset(Communicator& comm);

  // Seconds this process has spent inside allreduce, allgather and
  // reduce_scatter, on any communicator, waiting for other ranks included.
  static double seconds_in_collectives();

  // Tests every request of this process still in flight (MPI_Test), so that
  // each one moves on where the MPI needs a call to move it, and the ledger
  // notes when it completed. The requests stay the student's: they must
  // still wait for them. The data-parallel trainer calls it between layers.
  static void progress();

  // The driven mode (framework/calls/driven.h), where the harness and the
  // student's code run in two processes of the rank, both served by its
  // side: a communicator by the side's number for it, which means the same
  // in both; and a communicator the other process made, by that number,
  // named `name` in this one. A borrowed one is not freed with its object:
  // the process that made it frees it. Neither is collective.
  // `members` (by rank in MPI's world), where the lender says them, saves
  // asking the side: a request the call's account would hold.
  static std::int32_t side_number(const Communicator& comm);
  static const std::vector<int>& members(const Communicator& comm);
  static Communicator borrow(std::int32_t side_number, const std::string& name, std::vector<int> members = {});

  // The test case now beginning, for the MPI side's account of its traffic
  // (side/traffic.h), or "" once it is over (its account then goes out).
  // Not collective.
  static void account_case(const std::string& name);

  // While a case runs, the MPI side is told where each student call begins
  // and returns (StudentScope does it): it places every request of the
  // case by the call that made it, and reads this process's memory at each
  // return (side/traffic.h). `argument`: the call's key argument, which the
  // side keeps beside its requests (the index of a parameter, say). Outside a case
  // neither costs anything. Not collective.
  static void mark_call(const char* function, std::int64_t argument);
  // The driven mode's harness (framework/calls/driven.h) says so first: the
  // side marks the calls it hands on, and these two then mark nothing.
  static void drive_calls();
  static void mark_return(const char* function);
  // The driven mode's student process, while it carries out a call: the
  // side keeps the call's account then, so a one-rank collective is told
  // to it, as in a case (comm.cpp); nothing is marked.
  static void serving(bool now);

  // The name the ledger gives the communicator ("world", "mp_comm", or the
  // split it came from: "split(color 1, key 0) of world").
  static void set_name(Communicator& comm, const std::string& name);
  static std::string name(const Communicator& comm);
};

// Set around every call into student code (student_calls.h does it for the
// framework and the tests): the ledger and the error messages name the
// function, and the communicator it was handed goes by its parameter name
// (mp_comm, dp_comm, comm) while the call lasts.
class StudentScope {
 public:
  // `argument`: what the MPI side keeps beside the call's requests (CommAccess::mark_call).
  StudentScope(const char* function, Communicator* comm = nullptr, const char* comm_name = nullptr,
               std::initializer_list<ArgShape> args = {}, std::int64_t argument = 0);
  ~StudentScope();
  StudentScope(const StudentScope&) = delete;
  StudentScope& operator=(const StudentScope&) = delete;

 private:
  const char* function_;
  const char* outer_function_;
  int exceptions_at_start_;  // to tell an exception leaving the function from a normal return
  Communicator* comm_;
  std::string outer_comm_name_;
  std::vector<ArgShape> outer_args_;
};

// How the kit names ranks in its messages: "rank 2", "ranks 0,3" (in
// Python: kit/diagnosis.py, rank_label).
std::string rank_list(const std::vector<int>& ranks);

// One recorded call of the ledger (kept while tracing) or a phase span.
struct LedgerEntry {
  // The call: kIallreduce is a request, from its start to its completion;
  // kWait the time a rank was blocked in Request::wait. None (0) for a phase.
  facts::OpCode op{};
  std::string phase;     // a phase span's name ("forward", "backward", ...), or "" for a call
  bool collective = true;
  long seq = 0;          // position in its communicator's sequence, from 1
  long count = 0;        // elements: allreduce's src, allgather's src, reduce_scatter's dst, what a send sends
  std::string reduction; // "Sum", "Min", "Max", or "" when the call reduces nothing
  std::string comm;      // the communicator's name at the time of the call
  std::string function;  // the student function running, or ""
  double start = 0, end = 0;  // CommAccess::wall_time()
  std::uint64_t bytes = 0;    // what bytes_transferred() counted for it
  std::vector<int> ranks;     // the communicator's members, by rank in MPI's world
  std::string refused;        // the agreement check's message, if it refused the call
  bool pending = false;       // still waiting when the entry was taken (ledger::in_flight)
  // Point-to-point calls ("send", "recv", "sendrecv"): the other ends, by
  // rank in MPI's world, and the tags; -1 for a direction the call lacks.
  int dest = -1, source = -1, send_tag = -1, recv_tag = -1;
  // A request's span ("iallreduce") and the waits on it share its id (from 1,
  // per process; 0 for every other entry). completed_by: what saw the
  // request complete: "wait", "test", "progress" (the kit's own poll,
  // CommAccess::progress) or "destroyed" (its destructor, a failure).
  long request = 0;
  std::string completed_by;
};

namespace ledger {

// Agree on every collective before making it (see comm.h). Off by default.
void set_checking(bool on);
bool checking();
// Keep every call with its times, for --trace. Off by default.
void set_tracing(bool on);
bool tracing();
// Forget the counts of the previous test case.
void begin_case();
// What this rank is doing now, in one line, for the roll-call of a hung
// case: "waiting in allreduce #3 on dp_comm (2 elements) in collect_weight_grad",
// or what it did: "after 2 collectives on dp_comm". Safe from another thread.
std::string state();
// The call of the communicator this rank waits in, as data for the
// roll-call's record (the runner tells a cycle of sends, a tag mismatch and
// a message nobody takes from it): a point-to-point call's other ends by
// their rank in MPI's world, -1 where the call has no such end (a
// collective, or Request::wait, has none). In the driven mode, also the
// call's number on its communicator, its elements and the communicator's
// group, the same on each of its ranks (-1 elsewhere): every rank of a case
// in one collective is a stall no code causes (kit/diagnosis.py).
// False if it waits in no call.
struct WaitingCall {
  facts::OpCode op{};  // a point-to-point call, a collective, or kWait (a request)
  int to = -1, send_tag = -1, from = -1, recv_tag = -1;
  long seq = -1, count = -1, group = -1;
};
bool waiting_call(WaitingCall& out);
// A collective as a CallLog keeps it.
struct LoggedCall {
  // A call of the communicator (op), or a request's end: Waited (wait() saw
  // it complete), Tested (a test() returned true), TestedRunning (below).
  enum class Event { Call, Waited, Tested, TestedRunning };
  Event event;
  facts::OpCode op;  // the call's operation; a request's end: the request's (kIallreduce)
  long count;        // as LedgerEntry::count; a point-to-point call's: the elements it sends (a recv's: receives)
  std::string comm;  // the communicator's name at the time
  int dest = -1, source = -1;  // point-to-point: the other ends, by rank on comm
  long request = 0;  // a kIallreduce call and a request's ends: the request's id (LedgerEntry::request)
  // Waited, Tested: the test() calls that found the request still running
  // in the student call that saw it complete. TestedRunning (a request that
  // test() found running, logged when the student call ends): those calls.
  int failed_tests = 0;
  int send_tag = -1, recv_tag = -1;  // point-to-point: the tags of its two ends (-1 for the end it has not)
  // The first element the call sends (NaN: it sends none): which of two calls
  // of one size carried which buffer, where a part grades their order.
  double first = std::numeric_limits<double>::quiet_NaN();
  // The sum of the elements it sends, added in order (NaN: it sends none):
  // what a call carried, beyond its first element, for a part's checks.
  double sum = std::numeric_limits<double>::quiet_NaN();
};
// StudentScope's, as a student call ends: each request that test() found
// still running in that call, and that did not complete in it, goes to the
// open CallLogs as one TestedRunning entry.
void student_call_ended();
// While one lives, every collective this process makes is appended to it:
// the tests check a call's traffic with it (ZeRO-3 moves exactly what stage
// 3 needs). They nest: each open one gets every call.
class CallLog {
 public:
  CallLog();
  ~CallLog();
  CallLog(const CallLog&) = delete;
  CallLog& operator=(const CallLog&) = delete;
  // The calls so far, oldest first; the log starts again empty.
  std::vector<LoggedCall> take();

 private:
  std::vector<LoggedCall> calls_;
};
// The driven harness's (driven_harness.cpp): the requests the side saw a
// call of the student's process make, appended to every open log.
void log_calls(const std::vector<LoggedCall>& calls);
// The entries kept while tracing, oldest first; they are handed over once.
std::vector<LedgerEntry> take_entries();
// The collective this rank is in now, as an entry ending now (pending), for
// the trace of a case the watchdog stops; false if it is in none or not
// tracing. Safe from another thread.
bool in_flight(LedgerEntry& entry);
// Calls recorded by this process, and the mean cost of recording one in
// seconds (measured on the spot), for the bench's overhead figure.
std::uint64_t calls_recorded();
double seconds_per_record(long samples = 200000);

// A span of training (forward, backward, optimizer) for the trace.
class Phase {
 public:
  explicit Phase(const char* name);
  ~Phase();
  Phase(const Phase&) = delete;
  Phase& operator=(const Phase&) = delete;

 private:
  const char* name_;
  double start_;
};

}  // namespace ledger

}  // namespace dtrain
