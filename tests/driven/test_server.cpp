// test_server.cpp: a student's process for tests/driven/test_driven_calls.cpp:
// the reference's functions, and three of its own: one whose ranks call
// different collectives, one that writes a request of the harness's own
// kind (a case's name) on its link, one where rank 0 comes late, one that
// crashes on the last rank, one that calls back into the harness, one
// that floods its side with requests, and one that frees a communicator
// the harness lent it.
//   KIT_STUDENT_PROGRAM=build/driven_test_server tools/kitrun -n 4 build/driven_calls_demo
#include <chrono>
#include <csignal>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>

#include "comm_link.h"
#include "driven.h"

namespace {

std::string seen_file(int launcher, int rank) {
  return "/tmp/kit-driven-" + std::to_string(launcher) + "-" + std::to_string(rank);
}

// Rank 0 all-gathers where the others all-reduce: the side compares them first.
dtrain::Matrix disagree(const dtrain::Matrix& x, dtrain::Communicator& comm) {
  dtrain::Matrix out(x.rows(), x.cols() * (comm.rank() == 0 ? comm.size() : 1));
  if (comm.rank() == 0)
    comm.allgather(x, out);
  else
    comm.allreduce(x, out);
  return out;
}

// Rank 0 comes to the allreduce late: only once every other rank's harness
// has seen its student's process wait in it (a file each, named by the job's
// launcher), however slow the host.
dtrain::Matrix late_allreduce(const dtrain::Matrix& x, dtrain::Communicator& comm, int launcher) {
  for (int r = 1; comm.rank() == 0 && r < comm.size(); ++r)
    for (int tries = 0; tries < 6000 && !std::ifstream(seen_file(launcher, r)); ++tries)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  dtrain::Matrix out(x.rows(), x.cols());
  comm.allreduce(x, out);
  return out;
}

// The last rank's process crashes; the others return 0.
int crash_on_last_rank(int size) {
  if (dtrain::Communicator::world().rank() == size - 1) std::raise(SIGSEGV);
  return 0;
}

// Calls the harness's kit.scaled three times, an allreduce among them: 2.5
// times the world's sum of 2 x (the 3.0 call's value is not used).
dtrain::Matrix upcalls_twice(const dtrain::Matrix& x, dtrain::Communicator& comm) {
  using Scaled = dtrain::Matrix(const dtrain::Matrix&, double);
  const dtrain::Matrix twice = dtrain::calls::upcall<Scaled>("kit.scaled", x, 2.0);
  dtrain::Matrix summed(x.rows(), x.cols());
  comm.allreduce(twice, summed);
  dtrain::calls::upcall<Scaled>("kit.scaled", x, 3.0);
  const dtrain::Matrix more = dtrain::calls::upcall<Scaled>("kit.scaled", summed, 1.5);
  return summed + more;
}

// `n` barriers on comm: past the side's log of one call (link::kMostLoggedRequests) when n is.
int floods(dtrain::Communicator& comm, int n) {
  for (int i = 0; i < n; ++i) comm.barrier();
  return n;
}

// 1 if the side refused to free `comm` for this process (the harness lent
// it), 0 if it freed it: a raw Free, as a handin could write one.
int frees(dtrain::Communicator& comm) {
  dtrain::link::Header h = dtrain::link::request(dtrain::link::Kind::Free, dtrain::CommAccess::side_number(comm));
  try {
    dtrain::link::call(h, nullptr, nullptr, 0);
  } catch (const std::invalid_argument&) {
    return 1;
  }
  return 0;
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

int main(int argc, char**) {
  // Guarded as the kit's student's process is, the filter keeping open() for late_allreduce's files.
  const dtrain::link::FilterCode state = dtrain::calls::guard_student_process(argc == 1, true);
  std::vector<dtrain::calls::Served> functions = dtrain::calls::student_functions();
  functions.push_back(dtrain::calls::served<&disagree>("disagree"));
  functions.push_back(dtrain::calls::served<&names_a_case>("names_a_case"));
  functions.push_back(dtrain::calls::served<&late_allreduce>("late_allreduce"));
  functions.push_back(dtrain::calls::served<&crash_on_last_rank>("crash_on_last_rank"));
  functions.push_back(dtrain::calls::served<&upcalls_twice>("upcalls_twice"));
  functions.push_back(dtrain::calls::served<&floods>("floods"));
  functions.push_back(dtrain::calls::served<&frees>("frees"));
  return dtrain::calls::serve_calls(functions, state);
}
