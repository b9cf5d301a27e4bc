"""The hostile gallery's resource attacks: handins that hang, spin, deadlock,
exit early, fork, flood the output, hold memory or disk, or leave IPC
objects, processes and files behind, each costing only its own case and
leaving nothing after grading.

  python3 -m pytest grader/tests/test_hostile_gallery_resources.py     (as root: the sandbox needs it)

The gallery's other attacks, and what every case must show, are in
hostile_gallery.py; all its files share one check that the kit is left
untouched (conftest.py, untouched_kit).
"""
from typing import List

import pytest

from conftest import IMPL_FILES, hang_limit, source
from hostile_gallery import (FEEDBACK, HONEST_PART1, MQUEUES, PROLOGUE, Hostile, cases, func_file, grade_hostile,
                             in_shared_tmp, reference_calling, stub_with, zero_file)
from kit.parts import CASE_SECONDS

FILL = r"""
namespace {
// Writes files just under the per-file limit into every writable place
// until each is full, counts what it got, and removes them again (so the
// rest of the grading runs as the reference's would).
template <class Comm>
void fill_disk(Comm& comm) {
  static bool once = false;
  if (once || comm.rank() != 0) return;
  once = true;
  std::vector<char> block(1 << 20, 'x');
  std::vector<std::string> written;
  long long total = 0;
  for (const std::string dir : {".", "/tmp", "/var/tmp", "/dev/shm", "/run/lock"}) {
    bool full = false;
    for (int i = 0; i < 32 && !full; ++i) {
      const std::string path = dir + "/fill-" + std::to_string(::getpid()) + "-" + std::to_string(i);
      const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      if (fd < 0) break;
      written.push_back(path);
      for (int mib = 0; mib < 63; ++mib) {
        const ssize_t n = ::write(fd, block.data(), block.size());
        if (n > 0) total += n;
        if (n != static_cast<ssize_t>(block.size())) { full = true; break; }
      }
      ::close(fd);
    }
  }
  for (const auto& path : written) ::unlink(path.c_str());
  if (total > (300LL << 20)) throw std::runtime_error("DISK[wrote " + std::to_string(total >> 20) + " MiB]");
}
}  // namespace
"""

LINGER = r"""
namespace {
// Tries to outlive its job and hold the grader: a daemon in a session of its
// own that ignores the polite signals and keeps the job's output pipe open,
// and files left in every shared temporary place.
void linger() {
  static bool once = false;
  if (once) return;
  once = true;
  for (const std::string dir : {"/tmp", "/var/tmp", "/dev/shm", "/run/lock"}) {
    std::ofstream(dir + "/kit-gallery-leftover-" + std::to_string(::getpid())) << "left\n";
    ::mkfifo((dir + "/kit-gallery-leftover-fifo-" + std::to_string(::getpid())).c_str(), 0666);
  }
  if (::fork() == 0) {
    ::setsid();
    std::signal(SIGTERM, SIG_IGN);
    std::signal(SIGHUP, SIG_IGN);
    std::signal(SIGINT, SIG_IGN);
    if (::fork() != 0) std::_Exit(0);
    for (;;) ::pause();
  }
}
}  // namespace
"""

# A handin whose backward never returns hangs in each of the 9 cases that call
# it (6 public, 3 hidden), each stopped at its limit (CASE_SECONDS, scaled by
# KIT_TIME_SCALE and, for such handins, by HANG_SHARE), then a roll-call and
# a new job (about 1 s more: 55-60 s in all at full limits on a quiet host).
# The watchdog stretches a limit while the host is busier than the case makes
# it (up to 8x), and under CI's two pytest workers it is: 150 s was measured
# there at full limits, 76 s at 0.4. The budget bounds that, with room, and
# catches a hang that only the job's QUIET_SECONDS ends.
HANGS_IN_BACKWARD = 9 * (4 * hang_limit(CASE_SECONDS) + 8)

# Memory the data limit doesn't count: a mapping that grows down (a stack of
# any size; the red team held 1.2 GiB a rank with it). The filter refuses it
# and the case fails with the rule's words; the rest is the reference's.
GROWS_DOWN = r"""
#include <sys/mman.h>
namespace {
void hold_a_stack() {
  const size_t size = size_t(1) << 30;
  void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_GROWSDOWN, -1, 0);
  if (p != MAP_FAILED) std::memset(p, 1, size);
}
}  // namespace
"""

