// ledger_requests.cpp: the ledger's part in a non-blocking request's life
// (ledger.h): its start, the tests that find it still running, its
// completion, and what the open CallLogs learn of each (the wait on it is a
// timed call's, ledger.cpp's WaitingFor).
#include <algorithm>
#include <mutex>
#include <string>
#include <utility>

#include "call_context.h"
#include "comm_runtime.h"
#include "ledger.h"
#include "rank_state.h"

namespace dtrain {

namespace comm_detail {

namespace {

// The open CallLogs get one more event; the caller holds the ledger's lock.
void log_event(Ledger& l, ledger::LoggedCall::Event event, const Request::State& s, int failed_tests) {
  for (auto* log : l.logs) log->push_back({event, s.op, s.count, s.comm, -1, -1, s.id, failed_tests});
}

// s's failed tests leave the count: those of the student call running now
// are returned, an earlier call's (tests made outside any student call, so
// that no call's end logged them) are logged first. The caller holds the lock.
int take_failed_tests(Ledger& l, Request::State& s) {
  const auto listed = std::find(l.tested_running.begin(), l.tested_running.end(), &s);
  if (listed == l.tested_running.end()) return 0;
  l.tested_running.erase(listed);
  const int failed = std::exchange(s.failed_tests, 0);
  if (s.tests_serial == ledger::student_call_serial()) return failed;
  log_event(l, ledger::LoggedCall::Event::TestedRunning, s, failed);
  return 0;
}

}  // namespace

std::string request_text(const Request::State& s) {
  return dtrain::request_text(RequestView{s.op, s.seq, s.count, s.comm, s.function});
}

void request_started(Request::State& s) {
  Ledger& l = the_ledger();
  std::lock_guard<std::mutex> lock(l.mu);
  s.id = l.request;
  s.op = l.op;
  s.seq = l.seq;
  s.count = l.count;
  s.reduction = l.reduction;
  s.comm = l.comm;
  s.function = l.function;
  if (l.members) s.members = *l.members;
  l.pending.push_back(&s);
}

void request_completed(Request::State& s, const char* by) {
  const double now = steady_seconds();
  Ledger& l = the_ledger();
  std::lock_guard<std::mutex> lock(l.mu);
  s.complete = true;
  l.pending.erase(std::remove(l.pending.begin(), l.pending.end(), &s), l.pending.end());
  if (!l.tracing) return;
  LedgerEntry e;
  e.op = s.op;
  e.seq = s.seq;
  e.count = s.count;
  e.reduction = s.reduction == kNoReduction ? "" : kReductionNames[s.reduction];
  e.comm = s.comm;
  e.function = s.function;
  e.ranks = s.members;
  e.start = s.start;
  e.end = now;
  e.bytes = s.bytes;
  e.request = s.id;
  e.completed_by = by;
  l.kept.push_back(std::move(e));
}

void request_claimed(Request::State& s, ledger::LoggedCall::Event how) {
  const LibraryAllocations library;
  Ledger& l = the_ledger();
  std::lock_guard<std::mutex> lock(l.mu);
  s.claimed = true;
  log_event(l, how, s, take_failed_tests(l, s));
}

void request_tested_running(Request::State& s) {
  const LibraryAllocations library;
  Ledger& l = the_ledger();
  std::lock_guard<std::mutex> lock(l.mu);
  const std::uint64_t serial = ledger::student_call_serial();
  if (s.tests_serial != serial) take_failed_tests(l, s);
  if (s.failed_tests++ == 0) l.tested_running.push_back(&s);
  s.tests_serial = serial;
}

void request_gone(Request::State& s) {
  Ledger& l = the_ledger();
  std::lock_guard<std::mutex> lock(l.mu);
  l.tested_running.erase(std::remove(l.tested_running.begin(), l.tested_running.end(), &s), l.tested_running.end());
  l.pending.erase(std::remove(l.pending.begin(), l.pending.end(), &s), l.pending.end());
}

}  // namespace comm_detail

namespace ledger {

void student_call_ended() {
  comm_detail::Ledger& l = comm_detail::the_ledger();
  std::lock_guard<std::mutex> lock(l.mu);
  for (Request::State* s : l.tested_running)
    comm_detail::log_event(l, LoggedCall::Event::TestedRunning, *s, std::exchange(s->failed_tests, 0));
  l.tested_running.clear();
}

}  // namespace ledger

}  // namespace dtrain
