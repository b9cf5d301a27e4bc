"""Checks that every C++ function declaration in handout/README.md is, word
for word (comments and spacing aside), a declaration in framework/*.h, so the
handout cannot drift from the headers. Also checks that every `make TARGET`
the handout names is a target of the Makefile, and that every part of the
table has its section. Run by CTest (framework/handout).

  python3 -m kit check-handout
"""
import os
import re
from typing import List

from kit import parts as table
from kit.paths import FRAMEWORK_DIR, KIT_DIR as KIT
DECL = re.compile(r"((?:static\s+|explicit\s+)?[\w:<>,\s\*&]+?\b(\w+)\s*\(([^;{}]*)\)\s*(?:const\s*)?);")


def normalize(code: str) -> str:
    code = re.sub(r"//[^\n]*", "", code)
    code = re.sub(r"\s+", " ", code)
    return re.sub(r"\s*([(),&*<>])\s*", r"\1", code).strip()


def declarations(code: str):
    found = {}
    for statement in normalize(code).split(";"):
        statement = statement.strip()
        m = re.match(r"^(?:.*[{}:]\s*)?((?:static |explicit )?[\w:<>,\*&]+(?: [\w:<>,\*&]+)*?[ *&>]\w+\(.*\)(?:const)?)$",
                     statement)
        if m and "(" in m.group(1):
            decl = m.group(1).strip()
            name = re.search(r"(\w+)\(", decl).group(1)
            if name not in ("if", "for", "while", "return"):
                found.setdefault(name, []).append(decl)
    return found


def main(argv: List[str]) -> int:
    headers = ""
    for name in sorted(os.listdir(FRAMEWORK_DIR)):
        if name.endswith(".h"):
            with open(os.path.join(FRAMEWORK_DIR, name)) as f:
                headers += f.read() + "\n"
    header_decls = declarations(headers)
    with open(os.path.join(KIT, "handout", "README.md")) as f:
        handout = f.read()
    problems, checked = [], 0
    for block in re.findall(r"```cpp\n(.*?)```", handout, re.S):
        for name, decls in declarations(block).items():
            for decl in decls:
                checked += 1
                if decl not in header_decls.get(name, []):
                    problems.append(f"handout declares `{decl}`; the headers have: {header_decls.get(name, ['nothing'])}")
    with open(os.path.join(KIT, "Makefile")) as f:
        makefile = f.read()
    targets = set(re.findall(r"^([\w-]+):", makefile, re.M)) | {f"test-{key}" for key in table.make_keys()}
    commands = re.findall(r"`make ([a-z][\w-]*)", handout)
    for block in re.findall(r"```sh\n(.*?)```", handout, re.S):
        commands += re.findall(r"^\s*make ([a-z][\w-]*)", block, re.M)
    for target in sorted(set(commands)):
        checked += 1
        if target not in targets:
            problems.append(f"handout names `make {target}`, which the Makefile does not have")
    # Each part's section, and the points its heading promises (a copy of the table's).
    for section in dict.fromkeys(p.handout for p in table.PARTS):
        checked += 1
        points = sum(p.points for p in table.PARTS if p.handout == section)
        heading = re.search(rf"^#+ {re.escape(section)}\b.*$", handout, re.M)
        promised = re.search(r"\(([\d +]+) points\)", heading.group()) if heading else None
        if not heading:
            problems.append(f"the handout has no section headed '{section}'")
        elif not promised or sum(int(n) for n in promised.group(1).split("+")) != points:
            problems.append(f"the handout's heading '{heading.group()}' should promise {points} points (kit/parts.py)")
    for p in problems:
        print(p)
    print(f"{checked - len(problems)} passed, {len(problems)} failed")
    return 1 if problems or checked < 20 else 0

