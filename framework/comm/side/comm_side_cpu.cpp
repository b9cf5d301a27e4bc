// comm_side_cpu.cpp: where a rank's processes run (comm_side_child.h,
// keep_rank_on_one_cpu).
#include <sched.h>
#include <unistd.h>

#include "comm_side_child.h"

namespace dtrain::side {

void keep_rank_on_one_cpu(int rank) {
  // A rank's processes (its side, its program, and in the driven mode the
  // harness and the student's process) hand the CPU to each other at every
  // request and every call: a blocking write, then a read. On a CPU they
  // share, a handoff is one switch; across CPUs it wakes an idle one, which
  // a virtual machine makes dear (docs/internals.md: a driven Part 9
  // training case a quarter faster). The ranks of a job take the CPUs in
  // turn, from one the job's launcher process picks (its pid: the same for
  // every rank of the job, another for a job beside it), so a job's ranks
  // spread evenly and jobs side by side need not all start on the first.
  // Where the system refuses, they run where the scheduler puts them.
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (rank < 0 || sched_getaffinity(0, sizeof allowed, &allowed) != 0) return;
  const int n = CPU_COUNT(&allowed);
  if (n < 2) return;
  const int want = static_cast<int>((static_cast<long>(rank) + static_cast<long>(getppid())) % n);
  for (int cpu = 0, seen = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &allowed) || seen++ != want) continue;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    (void)sched_setaffinity(0, sizeof one, &one);  // inherited by the children it starts after
    return;
  }
}

}  // namespace dtrain::side
