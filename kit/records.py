"""Reads the records the test binary's ranks write; the format is defined in
tests/harness/records.h, and this module follows it.

Every record is evidence written by a process that runs student code, so
none is a verdict: a result's "pass" only says the ranks' own checks found
nothing, and the judge (kit/judge.py) decides a case with recorded values.
A job's records arrive through one channel per rank (kit/channels.py), so
each line comes with the rank that wrote it: a record that names another
rank, or a plan or result on any channel but rank 0's, is malformed. Every
line is read as hostile input: a length limit, and a line that does not
parse (too deep, too long, not JSON, not a record, a number out of its
range) is counted as malformed, never raised. `read` reads a file of
records the same way (the kit's own tests write one), through
kit/safe_read.py.
"""
import errno
import json
import math
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from kit import facts
from kit.safe_read import UnsafeSandboxFile, open_sandbox_file

PLAN, VALUE, RESULT, RANK_FAILURE, ABORT, ROLLCALL, TRAFFIC = (
    "plan", "value", "result", "rank_failure", "abort", "rollcall", "traffic")


@dataclass(frozen=True)
class Field:
    """One member of a record, as the C++ writer takes it and this reader
    checks it. `kind`: "str", "int", "seconds" (a time written with
    `decimals`), "strings", "values" (doubles, null for what JSON can't
    hold), "failures" ([{"rank", "message"}]), "calls" (a traffic
    account's [op, elements, ranks, times]), "status" ("pass" or "fail",
    from a bool), "object" (a JSON object the caller wrote, from the
    writer of `object`), "flag" (the string `value`, present only when set)."""
    name: str
    kind: str
    param: str = ""          # the C++ parameter's name, where the member's is a keyword ("case")
    required: bool = True    # the reader refuses a record without it
    default: str = ""        # the C++ parameter's default (optional members)
    decimals: int = 3
    value: str = ""


_CASE, _RANK = Field("case", "str", param="name"), Field("rank", "int")
# What a plan's syscall_filter may say: a code, each in the report's words
# (grader/running.py). The harness writes one of them (records_format.h,
# kFilter...), never its own text: a plan with anything else is malformed,
# so no report quotes what a job wrote there.
FILTER_STATES: Dict[str, str] = {
    "on": "on",
    "off_asked": "off: the job was run without it (--no-syscall-filter; KIT_SYSCALL_FILTER=off, staff only)",
    "off_refused": "off: this machine could not install it (an old kernel, or another system; the job's own "
                   "output says why)",
    "off_other_rank": "off: a rank of the job could not install it",
}
# Every record, its members in the order written. tests/harness/records.h
# says who writes each and when; CMake writes the C++ writers from this
# (python3 -m kit.records --cpp FILE), and the reader below checks the same.
RECORDS: Dict[str, Tuple[Field, ...]] = {
    PLAN: (Field("ranks", "int"), Field("cases", "strings"),
           Field("syscall_filter", "str", required=False, default='"on"')),
    VALUE: (_CASE, _RANK, Field("label", "str"), Field("rows", "int"), Field("cols", "int"), Field("stride", "int"),
            Field("values", "values")),
    RESULT: (_CASE, Field("status", "status", param="passed"), Field("seconds", "seconds"),
             Field("failures", "failures")),
    RANK_FAILURE: (_CASE, _RANK, Field("message", "str")),
    ABORT: (_CASE, _RANK, Field("why", "str")),
    ROLLCALL: (_CASE, _RANK, Field("state", "str"), Field("seconds", "seconds", decimals=1),
               Field("phase", "str", required=False, default='"running"'),
               Field("wait", "object", required=False, default='""')),
    TRAFFIC: (_CASE, _RANK, Field("calls", "calls"), Field("overflow", "int"),
              Field("section", "flag", param="after", required=False, value="after")),
}
# The object of a roll-call's "wait": the call a rank waits in (a
# point-to-point call's other ends by world rank, -1 where it has none).
WAIT: Tuple[Field, ...] = (Field("op", "str"), Field("to", "int"), Field("send_tag", "int"), Field("from", "int",
                                                                                                  param="from_rank"),
                           Field("recv_tag", "int"),
                           # Driven only (-1 elsewhere): the call's number on its communicator, its
                           # elements, and the communicator's group, one number on all its ranks.
                           Field("seq", "int"), Field("count", "int"), Field("group", "int"))
