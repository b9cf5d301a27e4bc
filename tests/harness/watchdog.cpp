// watchdog.cpp: the case watchdog and its roll-call (watchdog.h).
#include "watchdog.h"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "comm_runtime.h"
#ifdef KIT_DRIVEN
#include "driven.h"
#endif
#include "job.h"
#include "kit_facts.h"
#include "platform.h"
#include "records.h"
#include "trace.h"

namespace harness {

namespace {

std::chrono::steady_clock::duration seconds_of(double seconds) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
}

// A case's tag on the roll-call board: its name hashed (FNV-1a), never 0,
// the board's "nobody answered yet".
std::uint32_t board_tag(const std::string& name) {
  std::uint32_t h = 2166136261u;
  for (const unsigned char c : name) h = (h ^ c) * 16777619u;
  return h | 1u;
}

}  // namespace

Watchdog::Watchdog()
    : cores_(std::max(1u, std::thread::hardware_concurrency())),
      cpus_(job().cpus > 0 ? job().cpus : cores_),
      thread_([this] { loop(); }) {}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    quit_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Watchdog::arm(double seconds, const std::string& case_name, int ranks) {
  std::lock_guard<std::mutex> lock(mu_);
  armed_ = true;
  started_ = Clock::now();
  open_window(seconds);
  case_ = case_name;
  ranks_ = ranks;
  answered_.clear();
  cv_.notify_all();
}

void Watchdog::shorten(double seconds, const std::string& failure) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!failed_) failure_ = failure.substr(0, failure.find('\n'));
  const auto soon = Clock::now() + seconds_of(seconds);
  failed_ = true;
  if (armed_ && soon < deadline_) {
    open_window(seconds);
    cv_.notify_all();
  }
}

void Watchdog::disarm() {
  std::lock_guard<std::mutex> lock(mu_);
  armed_ = false;
  failed_ = false;
  body_done_ = false;
}

void Watchdog::body_done() {
  std::lock_guard<std::mutex> lock(mu_);
  body_done_ = true;
}

void Watchdog::open_window(double seconds) {
  window_from_ = last_look_ = Clock::now();
  window_seconds_ = seconds;
  could_run_ = 0;
  deadline_ = window_from_ + seconds_of(seconds);
}

// A time limit counts time the case could have run, not the clock's
// (dtrain::facts::time_share, kit/facts.py): in full on a host no busier
// than the case's own ranks make it, in proportion to the case's share of
// the cores on a busier one (CPU hogs, other graders), and in proportion to
// a container's CPU quota below the limits' one CPU (Gradescope's 0.5,
// PrairieLearn's 0.9), whose throttled tasks the host's run queue does not
// show. So neither a loaded host nor a small container turns a slow correct
// case into a timeout (the slowest correct case takes under a fifth of its
// limit at 0.5 CPU in `make check-platforms`), and a deadlock on an idle
// host still ends after the limit (at most kMostStretch times it). (Waiting
// ranks poll and yield, so their own run-queue time says nothing.)
bool Watchdog::due() {
  const auto now = Clock::now();
  const double counts = dtrain::facts::time_share(ranks_, cores_, dtrain::platform::runnable_tasks(), cpus_);
  could_run_ += std::chrono::duration<double>(now - last_look_).count() * counts;
  last_look_ = now;
  const double elapsed = std::chrono::duration<double>(now - window_from_).count();
  return could_run_ >= window_seconds_ || elapsed >= window_seconds_ * dtrain::facts::kMostStretch;  // could_run_ <= elapsed
}

// The ranks that answered this case's roll-call so far, from the board.
// Each rank sets only its own slot, after its record is on its way; the
// board decides nothing but when to stop waiting (the runner reads the
// answers themselves from the records).
const std::set<int>& Watchdog::answered() {
  std::uint32_t* board = job().board;
  if (board == nullptr) return answered_;
  const std::uint32_t tag = board_tag(case_);
  for (int r = 0; r < std::min(ranks_, kBoardSlots); ++r)
    if (__atomic_load_n(&board[r], __ATOMIC_ACQUIRE) == tag) answered_.insert(r);
  return answered_;
}

