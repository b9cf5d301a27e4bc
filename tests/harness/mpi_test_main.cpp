// mpi_test_main.cpp: the MPI-aware main of every kit test binary.
//
// Run a part through make (`make test-part3`), or by hand:
//   tools/kitrun -n 4 build/student/kit_tests --gtest_filter='Part3*'
// Flags besides gtest's:
//   --results=DIR           write the records of tests/harness/records.h to DIR/rank<r>, a
//                           FIFO the runner made and reads (job.h): evidence for
//                           the part runner and the grader's judge, which decide
//                           each case outside this process
//   --case-timeout=SECONDS  override every suite's per-case time limit
//   --time-scale=F          multiply every per-case time limit by F (0 < F <= 1; kit.parts.time_scale)
//   --case-limit=FILTER=S   the cases of the run FILTER (the parts table's) get S seconds, the
//                           limit the runner calibrated on this machine (kit/calibration.py)
//   --trace-dir=DIR         write the Chrome trace of each failing case to
//                           DIR/<case>.json (`make test-partN TRACE=1`)
//   --cpus=N                the CPUs the job may use at once (a container's quota,
//                           kit/host_limits.py): the watchdog counts a case's time
//                           at that pace; the runner passes it
//   --no-syscall-filter     run the cases without the system-call filter (below);
//                           the plan record says "off". The runner passes it
//                           unless it grades (kit/launch.py, Launch.syscall_filter)
//
// Once MPI, the record channel, the case plan and the case groups are set up,
// and before the first case runs, every rank refuses the system calls that
// computing and MPI's open channels never need (platform.h,
// restrict_system_calls): no file is opened, no process or program started,
// no socket made after that. The plan record says whether the filter is on
// ("syscall_filter"), and the grader notes it when it is not.
//
// A case of a run of n ranks in the parts table runs on ranks 0..n-1 of the job, so one job with enough ranks runs cases of every size; the
// other ranks sleep meanwhile. After a case its ranks meet on a private
// communicator and rank 0 prints and records the outcome, with each
// failing rank's messages. A rank that fails writes its messages to its
// record channel at once, so they survive if the job has to be ended. A case
// that does not finish in time (a rank waiting in a collective the others
// never joined, usually) ends the job; a crash or exit() inside a case is
// recorded too. The runner then starts the remaining cases in a new job.
//
// The harness's files: case_plan.cpp (which cases, on which ranks),
// case_listener.cpp (the per-case protocol), watchdog.cpp (time limits and
// the roll-call), abort_records.cpp (crashes and exits), reaper.cpp (a
// case's stray processes), job.cpp (this process's rank, record channel and
// roll-call board), records.cpp (the records), observations.cpp (what student
// functions returned, for the judge).

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "abort_records.h"
#include "case_listener.h"
#include "comm_runtime.h"
#ifdef KIT_DRIVEN
#include "driven.h"
#endif
#include "harness.h"
#include "heap_watch.h"
#include "idx_dataset.h"
#include "job.h"
#include "kit_facts.h"  // generated from kit/facts.py
#include "kit_test.h"
#include "layer_profiler.h"
#include "platform.h"
#include "observations.h"
#include "records.h"
#include "trace.h"