# Private memory up to the data limit on each of 8 ranks at once: mapped a
# MiB at a time until the limit refuses one, every page touched, all held
# until the rank's next get_info (past the end of the case, where the ranks
# meet), with 8 MiB handed back for the rest of the case. Each rank holds
# its limit less its own use: the job's memory at every limit, which fits
# the smallest platform by construction (kit/limits.py, JOB_MEMORY_MIB), so
# no OOM killer ends it and the reference keeps its 150.
AT_THE_DATA_LIMIT = r"""
#include <sys/mman.h>
namespace {
void hold_up_to_the_data_limit(int ranks) {
  static std::vector<void*> held;
  static bool done = false;
  for (void* p : held) ::munmap(p, 1 << 20);
  held.clear();
  if (done || ranks != 8) return;
  done = true;
  held.reserve(256);
  for (;;) {
    void* p = ::mmap(nullptr, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) break;
    std::memset(p, 1, 1 << 20);
    held.push_back(p);
  }
  for (int i = 0; i < 8 && !held.empty(); ++i) {
    ::munmap(held.back(), 1 << 20);
    held.pop_back();
  }
  if (held.size() < 16) throw std::runtime_error("held only " + std::to_string(held.size()) + " MiB");
}
}  // namespace
"""


SPIN_AT_EXIT = r"""
namespace {
struct SpinAtExit {
  ~SpinAtExit() {
    volatile unsigned long n = 0;
    for (;;) n = n + 1;
  }
} spin_at_exit;
}  // namespace
"""

