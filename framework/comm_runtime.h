// comm_runtime.h: MPI start-up and the few extra operations the framework's
// own programs and test harness need. Student code never includes it.
#pragma once

#include <string>
#include <vector>

#include "comm.h"

namespace dtrain {

// The one scope object that initializes and finalizes MPI. Every program and
// test main creates exactly one, first thing in main.
class MpiSession {
 public:
  MpiSession(int& argc, char**& argv);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  // Ends every rank of the job at once, from any rank (MPI_Abort).
  [[noreturn]] static void abort_job(int exit_code);
};

struct CommAccess {
  // A private copy of the world communicator, so that framework traffic can
  // never be matched against a student's collective. Collective.
  static Communicator duplicate_world();
  // The same for any communicator; collective over its ranks only.
  static Communicator duplicate(Communicator& comm);

  // A barrier whose waiting ranks sleep instead of spinning, so ranks with
  // nothing to do leave the CPU to the others (more ranks than cores).
  static void rendezvous(Communicator& comm);

  // Every rank passes its text; rank `root` receives all of them, indexed by
  // rank (other ranks receive an empty vector). Not counted in bytes_transferred.
  static std::vector<std::string> gather_text(Communicator& comm, const std::string& mine, int root);

  // Collective max of one integer over the communicator. Not counted.
  static long max_over_ranks(Communicator& comm, long value);

  // Seconds since an arbitrary point (MPI_Wtime).
  static double wall_time();

  // Seconds this process has spent inside allreduce, allgather and
  // reduce_scatter, on any communicator, waiting for other ranks included.
  static double seconds_in_collectives();
};

}  // namespace dtrain