_TYPES = {"str": str, "int": int, "seconds": (int, float), "strings": list, "values": list, "failures": list,
          "calls": list, "status": str}
FIELDS = {  # the members each kind must have, with their types; the side's traffic records are kit/traffic.py's
    kind: {f.name: _TYPES[f.kind] for f in fields if f.required}
    for kind, fields in RECORDS.items() if kind != TRAFFIC
}
# A whole job of the kit writes about 1 MB (a few hundred values a record at most); a
# file far past that was written by something else (kit/channels.py keeps
# the same bounds for a job's channels).
MAX_FILE_BYTES = 4 << 20
MAX_LINE_BYTES = 1 << 20
# The harness writes at most so many values a record (kit/facts.py);
# past these limits a job wrote to fill the grader's memory, and the rest
# is not kept.
MAX_VALUES_PER_RECORD = facts.MAX_VALUES_PER_RECORD
# A job of the kit writes at most about 1,400 (the hidden cases, every
# extension part on); 4,000 bound the grader's floats to about 30 MiB.
MAX_VALUE_RECORDS = 4000


@dataclass
class Observed:
    """One value record: what a student function returned on one rank."""
    rows: int
    cols: int
    stride: int
    values: List[Optional[float]]


@dataclass
class Records:
    """What one job wrote, by kind, in file order."""
    plans: List[Dict] = field(default_factory=list)
    results: List[Dict] = field(default_factory=list)
    failures: Dict[str, List[Dict]] = field(default_factory=dict)  # case -> {"rank", "message"} (failures, aborts)
    rollcalls: Dict[str, Dict[int, Dict]] = field(default_factory=dict)  # case -> rank -> {"state", "seconds", "phase", "wait"}
    values: Dict[str, Dict[Tuple[str, int], Observed]] = field(default_factory=dict)  # case -> (label, rank) -> value
    doubled: Dict[str, int] = field(default_factory=dict)  # case -> value records seen twice for one (label, rank)
    malformed: int = 0  # lines that are no record of the format (or past the limits above)
    value_records: int = 0
    problem: Optional[str] = None  # why the file could not be read at all

    @property
    def plan(self) -> Optional[List[str]]:
        return [str(c) for c in self.plans[0]["cases"]] if self.plans else None


# Each whole number of a record is within these (a rank, a shape, a
# stride), and each time finite and under a day: nothing downstream meets a
# number it can't print or compare.
MAX_INT = 1 << 31
MAX_SECONDS = 86400.0
RANK_ZERO_ONLY = (PLAN, RESULT)


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _well_formed(record, rank: Optional[int] = None) -> bool:
    if not isinstance(record, dict):
        return False
    kind = record.get("event")
    if kind not in FIELDS:
        return False
    for name, kind_of in FIELDS[kind].items():
        value = record.get(name)
        if not isinstance(value, kind_of) or isinstance(value, bool):
            return False
        if isinstance(value, int) and not 0 <= value < MAX_INT:
            return False
        if isinstance(value, float) and not (math.isfinite(value) and 0 <= value <= MAX_SECONDS):
            return False
    if rank is not None and (record.get("rank", rank) != rank or (kind in RANK_ZERO_ONLY and rank != 0)):
        return False  # another rank's name, or rank 0's word on another channel
    if kind == PLAN:
        return (all(isinstance(c, str) for c in record["cases"]) and record["ranks"] >= 1
                and record.get("syscall_filter", "on") in FILTER_STATES)
    if kind == VALUE:
        return (record["stride"] >= 1
                and all(v is None or _number(v) for v in record["values"]))
    if kind == RESULT:
        return all(isinstance(f, dict) and isinstance(f.get("message"), str)
                   and (f.get("rank") is None or (isinstance(f.get("rank"), int) and not isinstance(f.get("rank"), bool)
                                                  and 0 <= f["rank"] < MAX_INT))
                   for f in record["failures"])
    return True


