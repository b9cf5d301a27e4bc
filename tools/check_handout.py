#!/usr/bin/env python3
"""Checks that every C++ function declaration in handout/README.md is, word
for word (comments and spacing aside), a declaration in framework/*.h, so the
handout cannot drift from the headers. Also checks that every `make TARGET`
the handout names is a target of the Makefile. Run by CTest (framework/handout).
"""
import os
import re
import sys

KIT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
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


def main() -> int:
    headers = ""
    for name in sorted(os.listdir(os.path.join(KIT, "framework"))):
        if name.endswith(".h"):
            with open(os.path.join(KIT, "framework", name)) as f:
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
    targets = set(re.findall(r"^([\w-]+):", makefile, re.M)) | {f"test-part{n}" for n in range(1, 10)}
    commands = re.findall(r"`make ([a-z][\w-]*)", handout)
    for block in re.findall(r"```sh\n(.*?)```", handout, re.S):
        commands += re.findall(r"^\s*make ([a-z][\w-]*)", block, re.M)
    for target in sorted(set(commands)):
        checked += 1
        if target not in targets:
            problems.append(f"handout names `make {target}`, which the Makefile does not have")
    for p in problems:
        print(p)
    print(f"{checked - len(problems)} passed, {len(problems)} failed")
    return 1 if problems or checked < 20 else 0


if __name__ == "__main__":
    sys.exit(main())
