// ledger_state.cpp: what a rank is doing, in one line, for the roll-call of
// a hung case (ledger::state in comm_runtime.h), from the ledger's record of
// the call in flight and of the case's calls so far, in rank_state.h's words.
#include <string>
#include <vector>

#include "ledger.h"
#include "rank_state.h"

namespace dtrain::ledger {

using comm_detail::Ledger;
using comm_detail::the_ledger;

namespace {

RequestView view_of(const Request::State& r) { return {r.op, r.seq, r.count, r.comm, r.function}; }

// The ledger's records as the roll-call's numbers and names (rank_state.h).
RankState view_of(const Ledger& l) {
  RankState s{l.active, l.op, l.seq, l.count, l.comm, l.function};
  if (l.peers.dest >= 0)
    s.to = comm_detail::world_rank(l, l.peers.dest), s.to_local = l.peers.dest, s.send_tag = l.peers.send_tag;
  if (l.peers.source >= 0)
    s.from = comm_detail::world_rank(l, l.peers.source), s.from_local = l.peers.source, s.recv_tag = l.peers.recv_tag;
  if (l.waiting_for != nullptr) {
    s.in_wait = true;
    s.waited = view_of(*l.waiting_for);
  }
  for (const Request::State* r : l.pending)
    if (r != l.waiting_for) s.unwaited.push_back(view_of(*r));
  for (const auto& [id, counts] : l.per_comm) s.per_comm.push_back({counts.name, counts.collectives, counts.point_to_point});
  return s;
}

}  // namespace

bool waiting_call(WaitingCall& out) {
  Ledger& l = the_ledger();
  std::lock_guard<std::mutex> lock(l.mu);
  if (!l.active) return false;
  out.op = l.op;
  if (l.peers.dest >= 0) out.to = comm_detail::world_rank(l, l.peers.dest), out.send_tag = l.peers.send_tag;
  if (l.peers.source >= 0) out.from = comm_detail::world_rank(l, l.peers.source), out.recv_tag = l.peers.recv_tag;
  return true;
}

std::string state() {
  Ledger& l = the_ledger();
  std::lock_guard<std::mutex> lock(l.mu);
  return state_text(view_of(l));
}

}  // namespace dtrain::ledger
