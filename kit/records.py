"""Reads the results file the test binary writes; the format is defined in
tests/records.h, and this module follows it.

A plan or a result counts only if its seal, an HMAC-SHA-256 under the job's
key (tests/results_seal.h), verifies: only those can make a case pass.
Failure and abort records need no seal, since they can only fail a case.
"""
import hmac
import json
import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional

PLAN, RESULT, RANK_FAILURE, ABORT, ROLLCALL = "plan", "result", "rank_failure", "abort", "rollcall"
SEALED = (PLAN, RESULT)
FIELDS = {  # the members each kind must have (records.h)
    PLAN: ("ranks", "cases"),
    RESULT: ("case", "status", "seconds", "failures"),
    RANK_FAILURE: ("case", "rank", "message"),
    ABORT: ("case", "rank", "why"),
    ROLLCALL: ("case", "rank", "state", "seconds"),
}
SEAL = re.compile(r',"mac":"([0-9a-f]{64})"}$')


def unseal(line: str, key: bytes) -> Optional[str]:
    """The record without its seal if the seal verifies, else None."""
    m = SEAL.search(line)
    if not m:
        return None
    record = line[:m.start()] + "}"
    expected = hmac.new(key, record.encode("utf-8", errors="surrogateescape"), "sha256").hexdigest()
    return record if hmac.compare_digest(expected, m.group(1)) else None


@dataclass
class Records:
    """What one job wrote, by kind, in file order."""
    plans: List[Dict] = field(default_factory=list)
    results: List[Dict] = field(default_factory=list)
    failures: Dict[str, List[Dict]] = field(default_factory=dict)  # case -> {"rank", "message"} (failures, aborts)
    rollcalls: Dict[str, Dict[int, Dict]] = field(default_factory=dict)  # case -> rank -> {"state", "seconds"}
    forged: int = 0  # plans or results whose seal did not verify

    @property
    def plan(self) -> Optional[List[str]]:
        return [str(c) for c in self.plans[0]["cases"]] if self.plans else None


def parse(lines, key: bytes) -> Records:
    out = Records()
    for line in lines:
        line = line.rstrip("\n")
        try:
            record = json.loads(line)
        except ValueError:
            continue  # a torn or foreign line proves nothing
        if not isinstance(record, dict):
            continue
        kind = record.get("event")
        if kind not in FIELDS or any(name not in record for name in FIELDS[kind]):
            continue
        if kind in SEALED:
            sealed = unseal(line, key)
            if sealed is None:
                out.forged += 1
                continue
            record = json.loads(sealed)
        if kind == PLAN:
            out.plans.append(record)
        elif kind == RESULT:
            out.results.append(record)
        elif kind == ROLLCALL:
            out.rollcalls.setdefault(str(record["case"]), {})[int(record["rank"])] = {
                "state": str(record["state"]), "seconds": float(record["seconds"])}
        else:
            text = record["message"] if kind == RANK_FAILURE else record["why"]
            out.failures.setdefault(str(record["case"]), []).append({"rank": record["rank"], "message": str(text)})
    return out


def read(path: str, key: bytes) -> Records:
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            return parse(f, key)
    except OSError:
        return Records()
