"""Checks that every C++ function declaration in handout/README.md is, word
for word (comments and spacing aside), a declaration in framework/include/*.h (the
headers student files see), so the
handout cannot drift from the headers. Also checks that every `make TARGET`
the handout or the Makefile's own notes name is a target of the Makefile as
students get it (without the staff's make/staff.mk), that every part of the table
has its section, that what it says of parts and points, where to submit
and what the report shows agrees with the table and the course
(kit/handout_text.py makes it: in the kit's own
template it checks the text as made, in a cut the text itself), and that
the handout is self-contained: every README section and README file a
shipped file points to is in the handout. Run by CTest (framework/handout),
and by staff/dist.py in the cut handout.

  python3 -m kit check-handout
"""
import os
import re
from typing import List, Set, Tuple

# What the student handout holds: these folders whole and these files (the
# handout's README becomes its top-level README.md). staff/dist.py cuts it.
SHIPPED = ["CMakeLists.txt", "Makefile", "setup.sh", "feedback.txt", "course.toml", ".gitignore",
           "Containerfile", ".containerignore", ".dockerignore", ".devcontainer",  # the dev container
           "framework", "student", "tests", "programs", "kit", "tools", "make", "handout/README.md"]
# The staff's make targets (kit/build_lists.py) are no part of a handout:
# the Makefile includes them only where the copy holds staff/.
STAFF_MAKEFILE = "make/staff.mk"


def staff_targets(kit: str) -> Set[str]:
    """The make targets of the staff's fragment (make/staff.mk)."""
    with open(os.path.join(kit, STAFF_MAKEFILE)) as f:
        return set(re.findall(r"^([\w-]+):", f.read(), re.M))


def files_under(root: str, entries: List[str], missing=None) -> List[str]:
    """The files of `entries` (folders whole, files as they are) under `root`,
    relative to it; `missing(entry)` is called for an entry that isn't there."""
    out = []
    for entry in entries:
        full = os.path.join(root, entry)
        if os.path.isdir(full):
            for base, dirs, names in os.walk(full):
                dirs[:] = sorted(d for d in dirs if d != "__pycache__")
                out += [os.path.relpath(os.path.join(base, n), root) for n in sorted(names) if not n.endswith(".pyc")]
        elif os.path.isfile(full):
            out.append(entry)
        elif missing:
            missing(entry)
    return out


def shipped_files(root: str) -> List[str]:
    """The handout's files under `root` (a kit or an unpacked handout), relative to it."""
    return [f for f in files_under(root, SHIPPED) if f != STAFF_MAKEFILE]


# "README: Section", "README, Section", README "Section", README ("Section"),
# README's recipe "Section": a pointer into a README; dir/README.md: a file.
README_SECTION = re.compile(r'README\b(?:\.md)?[^"\n:,]{0,30}?(?:[:,]\s*([A-Z][^.;)"\n]*)|"([^"\n]+)")')
README_FILE = re.compile(r"\b([\w.-]+(?:/[\w.-]+)*/README\.md)\b")
# The kit's or the grader's README: neither is the handout's.
OTHER_README = re.compile(r"\b(?:kit|grader|staff)'s README\b")


def readme_references(root: str, handout: str) -> Tuple[List[str], int]:
    """Every README section or README file a shipped file names must be in
    the handout: its README's headings and bold paragraph leads."""
    sections = [s.strip().lower() for s in re.findall(r"^#+\s+(.+)$", handout, re.M)]
    sections += [s.strip().rstrip(".").lower() for s in re.findall(r"\*\*([^*\n]+)\*\*", handout)]
    files = shipped_files(root)
    problems, checked = [], 0
    for name in files:
        if name == "kit/check_handout.py":  # its own patterns
            continue
        try:
            with open(os.path.join(root, name), encoding="utf-8") as f:
                text = f.read()
        except (UnicodeDecodeError, OSError):
            continue
        for number, line in enumerate(text.splitlines(), 1):
            for m in README_SECTION.finditer(line):
                section = (m.group(1) or m.group(2)).strip().lower()
                checked += 1
                if not any(s.startswith(section) for s in sections):
                    problems.append(f"{name}:{number} points to README section '{section}', "
                                    "which the handout's README does not have")
            for m in OTHER_README.finditer(line):
                checked += 1
                problems.append(f"{name}:{number} points to the {m.group()}, which the handout does not hold")
            for m in README_FILE.finditer(line):
                checked += 1
                if m.group(1) not in files:
                    problems.append(f"{name}:{number} points to {m.group(1)}, which the handout does not hold")
    return problems, checked