namespace {

int usage_error(const std::string& what) {
  if (harness::job().rank == 0)
    std::fprintf(stderr, "kit_tests: %s\nusage: kit_tests [gtest flags] [--results=DIR] [--case-timeout=SECONDS] "
                         "[--time-scale=F] [--case-limit=FILTER=S] [--cpus=N] [--trace-dir=DIR] [--no-syscall-filter]\n",
                 what.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace harness;
#ifdef KIT_DRIVEN
  // The student's process runs as this one's user: it may read or write no
  // memory of the harness's (/proc/PID/mem), before its first call or after.
  dtrain::platform::forbid_reading_memory();
  dtrain::CommAccess::drive_calls();
#endif
  // Before MPI starts its progress threads: the data limit counts a thread's
  // whole stack, and glibc's default (8 MiB) would take 24 MiB of a rank's.
  dtrain::platform::set_thread_stack_size(kThreadStackBytes);
  dtrain::MpiSession mpi(argc, argv);
  ::testing::InitGoogleTest(&argc, argv);
  dtrain::Communicator meeting = dtrain::CommAccess::duplicate_world();
  job().rank = meeting.rank();

  std::string results_dir, trace_dir;
  CaseLimits limits;
  bool syscall_filter = true;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--results=", 0) == 0) {
      results_dir = arg.substr(10);
    } else if (arg.rfind("--trace-dir=", 0) == 0) {
      trace_dir = arg.substr(12);
    } else if (arg.rfind("--cpus=", 0) == 0) {
      char* end = nullptr;
      job().cpus = std::strtod(arg.c_str() + 7, &end);
      if (*end != '\0' || !(job().cpus > 0))
        return usage_error("--cpus needs a positive number, got '" + arg.substr(7) + "'");
    } else if (arg == "--no-syscall-filter") {
      syscall_filter = false;
    } else if (arg.rfind("--case-timeout=", 0) == 0) {
      char* end = nullptr;
      limits.override_all = std::strtod(arg.c_str() + 15, &end);
      if (*end != '\0' || limits.override_all <= 0) return usage_error("--case-timeout needs a positive number of seconds, got '" + arg.substr(15) + "'");
    } else if (arg.rfind("--time-scale=", 0) == 0) {
      char* end = nullptr;
      limits.scale = std::strtod(arg.c_str() + 13, &end);
      if (*end != '\0' || !(limits.scale > 0 && limits.scale <= 1))
        return usage_error("--time-scale needs a factor in (0, 1], got '" + arg.substr(13) + "'");
    } else if (arg.rfind("--case-limit=", 0) == 0) {
      const std::string value = arg.substr(13);
      const size_t eq = value.rfind('=');
      char* end = nullptr;
      const double seconds = eq == std::string::npos ? 0 : std::strtod(value.c_str() + eq + 1, &end);
      if (eq == std::string::npos || eq == 0 || *end != '\0' || !(seconds > 0))
        return usage_error("--case-limit needs FILTER=SECONDS, a run's filter and a positive number, got '" + value +
                           "'");
      limits.by_run[value.substr(0, eq)] = seconds;
    } else {
      return usage_error("unknown argument '" + arg + "'");
    }
  }
  if (!results_dir.empty())
    if (const std::string why = open_channel(results_dir, job().rank); !why.empty()) return usage_error(why);
  // Every collective of a case is checked against the other ranks' before
  // MPI sees it (comm.h), and kept for the trace of a failing case if asked.
  dtrain::ledger::set_checking(true);
  job().trace_dir = trace_dir;
  if (!trace_dir.empty()) dtrain::start_trace(meeting);

  // Which rank counts do the selected cases need, and which of them run on
  // this rank? gtest's filter, set per rank, skips the rest.
  const CasePlan plan = plan_cases(GTEST_FLAG_GET(filter), job().rank);
  if (!plan.error.empty()) return usage_error(plan.error);
  const auto& needed = plan.suites_by_ranks;
  if (needed.rbegin()->first > meeting.size()) {
    if (job().rank == 0) {
      std::fprintf(stderr, "kit_tests: this run has %d rank%s, but the selected cases need:\n", meeting.size(),
                   meeting.size() == 1 ? "" : "s");
      for (const auto& [ranks, names] : needed) {
        std::string list;
        for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
        std::fprintf(stderr, "  %d rank%s for %s\n", ranks, ranks == 1 ? "" : "s", list.c_str());
      }
      std::fprintf(stderr, "Start it with tools/kitrun -n %d, or use `make test-partN`, which does.\n",
                   needed.rbegin()->first);
    }
    return 2;
  }
  // The ranks 0..n-1 of each size, split off once: cases of n ranks meet there.
  std::map<int, dtrain::Communicator> groups;
  for (const auto& entry : needed) {
    const int size = entry.first;
    groups.emplace(size, meeting.split(job().rank < size ? 0 : 1, job().rank));
  }
  GTEST_FLAG_SET(filter, plan.mine.empty() ? "-*" : plan.mine);

