"""The one table of graded parts, and the kit's other facts about its cases.
The course's choices (which extension parts it grades, points other than
the table's, which MPI its builds use, what this copy of the kit holds)
are data in course.toml (kit/course.py), applied here when the table loads.

`make test-partN`, `make test`, CTest, the grader, the test binary and the
staff tools all read it; change cases, rank counts, time limits or files
here and nowhere else, and a course's points in course.toml.
  - CMake runs `python3 -m kit.parts_cli --cmake FILE --cpp FILE` when it
    configures: the part keys, the sources and programs of the parts this
    copy holds, the student files and the test sources for the build, and
    each run's rank count and per-case time limit for the test binary (a
    case runs on as many ranks as the run that selects it).
  - The Makefile reads `python3 -m kit.parts_cli --make`: the default MPI,
    what this copy holds and the make targets of the parts it builds
    (make/KEY.mk). Neither looks for files to find out.
  - A part's files are found by its key (kit/part_types.py); cutting a
    course's copy selects them by the row, never by looking.
  - A part's points are split evenly over its cases; hidden cases are
    suites whose names start with "Hidden", selected by their own runs.

  python3 -m kit parts            prints the table and the configuration (kit/parts_cli.py)
"""
from dataclasses import dataclass, replace
from typing import Dict, List, Tuple

from kit import course as courses
from kit import overrides
# The table's parts are made of these (kit/part_types.py); the rest of the
# kit imports them from here, with the table.
from kit.part_types import (CASE_SECONDS, JOB_SECONDS, Adds, Part, Run, hidden, is_hidden, matches,  # noqa: F401
                            laid_out, part, texts, under)

# The files a student edits and hands in (in handin order): three, and each
# graded part's own (IMPL_FILES, below).
FUNC, SPLIT, ZERO = "func_impl.cpp", "data_parallel_preprocess.cpp", "zero_dp_stage3.cpp"
CORE_FILES = (FUNC, SPLIT, ZERO)
RING, PIPELINE, DDP = "ring_collectives.cpp", "pipeline_parallel.cpp", "ddp_buckets.cpp"
COMPRESS, DECENTRAL, ZERO12 = "compression.cpp", "decentralized.cpp", "zero_stage12.cpp"

