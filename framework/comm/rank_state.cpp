// rank_state.cpp: the roll-call's line for a rank (rank_state.h).
#include "rank_state.h"

namespace dtrain {

namespace {

std::string plural(long n, const char* word) { return std::to_string(n) + " " + word + (n == 1 ? "" : "s"); }

// "send to rank 1 (tag 0)": the other end by its rank in MPI's world, as the
// roll-call names ranks, and by its rank on the call's communicator where
// that differs.
std::string peer_text(const RankState& s, const char* direction, int world, int local, int tag) {
  std::string text = std::string(direction) + " rank " + std::to_string(world);
  if (world != local) text += " (its rank " + std::to_string(local) + " on " + s.comm + ")";
  return text + " (tag " + std::to_string(tag) + ")";
}

std::string waiting_text(const RankState& s) {
  if (s.op == facts::kWait && s.in_wait)
    return "waiting in wait()" + (s.function.empty() ? std::string() : " in " + s.function) + " for " +
           request_text(s.waited);
  std::string text = std::string("waiting in ") + facts::kOpNames[s.op];
  if (facts::is_point_to_point(s.op)) {
    if (s.to >= 0) text += " " + peer_text(s, "to", s.to, s.to_local, s.send_tag);
    if (s.to >= 0 && s.from >= 0) text += " and";
    if (s.from >= 0) text += " " + peer_text(s, "from", s.from, s.from_local, s.recv_tag);
    text += " on " + s.comm + " (" + plural(s.count, "element") + ")";
  } else {
    text += " #" + std::to_string(s.seq) + " on " + s.comm;
    if (s.op != facts::kSplit && s.op != facts::kBarrier) text += " (" + plural(s.count, "element") + ")";
  }
  return s.function.empty() ? text : text + " in " + s.function;
}

// "2 collectives", "4 point-to-point calls", or both joined by "and".
std::string counts_text(const RankState::Counts& c, bool first) {
  std::string collectives = first ? plural(c.collectives, "collective") : std::to_string(c.collectives);
  if (c.point_to_point == 0) return collectives;
  const std::string p2p = plural(c.point_to_point, "point-to-point call");
  return c.collectives == 0 ? p2p : collectives + (first ? "" : " collectives") + " and " + p2p;
}

// "; 1 request in flight that nobody waits for: iallreduce #2 on comm (10
// elements), started in FUNCTION", or "". In a hang they are the likely
// culprits: the other ranks may be waiting in their wait() for them.
std::string unwaited_text(const RankState& s) {
  if (s.unwaited.empty()) return "";
  std::string text = "; " + plural(static_cast<long>(s.unwaited.size()), "request") +
                     " in flight that nobody waits for: ";
  for (std::size_t i = 0; i < s.unwaited.size(); ++i) text += (i ? "; " : "") + request_text(s.unwaited[i]);
  return text;
}

std::string done_text(const RankState& s) {
  if (s.per_comm.empty()) return "without a collective";
  std::string text = "after ";
  for (std::size_t i = 0; i < s.per_comm.size(); ++i) {
    text += i == 0 ? "" : i + 1 == s.per_comm.size() ? " and " : ", ";
    text += counts_text(s.per_comm[i], i == 0) + " on " + s.per_comm[i].name;
  }
  return text;
}

}  // namespace

std::string request_text(const RequestView& r) {
  std::string text = std::string(facts::kOpNames[r.op]) + " #" + std::to_string(r.seq) + " on " + r.comm + " (" +
                     plural(r.count, "element") + ")";
  return r.function.empty() ? text : text + ", started in " + r.function;
}

std::string state_text(const RankState& s) { return (s.active ? waiting_text(s) : done_text(s)) + unwaited_text(s); }

}  // namespace dtrain
