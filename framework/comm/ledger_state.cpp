// ledger_state.cpp: what a rank is doing, in one line, for the roll-call of
// a hung case (ledger::state in comm_runtime.h), from the ledger's record of
// the call in flight and of the case's calls so far.
#include <string>
#include <vector>

#include "ledger.h"

namespace dtrain::ledger {

using comm_detail::Ledger;
using comm_detail::the_ledger;

namespace {

// "send to rank 1 (tag 0)": the other end by its rank in MPI's world, as the
// roll-call names ranks, and by its rank on the call's communicator where
// that differs. For people: the runner reads waiting_call's data.
std::string peer_text(const comm_detail::Ledger& l, const char* direction, int rank, int tag) {
  const int world = comm_detail::world_rank(l, rank);
  std::string s = std::string(direction) + " rank " + std::to_string(world);
  if (world != rank) s += " (its rank " + std::to_string(rank) + " on " + l.comm + ")";
  return s + " (tag " + std::to_string(tag) + ")";
}

std::string waiting_text(const comm_detail::Ledger& l) {
  using namespace comm_detail;
  if (l.op == kWait && l.waiting_for)
    return "waiting in wait()" + (l.function.empty() ? std::string() : " in " + l.function) + " for " +
           request_text(*l.waiting_for);
  std::string s = std::string("waiting in ") + kOpNames[l.op];
  if (is_point_to_point(l.op)) {
    if (l.peers.dest >= 0) s += " " + peer_text(l, "to", l.peers.dest, l.peers.send_tag);
    if (l.peers.dest >= 0 && l.peers.source >= 0) s += " and";
    if (l.peers.source >= 0) s += " " + peer_text(l, "from", l.peers.source, l.peers.recv_tag);
    s += " on " + l.comm + " (" + plural(l.count, "element") + ")";
  } else {
    s += " #" + std::to_string(l.seq) + " on " + l.comm;
    if (l.op != kSplit && l.op != kBarrier) s += " (" + plural(l.count, "element") + ")";
  }
  return l.function.empty() ? s : s + " in " + l.function;
}

// "2 collectives", "4 point-to-point calls", or both joined by "and".
std::string counts_text(const comm_detail::Ledger::Counts& c, bool first) {
  using comm_detail::plural;
  std::string collectives = first ? plural(c.collectives, "collective") : std::to_string(c.collectives);
  if (c.point_to_point == 0) return collectives;
  const std::string p2p = plural(c.point_to_point, "point-to-point call");
  return c.collectives == 0 ? p2p : collectives + (first ? "" : " collectives") + " and " + p2p;
}

// "; 1 request in flight that nobody waits for: iallreduce #2 on comm (10
// elements), started in FUNCTION", or "": the requests
// this rank started and is not waiting for now. In a hang they are the
// likely culprits: the other ranks may be waiting in their wait() for them.
std::string unwaited_text(const comm_detail::Ledger& l) {
  std::vector<const Request::State*> unwaited;
  for (const Request::State* r : l.pending)
    if (r != l.waiting_for) unwaited.push_back(r);
  if (unwaited.empty()) return "";
  std::string s = "; " + comm_detail::plural(static_cast<long>(unwaited.size()), "request") +
                  " in flight that nobody waits for: ";
  for (size_t i = 0; i < unwaited.size(); ++i) s += (i ? "; " : "") + comm_detail::request_text(*unwaited[i]);
  return s;
}

std::string done_text(const comm_detail::Ledger& l) {
  if (l.per_comm.empty()) return "without a collective";
  std::string s = "after ";
  size_t i = 0;
  for (const auto& [id, counts] : l.per_comm) {
    s += i == 0 ? "" : i + 1 == l.per_comm.size() ? " and " : ", ";
    s += counts_text(counts, i == 0) + " on " + counts.name;
    ++i;
  }
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
  return (l.active ? waiting_text(l) : done_text(l)) + unwaited_text(l);
}

}  // namespace dtrain::ledger
