"""Formatting shared by `make test` and the grader's reports."""


def fmt(points: float) -> str:
    """Points as a person writes them: 10, 7.5, 6.7."""
    return str(int(round(points))) if abs(points - round(points)) < 1e-9 else f"{points:.1f}"
