"""The one table of graded parts, as the kit ships it: each part's key,
points, runs, files and rules, and the kit's own checks that are no part.
A course's choices (which extension parts it grades, points and time limits
other than the table's) are applied to it by kit/parts.py; this module reads
no course file, and importing it does nothing else.

Change cases, rank counts, time limits or files here and nowhere else, and
a course's points in course.toml.
  - A part's files are found by its key (kit/part_types.py); cutting a
    course's copy selects them by the row, never by looking.
  - A part's points are split evenly over its cases; hidden cases are
    suites whose names start with "Hidden", selected by their own runs.

  python3 -m kit parts            prints the table and the configuration (kit/parts_cli.py)
"""
from typing import Dict, List, Tuple

from kit.part_types import Adds, Part, Run, laid_out, part, texts, under

# The files a student edits and hands in (in handin order): three, and each
# graded part's own (kit/parts.py, IMPL_FILES).
FUNC, SPLIT, ZERO = "func_impl.cpp", "data_parallel_preprocess.cpp", "zero_dp_stage3.cpp"
CORE_FILES = (FUNC, SPLIT, ZERO)
RING, PIPELINE, DDP = "ring_collectives.cpp", "pipeline_parallel.cpp", "ddp_buckets.cpp"
COMPRESS, DECENTRAL, ZERO12 = "compression.cpp", "decentralized.cpp", "zero_stage12.cpp"


def test_file(name: str) -> str:
    return f"tests/{name}"


def own_hidden(key: str) -> Adds:
    """A part's hidden cases, found by its key: grader/hidden/KEY/hidden_KEY.cpp
    (Part 8's two halves share theirs, and their tests, under "part8")."""
    return Adds(hidden=under("grader/hidden", key, f"hidden_{key}.cpp"))


TABLE: List[Part] = [
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
TABLE_POINTS: Dict[str, int] = {p.key: p.points for p in TABLE}

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
