// ledger.cpp: the collective ledger: each call a rank makes, for a hung
// case's roll-call (its text: ledger_state.cpp), the traffic checks
// (CallLog) and the trace (kept entries and phases), and the Call that
// records, checks and times one call (and a wait on a request; the rest of a
// request's life: ledger_requests.cpp).
#include "ledger.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include <limits>

#include "call_context.h"
#include "sent_digest.h"
#include "comm_runtime.h"

namespace dtrain {

namespace comm_detail {

namespace {

// Time inside the counted collectives, for the trainers' reports: how much
// of an epoch is communication (and waiting for the slowest rank).
double g_collective_seconds = 0;

// The bookkeeping of one call, apart from the agreement check and MPI, so
// the bench can time exactly this (ledger::seconds_per_record).
// A point-to-point call takes no place in its communicator's sequence of
// collectives (seq 0): only its two ranks make it.
void note_start(Communicator::Handle& h, OpCode op, long count, std::int64_t reduction, Peers peers = {},
                const double* sent = nullptr, long sent_count = -1) {
  const char* function = ledger::function_now_signal_safe();
  Ledger& l = the_ledger();
  std::lock_guard<std::mutex> lock(l.mu);
  const bool p2p = is_point_to_point(op);
  l.active = true;
  l.op = op;
  l.seq = p2p ? 0 : ++h.calls;
  l.count = count;
  l.reduction = reduction;
  l.peers = peers;
  l.comm = h.name;
  l.function = function ? function : "";
  l.members = &h.members;
  l.request = op == kIallreduce ? ++l.requests : 0;
  if (l.tracing) l.since = steady_seconds();
  auto& slot = l.per_comm[h.id];
  slot.name = h.name;
  if (p2p)
    ++slot.point_to_point;
  else
    slot.collectives = h.calls;
  ++l.recorded;
  if (l.logs.empty()) return;
  const SentDigest d = digest_of(sent, sent_count < 0 ? count : sent_count);  // only where a check reads it
  for (auto* log : l.logs)
    log->push_back({ledger::LoggedCall::Event::Call, op, count, h.name, peers.dest, peers.source, l.request, 0,
                    peers.send_tag, peers.recv_tag, d.first, d.sum});
}

// The call in flight as an entry; the caller holds the ledger's lock.
LedgerEntry entry_of(const Ledger& l, double start, double end) {
  LedgerEntry e;
  e.op = l.op;
  e.collective = l.op != kWait;
  e.seq = l.seq;
  e.count = l.count;
  e.reduction = l.reduction == kNoReduction ? "" : kReductionNames[l.reduction];
  e.comm = l.comm;
  e.function = l.function;
  if (l.members) e.ranks = *l.members;
  e.dest = world_rank(l, l.peers.dest);
  e.source = world_rank(l, l.peers.source);
  e.send_tag = l.peers.send_tag;
  e.recv_tag = l.peers.recv_tag;
  e.start = start;
  e.end = end;
  return e;
}

void note_end(double start, double end, std::uint64_t bytes) {
  Ledger& l = the_ledger();
  std::lock_guard<std::mutex> lock(l.mu);
  l.active = false;
  // A request's span runs from its start to its completion: kept then (request_completed).
  if (l.tracing && end > 0 && l.request == 0) {  // a call that failed before MPI saw it never ran
    LedgerEntry e = entry_of(l, start, end);
    e.bytes = bytes;
    l.kept.push_back(std::move(e));
  }
}

// The agreement check refused the call: the trace keeps it, marked, spanning
// the check (the one exchange all ranks made for it).
void note_refused(const char* why) {
  Ledger& l = the_ledger();
  std::lock_guard<std::mutex> lock(l.mu);
  l.active = false;
  if (!l.tracing) return;
  LedgerEntry e = entry_of(l, l.since, steady_seconds());
  e.refused = why;
  l.kept.push_back(std::move(e));
}

}  // namespace

WaitingFor::WaitingFor(const Request::State& s) : s_(s), start_(steady_seconds()) {
  const char* function = ledger::function_now_signal_safe();
  Ledger& l = the_ledger();
  std::lock_guard<std::mutex> lock(l.mu);
  l.active = true;
  l.op = kWait;
  l.seq = s.seq;
  l.count = s.count;
  l.reduction = s.reduction;
  l.peers = {};
  l.request = 0;
  l.comm = s.comm;
  l.function = function ? function : "";
  l.members = &s.members;
  l.since = start_;
  l.waiting_for = &s;
}

WaitingFor::~WaitingFor() {
  const double end = steady_seconds();
  g_collective_seconds += end - start_;
  Ledger& l = the_ledger();
  std::lock_guard<std::mutex> lock(l.mu);
  l.active = false;
  l.waiting_for = nullptr;
  if (!l.tracing) return;
  LedgerEntry e = entry_of(l, start_, end);
  e.request = s_.id;
  l.kept.push_back(std::move(e));
}

Ledger& the_ledger() {
  static Ledger ledger;
  return ledger;
}

int world_rank(const Ledger& l, int rank) {
  if (rank < 0 || !l.members || rank >= static_cast<int>(l.members->size())) return rank;
  return (*l.members)[static_cast<size_t>(rank)];
}

double collective_seconds() { return g_collective_seconds; }

std::mutex& ledger_mutex() { return the_ledger().mu; }

Call::Call(Communicator::Handle& h, OpCode op, long count, std::int64_t reduction, bool timed, const double* sent,
           long sent_count)
    : timed_(timed) {
  note_start(h, op, count, reduction, {}, sent, sent_count);
  if (the_ledger().checking) {
    try {
      agree(h, op, count, reduction);
    } catch (const CollectiveMismatch& mismatch) {
      note_refused(mismatch.what());
      throw;
    } catch (...) {
      note_end(0, 0, 0);
      throw;
    }
  }
  start_ = steady_seconds();
}

Call::Call(Communicator::Handle& h, OpCode op, long count, Peers peers, const double* sent) : timed_(true) {
  note_start(h, op, count, kNoReduction, peers, sent);
  start_ = steady_seconds();
}

void Call::done(std::uint64_t bytes) {
  const double end = steady_seconds();
  if (timed_) g_collective_seconds += end - start_;
  note_end(start_, end, bytes);
  finished_ = true;
}

Call::~Call() {
  if (!finished_) note_end(start_, steady_seconds(), 0);  // MPI failed: the call is over all the same
}

}  // namespace comm_detail

namespace ledger {

using comm_detail::the_ledger;
using comm_detail::Ledger;

void set_checking(bool on) { the_ledger().checking = on; }
bool checking() { return the_ledger().checking; }

void set_tracing(bool on) {
  std::lock_guard<std::mutex> lock(the_ledger().mu);
  the_ledger().tracing = on;
}

bool tracing() {
  std::lock_guard<std::mutex> lock(the_ledger().mu);
  return the_ledger().tracing;
}

void begin_case() {
  Ledger& l = the_ledger();
  std::lock_guard<std::mutex> lock(l.mu);
  l.per_comm.clear();
  l.kept.clear();
}

CallLog::CallLog() {
  Ledger& l = the_ledger();
  std::lock_guard<std::mutex> lock(l.mu);
  l.logs.push_back(&calls_);
}

CallLog::~CallLog() {
  Ledger& l = the_ledger();
  std::lock_guard<std::mutex> lock(l.mu);
  l.logs.erase(std::find(l.logs.begin(), l.logs.end(), &calls_));
}

std::vector<LoggedCall> CallLog::take() {
  Ledger& l = the_ledger();
  std::lock_guard<std::mutex> lock(l.mu);
  return std::exchange(calls_, {});
}

void log_calls(const std::vector<LoggedCall>& calls) {
  Ledger& l = the_ledger();
  std::lock_guard<std::mutex> lock(l.mu);
  for (std::vector<LoggedCall>* log : l.logs) log->insert(log->end(), calls.begin(), calls.end());
}

std::vector<LedgerEntry> take_entries() {
  Ledger& l = the_ledger();
  std::lock_guard<std::mutex> lock(l.mu);
  return std::move(l.kept);
}

bool in_flight(LedgerEntry& entry) {
  Ledger& l = the_ledger();
  std::lock_guard<std::mutex> lock(l.mu);
  if (!l.active || !l.tracing) return false;
  entry = comm_detail::entry_of(l, l.since, comm_detail::steady_seconds());
  entry.pending = true;
  return true;
}

std::uint64_t calls_recorded() {
  Ledger& l = the_ledger();
  std::lock_guard<std::mutex> lock(l.mu);
  return l.recorded;
}

double seconds_per_record(long samples) {
  Communicator::Handle probe;
  probe.name = "probe";
  probe.id = -1;
  const auto start = std::chrono::steady_clock::now();
  for (long i = 0; i < samples; ++i) {
    comm_detail::note_start(probe, comm_detail::kAllreduce, 1024, 0);
    comm_detail::note_end(0, 0, 0);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  Ledger& l = the_ledger();
  std::lock_guard<std::mutex> lock(l.mu);
  l.per_comm.erase(-1);
  l.recorded -= static_cast<std::uint64_t>(samples);
  return seconds / static_cast<double>(samples);
}

Phase::Phase(const char* name)
    : name_(name), start_(the_ledger().tracing ? comm_detail::steady_seconds() : 0) {}

Phase::~Phase() {
  Ledger& l = the_ledger();
  if (!l.tracing) return;
  LedgerEntry e;
  e.phase = name_;
  e.collective = false;
  e.function = function_now();
  e.start = start_;
  e.end = comm_detail::steady_seconds();
  std::lock_guard<std::mutex> lock(l.mu);
  l.kept.push_back(std::move(e));
}

}  // namespace ledger

}  // namespace dtrain