  dtrain::keep_big_blocks_for_reuse();
  dtrain::heap_budget::set(kRankHeapBudgetBytes);  // the same on every machine (kit/limits.py)
#ifdef KIT_DRIVEN
  // The rank's limits are shared with its student's process (kit/limits.py, DRIVEN_HARNESS_DATA_MIB).
  dtrain::platform::limit_private_memory(kDrivenHarnessDataLimitBytes);
  dtrain::platform::limit_main_stack(kDrivenHarnessStackLimitBytes);
#else
  dtrain::platform::limit_private_memory(kRankDataLimitBytes);
  dtrain::platform::limit_main_stack(kRankStackLimitBytes);
#endif
  dtrain::platform::adopt_orphans();  // a case's orphans come back to us, not to init
  install_abort_handlers();
#ifdef KIT_DRIVEN
  // The student's code runs in a process of its own: its end during a case is this rank's crash.
  dtrain::calls::on_process_gone(student_process_ended);
#endif
  install_sinks(job().results_fd >= 0);

  auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
  delete listeners.Release(listeners.default_result_printer());
  CaseTally tally;
  listeners.Append(new_case_listener(meeting, groups, limits, tally));

  // The trace writer makes a file per failing case as it goes, so it keeps
  // open/openat (the student's own loop: the grader never asks for traces).
  dtrain::keep_data_files_open();  // the training cases' data set
  std::string unfiltered =
      syscall_filter ? dtrain::platform::restrict_system_calls(!trace_dir.empty()) : "--no-syscall-filter";
  // The plan (rank 0's) speaks for every rank, in one of the record's codes
  // (kit/records.py, FILTER_STATES): "off" if any rank is. Why, in words,
  // goes to this rank's own output.
  job().syscall_filter = !syscall_filter            ? records::kFilterOffAsked
                         : !unfiltered.empty()      ? records::kFilterOffRefused
                                                    : records::kFilterOn;
#ifdef KIT_DRIVEN
  // The filter that matters is on the student's code: its process's, as it told its side first.
  if (unfiltered.empty()) {
    const dtrain::link::FilterCode student = dtrain::calls::student_filter();
    if (student != dtrain::link::FilterCode::On) {
      unfiltered = "the student's process has none";
      job().syscall_filter =
          student == dtrain::link::FilterCode::OffAsked ? records::kFilterOffAsked : records::kFilterOffRefused;
    }
  }
#endif
#ifdef KIT_DRIVEN
  // A student's process that ended before its first word (code before main
  // that exits) ends the job before its plan, on every rank: the runner
  // says the program did not start its cases, and the grader grades each
  // file alone, so the file that did it costs its own parts only.
  if (dtrain::CommAccess::max_over_ranks(meeting, dtrain::calls::student_gone() ? 1 : 0) != 0) {
    return dtrain::facts::kExitStudentGone;
  }
#endif
  if (dtrain::CommAccess::max_over_ranks(meeting, unfiltered.empty() ? 0 : 1) != 0 && unfiltered.empty())
    job().syscall_filter = records::kFilterOffOtherRank;
  // Asked for (make test's runs): rank 0 says it once. Refused: each rank says why.
  if (!unfiltered.empty() && (job().rank == 0 || syscall_filter))
    std::fprintf(stderr, "kit_tests: rank %d: syscall filter: off (%s)\n", job().rank, unfiltered.c_str());

  const int gtest_status = RUN_ALL_TESTS();
  dtrain::heap_budget::hold_everywhere();
  dtrain::CommAccess::rendezvous(meeting);  // ranks done early sleep here, not spin
  const long any_failed = dtrain::CommAccess::max_over_ranks(meeting, gtest_status != 0 ? 1 : 0);
  if (job().rank == 0 && job().results_fd < 0) {  // the runner prints one summary of its own
    std::printf("%d passed, %d failed\n", tally.passed, tally.failed);
    std::fflush(stdout);
  }
  return any_failed ? 1 : 0;
}

