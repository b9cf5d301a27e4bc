"""The one table of graded parts. `make test-partN`, `make test`, CTest and
the grader all read it; change points or cases here and nowhere else.

Each part runs the cases of one or more (gtest filter, rank count) pairs of
the kit's test binary; all chosen cases share one launch (tools/run_parts.py).
A part's points are split over its cases by weight (1 unless a pattern in
`weights` says otherwise); hidden cases are suites whose names start with
"Hidden" and match the same filters with the prefix added.
"""
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Dict, List, Tuple


@dataclass(frozen=True)
class Run:
    filter: str          # gtest filter of the cases, e.g. "Part3*"
    ranks: int           # mpirun -n
    timeout: float = 60  # wall-clock seconds for one launch
    hidden: bool = False  # the grader's cases (grader/hidden/), not shipped to students


@dataclass(frozen=True)
class Part:
    key: str
    title: str
    points: int
    runs: Tuple[Run, ...]
    handout: str                                   # section of handout/README.md
    files: Tuple[str, ...]                         # the student files the part's cases use
    weights: Dict[str, float] = field(default_factory=dict)  # case glob -> weight
    # Case globs that gate the part: if one of them fails, the part scores 0
    # (ZeRO's memory rule: a layer that keeps its full weight is not ZeRO-3).
    gates: Tuple[str, ...] = ()

    def public_runs(self) -> Tuple[Run, ...]:
        return tuple(r for r in self.runs if not r.hidden)

    def owns(self, case: str) -> bool:
        return any(matches(run.filter, case) for run in self.runs)

    def score(self, results: Dict[str, bool]) -> float:
        """Points for case -> passed of this part's cases (others are ignored)."""
        mine = {c: ok for c, ok in results.items() if self.owns(c)}
        if any(not ok for c, ok in mine.items() if any(fnmatchcase(c, g) for g in self.gates)):
            return 0.0
        total = sum(self.weight(c) for c in mine)
        return self.points * sum(self.weight(c) for c, ok in mine.items() if ok) / total if total else 0.0

    def gate_failed(self, results: Dict[str, bool]) -> List[str]:
        return [c for c, ok in results.items() if self.owns(c) and not ok
                and any(fnmatchcase(c, g) for g in self.gates)]

    def weight(self, case: str) -> float:
        for pattern, w in self.weights.items():
            if fnmatchcase(case, pattern):
                return w
        return 1.0


def matches(gtest_filter: str, case: str) -> bool:
    """gtest's filter syntax: positive patterns, then '-' and negative ones."""
    positive, _, negative = gtest_filter.partition("-")
    hit = any(fnmatchcase(case, p) for p in (positive or "*").split(":") if p)
    return hit and not any(fnmatchcase(case, p) for p in negative.split(":") if p)


SPLIT, FUNC, ZERO = ("data_parallel_preprocess.cpp",), ("func_impl.cpp",), ("zero_dp_stage3.cpp",)

def hidden(filter: str, ranks: int) -> Run:
    return Run("Hidden" + filter, ranks, hidden=True)


PARTS: List[Part] = [
    Part("part1", "data split", 10, (Run("Part1*", 1), hidden("Part1*", 1)), "Part 1", SPLIT),
    Part("part2", "layer initialization", 20, (Run("Part2*", 8), hidden("Part2*", 8)), "Part 2", FUNC),
    Part("part3", "naive TP forward", 15, (Run("Part3*", 4), hidden("Part3*", 8)), "Part 3", FUNC),
    Part("part4", "Megatron TP forward", 15, (Run("Part4*", 4), hidden("Part4*", 8)), "Part 4", FUNC),
    Part("part5", "naive TP backward", 20, (Run("Part5*", 4), hidden("Part5*", 8)), "Part 5", FUNC),
    Part("part6", "Megatron TP backward", 10, (Run("Part6*", 4), hidden("Part6*", 8)), "Part 6", FUNC),
    Part("part7", "DP gradient averaging", 10, (Run("Part7*", 4), hidden("Part7*", 8)), "Part 7", FUNC),
    Part("part8_forward", "ZeRO-3 FC forward", 20,
         (Run("Part8Partition*", 1), Run("Part8Forward*", 4), hidden("Part8Partition*", 1), hidden("Part8Forward*", 8)),
         "Part 8", ZERO, gates=("Part8Forward.KeepsNoFullWeight*",)),
    Part("part8_backward", "ZeRO-3 FC backward", 20, (Run("Part8Backward*", 4), hidden("Part8Backward*", 8)),
         "Part 8", ZERO, gates=("Part8Backward.KeepsNoFullWeight*",)),
    Part("part9", "ZeRO-3 sharded Adam", 10, (Run("Part9*", 4, timeout=180), hidden("Part9*", 8)), "Part 9", ZERO),
]

TOTAL_POINTS = sum(p.points for p in PARTS)


def find(keys: List[str]) -> List[Part]:
    """Parts by key; 'part8' stands for both of its halves."""
    by_key = {p.key: p for p in PARTS}
    chosen: List[Part] = []
    for key in keys:
        group = [p for p in PARTS if p.key == key or p.key.startswith(key + "_")]
        if not group:
            raise KeyError(f"unknown part '{key}'; the parts are: {', '.join(by_key)}")
        chosen += [p for p in group if p not in chosen]
    return chosen
