"""The kit's limits on a grading, the same on every machine: time (a case's
and a run's own are in kit/part_types.py, and a course may raise a part's:
course.toml, [time_limit]) and memory (a rank's, its MPI side's, a compile's,
a job's), each with why it is what it is. kit/calibration.py raises the time
limits to the grading machine's pace; the memory limits never move, so a
grade never depends on the machine's memory.

  python3 -c "from kit import limits; print(limits.JOB_MEMORY_MIB)"
"""
from kit import overrides

# Time limits, in seconds (a case's and a run's own: CASE_SECONDS and JOB_SECONDS, kit/part_types.py).
FAILED_GRACE_SECONDS = 2.0    # a rank that failed waits this long for the others before ending the job
STARTUP_SECONDS = 30.0        # from launch to the plan record: MPI start-up and static initializers
QUIET_SECONDS = 150.0         # a job that writes no record this long is stuck where no watchdog reaches
# From the last case's result to the job's end: the ranks meet, MPI ends.
# Past it the handin's own code runs on (a static object's destructor), and
# the job is stopped: its time is the handin's, not the grading's.
EXIT_SECONDS = 5.0

# Memory: the heap one rank of a test job may hold at once (the kit's data
# included; MPI's buffers are its side's, below), the same on every machine,
# so that a grade never depends on the grading machine's memory; the
# reference's largest case, the hidden training, holds 32 MiB at its peak,
# its data set included.
RANK_HEAP_BUDGET_MIB = 40
# Beside the heap: all of a rank's private memory (heap, private mappings,
# thread stacks: the kernel's RLIMIT_DATA), set by the test program and by
# the grader's sandbox. It stops memory taken around the heap's accounting
# (a mapping of one's own); the reference's ranks need 21 MiB of it at their
# peak (MPI's memory is its side's), so a handin at its heap budget keeps
# some 10 MiB of room.
RANK_DATA_LIMIT_MIB = RANK_HEAP_BUDGET_MIB + 16
# Each rank's MPI side (framework/comm/side/), the process that alone holds
# MPI, sets its own data limit: MPI's memory and the buffers of the call it
# carries, which MPI reduces in place (the largest call of a case holds
# 4 MiB; at 20 MiB a side failed inside Open MPI's reduce-scatter of it).
SIDE_DATA_LIMIT_MIB = 24
# The one private memory the data limit does not count: the main thread's
# stack (RLIMIT_STACK; the system-call filter refuses every other mapping
# that grows down, and mremap). The reference's ranks use 0.2 MiB of it.
RANK_STACK_LIMIT_MIB = 2
# The driven mode (docs/driven-calls.md) runs a rank's cases in two
# processes, the harness, which holds no student code, and the student's
# process, and they share the rank's limits: the harness keeps
# DRIVEN_HARNESS_DATA_MIB of the data limit and a main stack of
# DRIVEN_HARNESS_STACK_MIB, the student's process the rest of the data
# limit and the rank's stack, so a driven job holds no more than one of the
# usual mode. The harness's peak is Part 9's training, where it holds the
# data set's bytes and converts a batch at a time: 9.3 MiB (VmData, its 8
# ranks' largest, hidden cases included). The student's process holds
# only the framework's few MiB beside the handin's own (the usual mode's
# test program, some 21 MiB): its room beside the heap budget only grows.
DRIVEN_HARNESS_DATA_MIB = 12
DRIVEN_HARNESS_STACK_MIB = 1
STUDENT_PROCESS_DATA_MIB = RANK_DATA_LIMIT_MIB - DRIVEN_HARNESS_DATA_MIB - DRIVEN_HARNESS_STACK_MIB
# Every other thread's stack (MPI's progress threads, the watchdog) is data:
# 1 MiB each rather than glibc's 8, since the data limit counts a stack at
# its full size, touched or not (tests/harness/mpi_test_main.cpp).
THREAD_STACK_KIB = 1024
# A grading job of 8 ranks, each at both limits with its side at its own, and the kit's own share:
# mpirun (21 MiB resident, 8 MiB of it MPI's shared memory), the grader's
# Python (34 MiB) and the records it keeps (4 MiB of them at most,
# kit/channels.py, some 30 MiB once read), the ranks' page tables and the
# code they share, as measured for the grader's own documentation;
# kit/host_limits.py refuses a machine with less.
JOB_RANKS = 8
KIT_SHARE_MIB = 112
JOB_MEMORY_MIB = JOB_RANKS * (RANK_DATA_LIMIT_MIB + RANK_STACK_LIMIT_MIB + SIDE_DATA_LIMIT_MIB) + KIT_SHARE_MIB
# A compile of a student file (and the static checks' preprocessor) may
# hold this much private memory (RLIMIT_DATA, the precompiled header's
# mapping included): the reference's largest file takes 330 MiB without the
# header, 270 MiB with it. A compile past it is the handin's, like one past
# its CPU limit (`#include "/dev/zero"` reads until it meets it), and never
# reaches a container's OOM killer, which would make it the grader's.
COMPILE_DATA_MIB = 512
# The smallest memory a grading platform gives by default (Gradescope's): a
# job at every limit fits there by construction, and so does a compile
# (kit/host_limits.py runs no more compiles at once than the memory holds),
# or nothing builds.
SMALLEST_PLATFORM_MIB = 768
if JOB_MEMORY_MIB > SMALLEST_PLATFORM_MIB or COMPILE_DATA_MIB + KIT_SHARE_MIB > SMALLEST_PLATFORM_MIB:
    raise ValueError(f"kit/limits.py: a grading job may hold {JOB_MEMORY_MIB} MiB and a compile "
                     f"{COMPILE_DATA_MIB} MiB beside the kit's {KIT_SHARE_MIB}, over Gradescope's "
                     f"{SMALLEST_PLATFORM_MIB} MiB: lower a rank's limits, a compile's or the kit's share")


def time_scale() -> float:
    """The factor on a case's limit, STARTUP_SECONDS, QUIET_SECONDS and EXIT_SECONDS, 1 unless
    KIT_TIME_SCALE says less: the kit's self-test sets it, so that the many
    handins it makes hang end sooner (it tests how a hang is stopped and
    told, not the length of the limits). It can only shorten a limit."""
    text = overrides.TIME_SCALE or ""
    try:
        factor = float(text) if text else 1.0
    except ValueError:
        factor = 0.0
    if not 0 < factor <= 1:
        raise SystemExit(f"KIT_TIME_SCALE must be a number in (0, 1], got {text!r}")
    return factor


def limit(seconds: float) -> float:
    return seconds * time_scale()


# A check of a handin that hangs case after case (the gallery's, the mutants'
# deadlocks) runs at this share of the limits: what it tests, how each hang
# is stopped and told, is the same at any limit.
HANG_SHARE = 0.5
# Once a case of a part has hung or crashed its job, the part's other cases
# run after every other part's, each at this share of its limit: correct
# code takes under a twentieth of a limit, and a part that hangs case after
# case then costs a fifth of the time, the same on every machine, so a
# platform's time limit fits it as the host does (the same grade on each).
HUNG_PART_SHARE = 0.2