@dataclass(frozen=True)
class Configuration:
    """The configuration one command runs under: the course file's
    (course.toml, kit/course.py), with KIT_EXTENSIONS and KIT_MPI applied."""
    graded: Tuple[str, ...]  # the extension parts graded, in the table's order
    held: Tuple[str, ...]    # the extension parts this copy holds (built, whether graded or not)
    mpi: str
    holds: Tuple[str, ...]


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
    raise ValueError(f"kit/parts.py: a grading job may hold {JOB_MEMORY_MIB} MiB and a compile "
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


def test_file(name: str) -> str:
    return f"tests/{name}"


def own_hidden(key: str) -> Adds:
    """A part's hidden cases, found by its key: grader/hidden/KEY/hidden_KEY.cpp
    (Part 8's two halves share theirs, and their tests, under "part8")."""
    return Adds(hidden=under("grader/hidden", key, f"hidden_{key}.cpp"))


ALL_PARTS: List[Part] = [
    part("part1", "data split", 10, [Run("Part1DataSplit.*", 1)], [1], [SPLIT], under("tests", "part1", "test_part1_data_split.cpp"),
         "Part 1", functions=["split_data"], adds=own_hidden("part1"), driven=True),
    part("part2", "layer initialization", 20, [Run("Part2GetInfo.*", 8)], [8], [FUNC],
         under("tests", "part2", "test_part2_get_info.cpp"), "Part 2", functions=["get_info"], adds=own_hidden("part2"), driven=True),
    part("part3", "naive TP forward", 15, [Run("Part3NaiveForward.*", 4)], [8], [FUNC],
         under("tests", "part3", "test_part3_naive_forward.cpp"), "Part 3",
         functions=["naive_collect_forward_input", "naive_collect_forward_output"], adds=own_hidden("part3"), driven=True),
    part("part4", "Megatron TP forward", 15, [Run("Part4MegatronForward.*", 4)], [8], [FUNC],
         under("tests", "part4", "test_part4_megatron_forward.cpp"), "Part 4",
         functions=["megatron_collect_forward_input", "megatron_collect_forward_output"], adds=own_hidden("part4"), driven=True),
    part("part5", "naive TP backward", 20, [Run("Part5NaiveBackward.*", 4)], [8], [FUNC],
         under("tests", "part5", "test_part5_naive_backward.cpp"), "Part 5",
         functions=["naive_collect_backward_output", "naive_collect_backward_x"], adds=own_hidden("part5"), driven=True),
    part("part6", "Megatron TP backward", 10, [Run("Part6MegatronBackward.*", 4)], [8], [FUNC],
         under("tests", "part6", "test_part6_megatron_backward.cpp"), "Part 6",
         functions=["megatron_collect_backward_output", "megatron_collect_backward_x"], adds=own_hidden("part6"), driven=True),
    part("part7", "DP gradient averaging", 10, [Run("Part7WeightGrad.*", 4)], [8], [FUNC],
         under("tests", "part7", "test_part7_weight_grad.cpp"), "Part 7", functions=["collect_weight_grad"], adds=own_hidden("part7"), driven=True),
    part("part8_forward", "ZeRO-3 FC forward", 20, [Run("Part8Partition.*", 1), Run("Part8Forward.*", 4)], [1, 8],
         [ZERO], under("tests", "part8", "test_part8_zero_layer.cpp"), "Part 8", gates=["Part8Forward.KeepsNoFullWeight*"],
         functions=["partition_flat_tensor", "forward"], traffic=True, rules=["zero_memory"],
         driven=True, adds=own_hidden("part8")),
    part("part8_backward", "ZeRO-3 FC backward", 20, [Run("Part8Backward.*", 4)], [8], [ZERO],
         under("tests", "part8", "test_part8_zero_layer.cpp"), "Part 8", gates=["Part8Backward.KeepsNoFullWeight*"],
         functions=["backward"], traffic=True, rules=["zero_memory"],
         driven=True, adds=own_hidden("part8")),
    part("part9", "ZeRO-3 sharded Adam", 10,
         [Run("Part9Adam.*", 4), Run("Part9Training.*", 4, case_seconds=120.0, job_seconds=180.0)], [8, 4], [ZERO],
         under("tests", "part9", "test_part9_zero_adam.cpp", "test_part9_zero_training.cpp"), "Part 9",
         functions=["ZeroDPAdam::step"], traffic=True, rules=["zero_memory"],
         driven=True, adds=own_hidden("part9")),
    # The extension parts: one suite per rank count (a case runs on its run's
    # ranks); each part's files are found by its key (kit/part_types.py).
    part("part11_ring", "ring collectives", 20, [Run(f"Part11Ring{n}.*", n) for n in (1, 2, 3, 4, 8)],
         [1, 2, 3, 4, 8], [RING], under("tests", "part11_ring", "test_part11_ring.cpp"), "Part 11",
         functions=["naive_allreduce", "ring_allreduce"], extension=True, about="collectives from point-to-point calls",
         traffic=True, driven=True,
         adds=Adds(served=("framework/calls/ring_served.cpp",),
                   programs=under("programs", "part11_ring", "ring_timing.cpp"),
                   hidden=under("grader/hidden", "part11_ring", "hidden_ring.cpp"),
                   other=("framework/include/ring_collectives.h", "framework/calls/ring_calls.h", "kit/ring.py",
                          "staff/part_mutants/part11_ring.py") +
                   under("tests", "part11_ring", "ring_checks.h"),
                   handout=texts("part11_ring", "feedback"), make="make/part11_ring.mk",
                   allowlist="kit/allowlist/part11_ring.txt",
                   commands=(("ring", "kit.ring", "time the allreduces of Part 11 (make mpi-demo CASE=ring)"),),
                   facts="kit.ring")),
    part("part12_pipeline", "pipeline parallelism", 30, [Run(f"Part12Pipeline{k}.*", k) for k in (1, 2, 4)],
         [1, 2, 4], [PIPELINE], under("tests", "part12_pipeline", "test_part12_pipeline.cpp"), "Part 12",
         functions=["pipeline_step"], extension=True, about="pipeline parallelism", driven=True,
         adds=Adds(framework=("framework/model/pipeline_stage.cpp", "framework/model/pipeline_schedule.cpp",
                              "framework/calls/pipeline_remote.cpp"),
                   served=("framework/calls/pipeline_served.cpp",),
                   programs=under("programs", "part12_pipeline", "pipeline_train.cpp"),
                   unit_tests=under("tests", "part12_pipeline", "test_pipeline_schedule.cpp"),
                   hidden=under("grader/hidden", "part12_pipeline", "hidden_pipeline.cpp"),
                   other=("framework/include/pipeline_parallel.h", "framework/model/pipeline_runtime.h",
                          "staff/part_mutants/part12_pipeline.py",
                          "framework/calls/pipeline_calls.h", "framework/calls/pipeline_driven.h",
                          "kit/explore_pipeline.py") +
                   under("tests", "part12_pipeline", "pipeline_checks.h"),
                   explore="explore_pipeline", handout=texts("part12_pipeline", "feedback"),
                   make="make/part12_pipeline.mk", allowlist="kit/allowlist/part12_pipeline.txt")),
    part("part13_ddp", "gradient buckets and overlap", 20, [Run(f"Part13Ddp{n}.*", n) for n in (1, 2, 4)],
         [1, 2, 4], [DDP], under("tests", "part13_ddp", "test_part13_ddp.cpp"), "Part 13",
         functions=["plan_buckets", "GradientBuckets"], extension=True, traffic=True, rules=["part13_ddp"],
         about="gradient buckets and their overlap with backward", driven=True,
         adds=Adds(framework=("framework/model/ddp_model.cpp", "framework/calls/ddp_remote.cpp"),
                   served=("framework/calls/ddp_served.cpp",),
                   programs=under("programs", "part13_ddp", "ddp_train.cpp", "request_progress.cpp"),
                   hidden=under("grader/hidden", "part13_ddp", "hidden_ddp.cpp"),
                   other=("framework/include/ddp.h", "framework/model/ddp_model.h", "framework/calls/ddp_calls.h",
                          "staff/part_mutants/part13_ddp.py",
                          "framework/calls/ddp_driven.h",
                          "kit/explore_ddp.py", "kit/rules/part13_ddp.py") + under("tests", "part13_ddp", "ddp_checks.h"),
                   explore="explore_ddp", handout=texts("part13_ddp", "debugging", "feedback"),
                   make="make/part13_ddp.mk", allowlist="kit/allowlist/part13_ddp.txt")),
    part("part14_compress", "top-k compression with error feedback", 20,
         [Run(f"Part14Compress{n}.*", n) for n in (1, 2, 4)], [1, 2, 4], [COMPRESS],
         under("tests", "part14_compress", "test_part14_compress.cpp"), "Part 14",
         functions=["topk", "compress_with_feedback", "sparse_allreduce_mean"], extension=True,
         about="top-k compression: send the largest entries, keep the rest for later", traffic=True, driven=True,
         adds=laid_out("part14_compress", "compress", "compress.h", programs=("compress_train",))),
    part("part15_decentral", "decentralized SGD on a ring", 15,
         [Run(f"Part15Decentral{n}.*", n) for n in (1, 2, 3, 4, 8)], [1, 2, 3, 4, 8], [DECENTRAL],
         under("tests", "part15_decentral", "test_part15_decentral.cpp"), "Part 15",
         functions=["gossip_mix", "decentralized_sgd_step"], extension=True,
         about="decentralized SGD: each rank averages with its ring neighbours", traffic=True, driven=True,
         adds=laid_out("part15_decentral", "decentral", "decentral.h", programs=("decentral_train",))),
    part("part16_zero12", "ZeRO stages 1 and 2 for Adam", 25,
         [Run(f"Part16ZeroStages{n}.*", n) for n in (1, 2, 3, 4)], [1, 2, 3, 4], [ZERO12],
         under("tests", "part16_zero12", "test_part16_zero12.cpp"), "Part 16",
         functions=["Zero1Adam::step", "Zero2Adam::step"], extension=True, traffic=True,
         about="ZeRO stages 1 and 2: shard the optimizer's state, then the gradient", driven=True,
         adds=laid_out("part16_zero12", "zero12", "zero12.h", programs=("zero_stages",),
                       also=("kit/explore_part16_zero12.py",), explore="explore_part16_zero12")),
]
# The table's own points; a course may give a part others (course.toml, [points]).
TABLE_POINTS: Dict[str, int] = {p.key: p.points for p in ALL_PARTS}
try:
    COURSE = courses.load([p.key for p in ALL_PARTS], [p.key for p in ALL_PARTS if p.extension])
except courses.CourseError as e:
    raise SystemExit(f"the course file is not valid (python3 -m kit course checks it):\n{e}")


def timed(p: Part, seconds) -> Part:
    """`p` with each of its cases given `seconds` (course.toml, [time_limit];
    None: the table's), a floor kit/calibration.py may only raise. A run's
    job keeps room for as many cases as at the table's limit."""
    if seconds is None:
        return p
    return replace(p, runs=tuple(replace(r, case_seconds=float(seconds),
                                         job_seconds=max(r.job_seconds, r.job_seconds * seconds / r.case_seconds))
                                 for r in p.runs))


ALL_PARTS = [timed(replace(p, points=COURSE.points.get(p.key, p.points)), COURSE.time_limits.get(p.key))
             for p in ALL_PARTS]
CONFIGURATION = Configuration(COURSE.extensions, COURSE.held, COURSE.mpi, COURSE.holds)
MPI = COURSE.file_mpi   # the default MPI of make and CMake (KIT_MPI, make's MPI=..., chooses for one command)
HOLDS = COURSE.holds


def extension_paths(keys) -> List[str]:
    """Every file of the tree that only the extension parts `keys` use."""
    return [f for p in ALL_PARTS if p.extension and p.key in keys for f in p.own_paths()]


# The graded parts: the assignment's, and the extension parts the configuration grades.
PARTS: List[Part] = [p for p in ALL_PARTS if not p.extension or p.key in CONFIGURATION.graded]
TOTAL_POINTS = sum(p.points for p in PARTS)
# The scale of a gradebook row graded under this course (grader/batches.py).
COURSE_STAMP = courses.stamp({p.key: p.points for p in PARTS}, COURSE)
IMPL_FILES: Tuple[str, ...] = tuple(dict.fromkeys(list(CORE_FILES) + [f for p in PARTS for f in p.files]))

# The kit's own checks that are no part (CTest runs them on the reference,
# as reference/<name>).
KIT_CHECKS: Dict[str, Run] = {"training_agreement": Run("KitTrainingAgreement.*", 4),
                              "zero_accounting": Run("KitZeroAccounting.*", 4),
                              "point_to_point": Run("KitPointToPoint.*", 4),
                              "requests": Run("KitRequests.*", 2),
                              "syscall_filter": Run("KitSyscallFilter.*", 1),
                              "memory_budget": Run("KitMemoryBudget.*", 1)}
KIT_TESTS: Tuple[str, ...] = (test_file("test_kit_training_agreement.cpp"), test_file("test_kit_zero_accounting.cpp"),
                              test_file("test_kit_point_to_point.cpp"), test_file("test_kit_requests.cpp"),
                              test_file("test_kit_syscall_filter.cpp"), test_file("test_kit_memory_budget.cpp"))


def built_parts() -> List[Part]:
    """The parts a build of this copy compiles, graded or not: the
    assignment's, and every extension part the configuration holds."""
    return [p for p in ALL_PARTS if not p.extension or p.key in CONFIGURATION.held]


def built_files() -> Tuple[str, ...]:
    """The student files a build of this tree compiles (the graded ones first)."""
    return tuple(dict.fromkeys(list(IMPL_FILES) + [f for p in built_parts() for f in p.files]))


def all_runs() -> List[Run]:
    return [run for p in built_parts() for run in p.runs] + list(KIT_CHECKS.values())


def find(keys: List[str]) -> List[Part]:
    """Parts by key, graded or not (`make test-part11` runs it ungraded too);
    'part8' stands for both of its halves."""
    chosen: List[Part] = []
    parts = built_parts()
    for key in keys:
        group = [p for p in parts if p.key == key or p.key.startswith(key + "_")]
        if not group:
            raise KeyError(f"unknown part '{key}'; the parts are: {', '.join(p.key for p in parts)}")
        chosen += [p for p in group if p not in chosen]
    return chosen


def make_keys() -> List[str]:
    """What `make test-partN` accepts: every key, and the group of a split part."""
    keys: List[str] = []
    for p in built_parts():
        for k in (p.key.split("_")[0], p.key):
            if k not in keys:
                keys.append(k)
    return keys