# The calls a roll-call's "wait" may name (the ledger's, kit/facts.py), and where a rank may be in its case.
CALLS = facts.OPERATIONS
POINT_TO_POINT = facts.POINT_TO_POINT
PHASES = ("running", "finished", "failed")


def _wait(wait) -> Optional[Dict]:
    """A roll-call's call in flight (records.h), or None."""
    if not isinstance(wait, dict) or wait.get("op") not in CALLS:
        return None
    ends = tuple(f.name for f in WAIT if f.kind == "int")
    if not all(isinstance(wait.get(k), int) and not isinstance(wait.get(k), bool) for k in ends):
        return None
    return {"op": wait["op"], **{k: wait[k] for k in ends}}


def _finite(v) -> Optional[float]:
    """A value as the judge compares it: a finite float, or None (JSON's
    null, an infinity or a NaN: no recorded value is any of those)."""
    if v is None:
        return None
    x = float(v) if not isinstance(v, int) or abs(v) < (1 << 1000) else math.inf
    return x if math.isfinite(x) else None


def parse(lines) -> Records:
    """Records from lines: text (a file's) or (rank, text) pairs (a job's
    channels), each line bytes or str."""
    out = Records()
    for item in lines:
        rank, line = item if isinstance(item, tuple) else (None, item)
        if len(line) > MAX_LINE_BYTES:
            out.malformed += 1
            continue
        try:
            record = json.loads(line)
        except (ValueError, RecursionError, UnicodeDecodeError):
            out.malformed += 1  # torn, foreign, or built to break the reader
            continue
        if not _well_formed(record, rank) or (record["event"] == VALUE and (
                len(record["values"]) > MAX_VALUES_PER_RECORD or out.value_records >= MAX_VALUE_RECORDS)):
            out.malformed += 1
            continue
        kind, case = record["event"], str(record.get("case", ""))
        if kind == PLAN:
            out.plans.append(record)
        elif kind == RESULT:
            out.results.append(record)
        elif kind == VALUE:
            out.value_records += 1
            key = (record["label"], record["rank"])
            mine = out.values.setdefault(case, {})
            if key in mine:
                out.doubled[case] = out.doubled.get(case, 0) + 1
            mine[key] = Observed(record["rows"], record["cols"], record["stride"],
                                 [_finite(v) for v in record["values"]])
        elif kind == ROLLCALL:
            phase = record.get("phase")
            out.rollcalls.setdefault(case, {})[record["rank"]] = {
                "state": record["state"], "seconds": float(record["seconds"]),
                "phase": phase if phase in PHASES else None, "wait": _wait(record.get("wait"))}
        else:
            text = record["message"] if kind == RANK_FAILURE else record["why"]
            out.failures.setdefault(case, []).append({"rank": record["rank"], "message": text})
    return out


def read(path: str) -> Records:
    try:
        data = open_sandbox_file(path, MAX_FILE_BYTES)
    except UnsafeSandboxFile as e:
        if e.errno == errno.ENOENT:
            return Records()  # the job never wrote one; its missing plan says so
        return Records(problem=f"the results file could not be read: {e}")
    return parse(data.decode("utf-8", errors="surrogateescape").splitlines())


# ---- the C++ writers (tests/harness/records.h includes them) ----

_CPP_TYPES = {"str": "const std::string&", "int": "long", "seconds": "double", "strings": "const std::vector<std::string>&",
              "values": "const std::vector<double>&", "failures": "const std::vector<std::pair<int, std::string>>&",
              "calls": "const std::vector<TrafficCall>&", "status": "bool", "object": "const std::string&",
              "flag": "bool"}


