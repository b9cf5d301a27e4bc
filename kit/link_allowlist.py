"""The link check's allowlist (kit/link_allowlist.txt, and
kit/allowlist/KEY.txt of each extension part held): what a compiled student
file may reference, as patterns over demangled names, by group; and the
names themselves, demangled by c++filt and cut to the entity a pattern is
matched against.
"""
import os
import re
import subprocess
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Tuple

from kit import parts as table
from kit.paths import KIT_DIR

ALLOWLIST_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "link_allowlist.txt")


@dataclass
class Allowlist:
    """Patterns over symbols, by group. A pattern is a demangled entity (the
    return type of a function template dropped) where `*` matches anything;
    a pattern written `re:...` is a regular expression matched whole."""
    groups: List[Tuple[str, List[str]]]
    _compiled: List[Tuple[str, "re.Pattern"]] = field(default_factory=list)

    def __post_init__(self):
        for group, patterns in self.groups:
            for p in patterns:
                text = p[3:] if p.startswith("re:") else ".*".join(re.escape(part) for part in p.split("*"))
                self._compiled.append((group, re.compile(text + r"\Z")))

    def group_of(self, entity: str) -> Optional[str]:
        return next((g for g, rx in self._compiled if rx.match(entity)), None)

    def summary(self) -> str:
        return "; ".join(g for g, _ in self.groups)


def allowlist_paths() -> List[str]:
    """The core list, then the lines of each extension part this copy holds
    (kit/allowlist/KEY.txt, named by its row of kit/part_table.py)."""
    return [ALLOWLIST_PATH] + [os.path.join(KIT_DIR, p.adds.allowlist) for p in table.built_parts() if p.adds.allowlist]


def load_allowlist(paths: Optional[List[str]] = None) -> Allowlist:
    """The groups of every file of `paths` (default: allowlist_paths()); a
    group a later file names again gains its patterns."""
    groups: Dict[str, List[str]] = {}
    for path in paths or allowlist_paths():
        group = None
        with open(path) as f:
            for raw in f:
                line = raw.split(" #", 1)[0].strip() if not raw.lstrip().startswith("re:") else raw.strip()
                if not line or line.startswith("#"):
                    continue
                if line.startswith("[") and line.endswith("]"):
                    group = groups.setdefault(line[1:-1], [])
                elif group is not None:
                    group.append(line)
                else:
                    raise ValueError(f"{path}: a pattern before the first [group]: {line}")
    return Allowlist(list(groups.items()))


# ---- names ----

# Longest first: "operator>><char>" is operator>> and its template arguments.
OPERATORS = sorted((">>= <<= <=> ->* << >> <= >= == != && || ++ -- += -= *= /= %= &= |= ^= -> "
                    "+ - * / % ^ & | ~ ! = < > ,").split(), key=len, reverse=True)
SPECIAL_PREFIXES = ("typeinfo name for ", "typeinfo for ", "vtable for ", "VTT for ", "construction vtable for ",
                    "guard variable for ", "TLS init function for ", "TLS wrapper function for ",
                    "non-virtual thunk to ", "virtual thunk to ", "covariant return thunk to ",
                    "reference temporary #0 for ")


def entity(demangled: str) -> str:
    """The demangled name without a function template's leading return type:
    what a pattern is matched against ("std::basic_ostream<...>& std::operator<< <...>(...)"
    becomes "std::operator<< <...>(...)")."""
    prefix = next((p for p in SPECIAL_PREFIXES if demangled.startswith(p)), "")
    text = demangled[len(prefix):]
    depth, last_space, i = 0, -1, 0
    while i < len(text):
        if text.startswith("operator", i) and (i == 0 or text[i - 1] in ": "):
            j = i + len("operator")
            if text.startswith(("()", "[]"), j):
                j += 2
            elif j < len(text) and text[j] == " ":   # new, delete, conversions: up to the parameters
                while j < len(text) and text[j] not in "(<":
                    j += 1
            else:
                j += next((len(o) for o in OPERATORS if text.startswith(o, j)), 0)
            if text.startswith(" <", j):
                j += 1
            i = j
            continue
        c = text[i]
        if c in "<{[":
            depth += 1
        elif c in ">}]":
            depth -= 1
        elif c == " " and depth == 0:
            last_space = i
        elif c == "(" and depth == 0:
            break
        i += 1
    if last_space >= 0:  # only a function template's return type stands before its name
        text = text[last_space + 1:]
    return prefix + text


def demangle(names: Iterable[str]) -> Dict[str, str]:
    names = list(dict.fromkeys(names))
    if not names:
        return {}
    try:
        proc = subprocess.run(["c++filt"], input="\n".join(names) + "\n", stdout=subprocess.PIPE, text=True,
                              timeout=60)
        out = proc.stdout.split("\n")
        if len(out) >= len(names):
            return dict(zip(names, out))
    except (OSError, subprocess.TimeoutExpired):
        pass
    return {n: n for n in names}
