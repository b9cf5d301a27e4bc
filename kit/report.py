"""Formatting shared by `make test`, the checking commands and the grader's reports."""
from typing import Callable, Iterable, List, Tuple


def fmt(points: float) -> str:
    """Points as a person writes them: 10, 7.5, 6.7."""
    return str(int(round(points))) if abs(points - round(points)) < 1e-9 else f"{points:.1f}"


def check_command(argv: List[str], usage: str, lines: Callable[[List[str]], Iterable[Tuple[str, bool]]]) -> int:
    """A checking command (`python3 -m kit static-check`, `link-check`): each
    (line, refuses) printed; exit 1 if any line refuses, 2 on no arguments."""
    if not argv or argv[0] in ("-h", "--help"):
        print(usage)
        return 0 if argv else 2
    worst = 0
    for text, refuses in lines(argv):
        print(text)
        worst = max(worst, int(refuses))
    return worst
