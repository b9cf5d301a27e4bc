// rank_state.h: what a rank's student code is doing, for the roll-call of a
// hung case: as numbers and names (RankState), and as the one line a report
// shows (state_text). In the usual mode the test program's ledger fills it
// (ledger_state.cpp); in the driven mode the harness fills it from what the
// rank's MPI side saw of the student's process (framework/calls/driven.h),
// so both say the same in the same words.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "kit_facts.h"  // the operations (facts::OpCode), generated from kit/facts.py

namespace dtrain {

// A request in flight: "iallreduce #3 on comm (66 elements), started in FUNCTION".
struct RequestView {
  facts::OpCode op = facts::kIallreduce;
  long seq = 0, count = 0;
  std::string comm, function;
};
std::string request_text(const RequestView& r);

struct RankState {
  RankState() = default;
  RankState(bool active_, facts::OpCode op_, long seq_, long count_, std::string comm_, std::string function_)
      : active(active_), op(op_), seq(seq_), count(count_), comm(std::move(comm_)), function(std::move(function_)) {}
  // The call in flight, if any.
  bool active = false;
  facts::OpCode op = facts::kAllreduce;
  long seq = 0, count = 0;
  std::string comm, function;
  // A point-to-point call's other ends: by rank in MPI's world, and by rank
  // on the call's communicator (-1: the call has no such end).
  int to = -1, to_local = -1, send_tag = -1;
  int from = -1, from_local = -1, recv_tag = -1;
  // In wait() for `waited`; and the requests in flight nobody waits for, oldest first.
  bool in_wait = false;
  RequestView waited;
  std::vector<RequestView> unwaited;
  // This case's calls so far, per communicator, in the order they were made.
  struct Counts {
    std::string name;
    long collectives = 0, point_to_point = 0;
  };
  std::vector<Counts> per_comm;
};

// "waiting in allreduce #3 on dp_comm (66 elements) in collect_weight_grad",
// "after 2 collectives on dp_comm", "without a collective", then the
// requests nobody waits for.
std::string state_text(const RankState& s);

}  // namespace dtrain
