// comm_side_agree.cpp: in the driven mode the side itself compares each
// collective of the student's process with the other ranks' before MPI sees
// it (comm_side_ops.h, Ops::agree): what the test program's ledger did when
// it shared the student's process. A difference refuses the collective on
// every rank of the communicator, and the side keeps it as a finding, which
// answers the harness's Call beside the student's values (comm_side_serve.cpp):
// the harness names the disagreement from the side's numbers, never from
// text the student's process wrote.
#include <algorithm>

#include "comm_side_ops.h"
#include "function_id.h"

namespace dtrain::side {

void Ops::check_calls_of(const std::string* function) { checked_function_ = function; }

std::vector<std::int64_t> Ops::take_findings() { return std::move(findings_); }

void Ops::found_ended(bool signaled, int code) {
  findings_.insert(findings_.end(), {static_cast<std::int64_t>(link::Finding::Ended), signaled ? 1 : 0, code});
}

void Ops::found_strays(int count) {
  findings_.insert(findings_.end(), {static_cast<std::int64_t>(link::Finding::Strays), count});
}

void Ops::agree(std::int32_t comm_number, std::int64_t op, std::int64_t count, std::int64_t reduction) {
  if (checked_function_ == nullptr) return;  // the harness's own, or a program of the usual mode (its ledger agrees)
  const MPI_Comm c = comm(comm_number);
  const int n = size_of(c);
  const std::int64_t seq = ++sequence_[comm_number];
  if (n == 1) return;  // one rank agrees with itself
  int world_rank = 0;
  check_mpi(MPI_Comm_rank(MPI_COMM_WORLD, &world_rank), "MPI_Comm_rank");
  constexpr int kFields = link::kAgreeFields;
  const std::int64_t mine[kFields] = {op, count, reduction, seq, function_id(checked_function_->c_str()), world_rank};
  std::vector<std::int64_t> all(static_cast<std::size_t>(kFields) * static_cast<std::size_t>(n));
  // Where a hung case's ranks wait (the side polls, then sleeps).
  run_polled(
      "MPI_Iallgather (agreement)",
      [&](MPI_Request* r) { return MPI_Iallgather(mine, kFields, MPI_INT64_T, all.data(), kFields, MPI_INT64_T, c, r); },
      Idle::Yield);
  kit_request(facts::kRequestAgree, 0, n);
  auto row = [&](int r) { return all.data() + kFields * r; };
  bool same = true;
  for (int r = 1; r < n && same; ++r) same = std::equal(row(r), row(r) + 3, row(0));
  if (same) return;
  findings_.insert(findings_.end(), {static_cast<std::int64_t>(link::Finding::Disagreement), comm_number, seq, n});
  findings_.insert(findings_.end(), all.begin(), all.end());
  throw std::runtime_error("collective #" + std::to_string(seq) + ": the ranks disagree (the kit's harness names how)");
}

}  // namespace dtrain::side