GALLERY: List[Hostile] = [
    # System V objects outlive their processes; the grader removes them.
    Hostile("sysv_ipc_left_behind",
            lambda tmp: [HONEST_PART1, func_file({"get_info":
                                                  "shmget(IPC_PRIVATE, 1 << 20, IPC_CREAT | 0600); "
                                                  "semget(IPC_PRIVATE, 1, IPC_CREAT | 0600); "
                                                  "msgget(IPC_PRIVATE, IPC_CREAT | 0600);"},
                                                 prologue=PROLOGUE + "#include <sys/msg.h>\n#include <sys/sem.h>\n"
                                                                     "#include <sys/shm.h>\n")],
            10, scores={"part1": 10, "part2": 0}, static="warn", filtered=False),  # link check and filter refuse shmget
    # fork() is refused by the system-call filter (raw_system_calls_through_a_pointer);
    # behind it, the reaper and the process limit.
    Hostile("fork_storm",
            lambda tmp: [HONEST_PART1, zero_file({"ZeroDPAdam::step": "if (fork() == 0) { for (;;) fork(); }"})],
            10, says=("left them running; they were killed",), static="warn", budget=120, filtered=False),
    Hostile("memory_hog",
            lambda tmp: [HONEST_PART1, zero_file({"ZeroDPAdam::step":
                                                  "std::vector<char*> hoard; for (;;) { char* p = new char[1 << 28]; "
                                                  "p[0] = 1; "
                                                  "hoard.push_back(p); }"})],
            10, says=("bad_alloc",), budget=120),
    Hostile("output_flood",
            lambda tmp: [HONEST_PART1, func_file({"get_info": "static bool once = false; if (!once && rank == 0) "
                                                  "{ once = true; std::string line(1 << 20, 'y'); "
                                                  "for (int i = 0; i < 24; ++i) std::puts(line.c_str()); }"})],
            10, says=("bytes more than the report keeps",), budget=150),
    Hostile("infinite_loop",
            lambda tmp: [HONEST_PART1, zero_file({"ZeroDPStage3FCLayer::backward":
                                                  "volatile unsigned long spin = 0; for (;;) spin = spin + 1;"})],
            10, says=("still running ZeroDPStage3FCLayer::backward, outside any call of the communicator",), budget=HANGS_IN_BACKWARD,
            hangs=True),
    Hostile("deadlock_on_one_rank",
            lambda tmp: [HONEST_PART1, zero_file({"ZeroDPStage3FCLayer::backward":
                                                  "if (comm.rank() == 1) comm.barrier();"})],
            10, says=("waiting in barrier",), budget=HANGS_IN_BACKWARD, hangs=True),
    Hostile("early_exits_inside_cases",
            lambda tmp: [HONEST_PART1, func_file({
                "naive_collect_backward_x": "std::exit(0);",
                "megatron_collect_backward_output": "std::_Exit(0);",
                "megatron_collect_forward_output": "std::quick_exit(0);",
                "megatron_collect_forward_input": "if (mp_comm.rank() == 0) return x; std::exit(0);",
                "collect_weight_grad": "std::raise(SIGKILL);",
                "megatron_collect_backward_x": "std::abort();",
                "naive_collect_forward_output": "if (mp_comm.rank() == 0) return out; for (;;) pause();",
            })],
            # Their student process's end is its side's to tell: a SIGKILL is named too.
            10, says=("exited in the middle of the case", "was killed (SIGKILL", "aborted"), budget=150, hangs=True,
            static="warn"),  # exit and abort pass the link check; pause() does not
    # The handin's fault, not the grader's (the kit's stubs do start); graded
    # file by file, the honest data split keeps its points.
    Hostile("exits_before_main",
            lambda tmp: [HONEST_PART1, zero_file({}, epilogue="namespace { struct Quit { Quit() { std::_Exit(0); } } "
                                                             "quit; }\n")],
            10, says=("did not start its cases", "zero_dp_stage3.cpp breaks the program even alone"),
            never=("grader error",), static="warn", budget=90),
    # A fault costs only the part whose code holds it: part 8's memory rule
    # measures what the ZeRO layer keeps, not what the process holds.
    Hostile("sixteen_gib_in_split_data",
            lambda tmp: [("student/" + f, source("reference", f)) for f in (IMPL_FILES[0], IMPL_FILES[2])] + [
                ("student/data_parallel_preprocess.cpp", stub_with("data_parallel_preprocess.cpp", {
                    "split_data": "std::vector<double> hoard(std::size_t(2) << 30, 1.0); "
                                  "if (hoard[12345] > 0) throw std::runtime_error(\"kept 16 GiB\");"})), FEEDBACK],
            140, says=("over its memory budget: split_data asked for a block of 16384.0 MiB",
                       "exception in split_data"), budget=120),
    Hostile("fills_the_disk_with_files_under_the_per_file_limit",
            lambda tmp: reference_calling("fill_disk(comm);", FILL), 150, never=("DISK[",), static="warn", filtered=False,
            budget=150, after=lambda tmp: in_shared_tmp("fill-*")),
    Hostile("memory_in_a_mapping_that_grows_down",
            lambda tmp: reference_calling("hold_a_stack();", GROWS_DOWN), 130, static="warn", budget=120,
            says=("refused by the system-call filter: get_info asked for a mapping that grows down",),
            scores={"part2": 0}),
    Hostile("eight_ranks_hold_private_memory_up_to_the_data_limit",
            lambda tmp: reference_calling("hold_up_to_the_data_limit(comm.size());", AT_THE_DATA_LIMIT), 150,
            static="warn", budget=120, never=("grader error", "held only")),
    # Refused by the filter: mq_open fails and the reference goes on.
    Hostile("posix_message_queues_refused",
            lambda tmp: reference_calling("leave_queues(comm.rank());", MQUEUES), 150, static="warn", budget=120),
    # Behind the filter, with and without namespaces: nothing stays.
    Hostile("posix_message_queues_left_behind",
            lambda tmp: reference_calling("leave_queues(comm.rank());", MQUEUES), 150, static="warn", budget=120,
            filtered=False),
    Hostile("posix_message_queues_left_behind_without_namespaces",
            lambda tmp: reference_calling("leave_queues(comm.rank());", MQUEUES), 150, static="warn", budget=120,
            filtered=False, namespaces=False),
    Hostile("lingers_and_leaves_files_to_block_the_grader",
            # The harness fails the one case whose code started the daemon; the rest is the reference's.
            # Part 2: the first get_info of each job lingers (public and hidden cases run apart), so one
            # public and one hidden case fail, and the public cases count at 3/4.
            lambda tmp: reference_calling("linger();", LINGER), 145, static="warn", budget=150, filtered=False,
            says=("left them running; they were killed",), scores={"part2": 15},
            after=lambda tmp: in_shared_tmp("kit-gallery-leftover-*")),
    # Part 12's stage forward called with an 11 MB micro-batch (the red team,
    # this round): driven, that argument travels to the harness, which holds
    # the stage in a few MiB. It crashed the MPI side, or put the harness out
    # of step with it; now the side refuses an upcall past 1 MiB to its caller,
    # which catches the refusal here and goes on: the honest rest keeps every point.
    Hostile("pipeline_upcall_larger_than_the_harness",
            lambda tmp: [(f"student/{f}", source("reference", f)) for f in IMPL_FILES] + [
                ("student/pipeline_parallel.cpp", source("reference", "pipeline_parallel.cpp").replace(
                    b"  Links links{stage, comm};\n",
                    b"  try {\n    const Matrix big = Matrix::Zero(1400, 1000);\n    stage.forward(0, big);\n"
                    b"  } catch (const std::exception&) {\n  }\n  Links links{stage, comm};\n", 1))],
            180, extensions="part12_pipeline", scores={"part12_pipeline": 30}, never=("grader error",)),
    # Every job's ranks spin in a static destructor once the cases are over:
    # the runner stops each job soon after its last result, the cases keep
    # their results, and the time is the handin's (no grader error).
    Hostile("spins_in_a_static_destructor_after_the_last_case",
            lambda tmp: reference_calling("(void)spin_at_exit;", SPIN_AT_EXIT), 150, static="warn", budget=150,
            says=("still ran 5 s after their last case's result and were stopped",), never=("grader error",)),
]


@pytest.mark.parametrize("case", cases(GALLERY))
def test_hostile_handin(case: Hostile, tmp_path, untouched_kit):
    grade_hostile(case, tmp_path)