def _cpp_value(f: Field) -> str:
    """C++ that writes the member's value, from its parameter."""
    p = f.param or f.name
    return {"str": f"json_string({p})", "int": f"std::to_string({p})", "seconds": f"json_fixed({p}, {f.decimals})",
            "strings": f"json_strings({p})", "values": f"json_values({p})", "failures": f"json_failures({p})",
            "calls": f"json_calls({p})", "status": f'std::string({p} ? "\\"pass\\"" : "\\"fail\\"")',
            "object": p}[f.kind]


def _cpp_writer(function: str, event: Optional[str], fields: Tuple[Field, ...], open_last: bool = False) -> str:
    params = ", ".join(f"{_CPP_TYPES[f.kind]} {f.param or f.name}" + (f" = {f.default or 'false'}"
                                                                         if not f.required else "")
                       for f in fields)
    parts, first = [], True
    if event is not None:
        parts.append(f'"{{\\"event\\":\\"{event}\\""')
        first = False
    else:
        parts.append('"{"')
    body = "  std::string out = " + parts[0] + ";\n"
    for f in fields:
        key = ("" if first else ",") + f'\\"{f.name}\\":'
        first = False
        if f.kind == "flag":
            body += f'  if ({f.param or f.name}) out += "{key}\\"{f.value}\\"";\n'
        elif f.kind == "object":
            body += f'  if (!{f.param or f.name}.empty()) out += "{key}" + {_cpp_value(f)};\n'
        else:
            body += f'  out += "{key}" + {_cpp_value(f)};\n'
    if open_last:
        return f"inline std::string {function}({params}) {{\n{body}  return out;\n}}\n"
    return f"inline std::string {function}({params}) {{\n{body}  return out + \"}}\";\n}}\n"


def _camel(code: str) -> str:
    """off_other_rank -> OffOtherRank."""
    return "".join(w.capitalize() for w in code.split("_"))


def cpp_text() -> str:
    writers = [_cpp_writer(kind, kind, fields) for kind, fields in RECORDS.items() if kind != ABORT]
    # An abort record is written from a signal handler: its text to the
    # last member's opening quote before the case starts, then the words
    # (without quotes, backslashes or control characters) and kAbortSuffix.
    *head, why = RECORDS[ABORT]
    prefix = _cpp_writer("abort_prefix", ABORT, tuple(head), open_last=True).replace(
        "  return out;", f'  return out + ",\\"{why.name}\\":\\"";')
    return f"""// Generated from kit/records.py when CMake configures; edit kit/records.py, not this file.
// The record writers of tests/harness/records.h: one function per record, its
// parameters in the order of the record's members.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace records {{

struct TrafficCall {{
  std::string op;
  long count;
  int ranks;
  long times;
}};

// The pieces (records.cpp).
std::string json_string(const std::string& text);  // a JSON string literal, quotes included, of any bytes
std::string json_fixed(double value, int decimals);
std::string json_strings(const std::vector<std::string>& texts);
std::string json_values(const std::vector<double>& values);  // null for a value JSON can't hold
std::string json_failures(const std::vector<std::pair<int, std::string>>& failures);
std::string json_calls(const std::vector<TrafficCall>& calls);

{chr(10).join(writers)}
// A roll-call's "wait" object.
{_cpp_writer("rollcall_wait", None, WAIT)}
{prefix}inline constexpr const char* kAbortSuffix = "\\"}}\\n";

// What a plan's syscall_filter may say (FILTER_STATES).
{chr(10).join(f'inline constexpr const char* kFilter{_camel(code)} = "{code}";' for code in FILTER_STATES)}

}}  // namespace records
"""


def main(argv: List[str]) -> int:
    from kit.build_lists import header_main
    return header_main(argv, cpp_text, "the record writers")


if __name__ == "__main__":
    import sys
    sys.exit(main(sys.argv[1:]))