from kit import parts as table
from kit.handout_text import HandoutError, for_the_course, render
from kit.paths import KIT_DIR as KIT, PUBLIC_HEADERS_DIR
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


def agreement(handout: str, parts) -> Tuple[List[str], int]:
    """What the handout says of `parts` (the graded ones) against the table:
    a row of the parts table each, with its points and command; the total."""
    problems, checked = [], 0
    for p in parts:
        checked += 1
        row = re.search(rf"^\| \d+ \| {re.escape(p.key)} \|.*$", handout, re.M)
        cells = [c.strip() for c in row.group().strip("|").split("|")] if row else []
        if len(cells) != 6 or cells[3] != str(p.points) or cells[5] != f"`make test-{p.key.split('_')[0]}`":
            problems.append(f"the handout's parts table should have a row for {p.key} with {p.points} points and "
                            f"`make test-{p.key.split('_')[0]}`, has {row.group() if row else 'none'}")
    total = sum(p.points for p in parts)
    said = set(re.findall(r"`total: X / (\d+) points`", handout))
    checked += 1
    if said != {str(total)}:
        problems.append(f"the handout should give the total as `total: X / {total} points`, gives "
                        f"{', '.join(sorted(said)) or 'none'}")
    return problems, checked


def main(argv: List[str]) -> int:
    headers = ""
    for name in sorted(os.listdir(PUBLIC_HEADERS_DIR)):
        if name.endswith(".h"):
            with open(os.path.join(PUBLIC_HEADERS_DIR, name)) as f:
                headers += f.read() + "\n"
    header_decls = declarations(headers)
    with open(os.path.join(KIT, "handout", "README.md")) as f:
        source = f.read()
    problems, checked = [], 0
    try:
        handout = render(for_the_course(source, table.PARTS, KIT, table.CORE_FILES), table.PARTS, table.built_parts())
    except HandoutError as e:
        problems.append(f"handout/README.md: {e}")
        handout = source
    if "staff" not in table.CONFIGURATION.holds and handout != source:  # a cut: made for its course already
        problems.append("the handout's text does not agree with the parts table and course.toml: make handout "
                        "makes it so")
    checked += 1
    found, count = agreement(handout, table.PARTS)
    problems += found
    checked += count
    for block in re.findall(r"```cpp\n(.*?)```", handout, re.S):
        for name, decls in declarations(block).items():
            for decl in decls:
                checked += 1
                if decl not in header_decls.get(name, []):
                    problems.append(f"handout declares `{decl}`; the headers have: {header_decls.get(name, ['nothing'])}")
    with open(os.path.join(KIT, "Makefile")) as f:
        makefile = f.read()
    for p in table.built_parts():  # the targets of the parts this copy holds (make/KEY.mk)
        if p.adds.make:
            with open(os.path.join(KIT, p.adds.make)) as f:
                makefile += f.read()
    targets = set(re.findall(r"^([\w-]+):", makefile, re.M)) | {f"test-{key}" for key in table.make_keys()}
    commands = re.findall(r"`make ([a-z][\w-]*)", handout)
    for block in re.findall(r"```sh\n(.*?)```", handout, re.S):
        commands += re.findall(r"^\s*make ([a-z][\w-]*)", block, re.M)
    for target in sorted(set(commands)):
        checked += 1
        if target not in targets:
            problems.append(f"handout names `make {target}`, which the students' Makefile does not have")
    # The Makefile's own list of targets, as students read it.
    for target in sorted(set(re.findall(r"^#\s+make ([a-z][\w-]*)", makefile, re.M)) - {"test-partN"}):
        checked += 1
        if target not in targets:
            problems.append(f"the students' Makefile lists `make {target}`, which it does not have")
    found, count = readme_references(KIT, handout)
    problems += found
    checked += count
    # Each part's section, and the points its heading promises (a copy of the table's).
    for section in dict.fromkeys(p.handout for p in table.PARTS):
        checked += 1
        points = sum(p.points for p in table.PARTS if p.handout == section)
        heading = re.search(rf"^#+ {re.escape(section)}\b.*$", handout, re.M)
        promised = re.search(r"\(([\d +]+) points\)", heading.group()) if heading else None
        if not heading:
            problems.append(f"the handout has no section headed '{section}'")
        elif not promised or sum(int(n) for n in promised.group(1).split("+")) != points:
            problems.append(f"the handout's heading '{heading.group()}' should promise {points} points (kit/part_table.py)")
    for p in problems:
        print(p)
    print(f"{checked - len(problems)} passed, {len(problems)} failed")
    return 1 if problems or checked < 20 else 0

