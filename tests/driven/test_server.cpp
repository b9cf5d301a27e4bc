// test_server.cpp: a student's process for tests/driven/test_driven_calls.cpp:
// the reference's functions, and two that no honest handin has: one whose
// ranks call different collectives, and one that writes a request of the
// harness's own kind (a case's name) on its link.
//   KIT_STUDENT_PROGRAM=build/driven_test_server tools/kitrun -n 4 build/driven_calls_demo
#include <stdexcept>

#include "comm_link.h"
#include "driven.h"

namespace {

// Rank 0 all-gathers where the others all-reduce: the side compares them first.
dtrain::Matrix disagree(const dtrain::Matrix& x, dtrain::Communicator& comm) {
  dtrain::Matrix out(x.rows(), x.cols() * (comm.rank() == 0 ? comm.size() : 1));
  if (comm.rank() == 0)
    comm.allgather(x, out);
  else
    comm.allreduce(x, out);
  return out;
}

// 1 if the side refused a case's name from this process, 0 if it took it.
int names_a_case(int) {
  const char name[] = "Part1DataSplit.SeedCase";
  dtrain::link::Header h = dtrain::link::request(dtrain::link::Kind::Case);
  h.in_bytes = sizeof name - 1;
  try {
    dtrain::link::call(h, name, nullptr, 0);
  } catch (const std::invalid_argument&) {
    return 1;
  }
  return 0;
}

}  // namespace

int main() {
  std::vector<dtrain::calls::Served> functions = dtrain::calls::student_functions();
  functions.push_back(dtrain::calls::served<&disagree>("disagree"));
  functions.push_back(dtrain::calls::served<&names_a_case>("names_a_case"));
  return dtrain::calls::serve_calls(functions);
}