// One line: what this rank is doing, for the roll-call. The ledger's state
// is the call it waits in, or what it did so far ("after 2 collectives on
// dp_comm", "without a collective"), then the requests nobody waits for.
std::string Watchdog::state() const {
#ifdef KIT_DRIVEN
  // The student's code runs in a process of its own: what it does, from its side's page.
  const std::string ledger_state = dtrain::calls::student_state();
#else
  const std::string ledger_state = dtrain::ledger::state();
#endif
  const bool waiting = ledger_state.rfind("waiting in ", 0) == 0;
  const std::string none = "without a collective";
  const bool idle = ledger_state.rfind(none, 0) == 0;
  // ", after 2 collectives on dp_comm; 1 request ...", "; 1 request ...", or "".
  const std::string after = waiting ? "; " + ledger_state : idle ? ledger_state.substr(none.size()) : ", " + ledger_state;
  if (failed_) return "failed (" + failure_ + "), then waited for the others" + after;
  if (body_done_) return "finished the case " + ledger_state;
  if (waiting) return ledger_state;
  const std::string function = dtrain::ledger::function_now();
  return (function.empty() ? "still running the test's own code" : "still running " + function) +
         ", outside any call of the communicator" + after;
}

void Watchdog::roll_call(std::unique_lock<std::mutex>& lock) {
  const int rank = job().rank;
  const double elapsed = std::chrono::duration<double>(Clock::now() - started_).count();
  const std::string mine = state();
  // Before answering: once every rank has answered, the job may end at any moment.
  if (!job().trace_dir.empty())
    dtrain::write_trace_part(job().trace_dir + "/" + case_ + ".rank" + std::to_string(rank) + ".json", rank);
  // The call it waits in and where it is in the case go with it as data: the runner diagnoses from them.
  dtrain::ledger::WaitingCall wait;
  std::string wait_json;
#ifdef KIT_DRIVEN
  const bool waits = dtrain::calls::student_waiting_call(wait);  // the student's process's, from its side's page
#else
  const bool waits = dtrain::ledger::waiting_call(wait);
#endif
  if (!failed_ && !body_done_ && waits)
    wait_json = records::rollcall_wait(dtrain::facts::kOpNames[wait.op], wait.to, wait.send_tag, wait.from,
                                       wait.recv_tag, wait.seq, wait.count, wait.group);
  const char* phase = failed_ ? "failed" : body_done_ ? "finished" : "running";
  write_record(records::rollcall(case_, rank, mine, elapsed, phase, wait_json));
  if (job().board != nullptr && rank < kBoardSlots) __atomic_store_n(&job().board[rank], board_tag(case_), __ATOMIC_RELEASE);
  if (job().board == nullptr) {  // run bare (KIT_BARE=1): no runner will show the roll-call
    std::fprintf(stderr, "[rank %d] %s did not finish (%.1f s): %s\n", rank, case_.c_str(), elapsed, mine.c_str());
    if (rank == 0)
      std::fprintf(stderr, "The job ends here, and the cases after this one do not run. tools/kitrun without "
                           "KIT_BARE (or make test-partN) runs the remaining cases in a new job.\n");
    std::fflush(nullptr);
    // The ranks' watchdogs fire together: give the others time to say theirs before this one ends the job.
    cv_.wait_for(lock, std::chrono::seconds(1));
  }
  const auto give_up = Clock::now() + seconds_of(kRollCallWaitSeconds);
  while (job().board != nullptr && static_cast<int>(answered().size()) < ranks_ && Clock::now() < give_up)
    cv_.wait_for(lock, std::chrono::duration<double>(kPollSeconds));
  std::_Exit(124);
}

void Watchdog::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!quit_) {
    if (!armed_) {
      cv_.wait(lock);
      continue;
    }
    cv_.wait_until(lock, Clock::now() + seconds_of(kPollSeconds));
    if (!armed_ || quit_) continue;
    if (!answered().empty() || due()) roll_call(lock);
  }
}

}  // namespace harness
