"""What a batch's result stands on (grader/batches.py): the kit's stamps,
which say whether the cases would run as they ran, and a handin's content
key, which says whether it is the handin that was graded.
"""
import hashlib
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Dict, List, Tuple

from kit import judge
from kit import parts as table
from kit.handin_reader import read_handin, unreadable_key
from kit.paths import KIT_DIR

# What the grade of a handin depends on besides the handin: these folders of
# the kit (their sources) and the build's recipe.
VERSIONED = ("framework", "tests", "kit", "grader", "student", "programs")


def kit_stamps(build: str) -> Tuple[str, str]:
    """(the kit's stamp, its sources' stamp). The kit's covers what a case's
    outcome depends on: the sources, the build's recipe and the parts
    graded. The sources' leaves the parts out, so that a result graded with
    more parts than the course now grades is known to stand (a re-score drops
    the parts; grader/rescore.py) and only a changed kit calls for a regrade."""
    digest = hashlib.sha256()
    for top in VERSIONED:
        for root, dirs, files in os.walk(os.path.join(KIT_DIR, top)):
            dirs[:] = sorted(d for d in dirs if d not in ("__pycache__", "tests"))
            for name in sorted(files):
                if name.endswith((".py", ".h", ".cpp", ".txt", ".in")) or name == "grade":
                    path = os.path.join(root, name)
                    digest.update(os.path.relpath(path, KIT_DIR).encode() + b"\0")
                    with open(path, "rb") as f:
                        digest.update(f.read())
    with open(os.path.join(build, "impl_recipe.json"), "rb") as f:
        digest.update(f.read())
    # The cases' time limits (the table's, or the course's [time_limit]):
    # the floors the machine's calibration raises (kit/calibration.py).
    digest.update(repr([(r.filter, r.case_seconds) for r in table.all_runs()]).encode())
    sources = digest.hexdigest()[:16]
    # The parts graded decide which cases run; their points do not (a re-score).
    digest.update(",".join(p.key for p in table.PARTS).encode())
    return digest.hexdigest()[:16], sources


# What a part's cases are made of, beside the kit's core: their values,
# case by case (the second word of each line of the values' files,
# kit/judge.py, names its case), their sources and the runs that select them. A change here (a hidden case
# added, make hidden-data, a part's tests) changes that part's stamp alone.
CASE_SOURCES = ("grader/hidden/", "tests/test_part", "tests/part")


def case_stamps(build: str) -> Tuple[str, Dict[str, str]]:
    """(the kit's core stamp, each part's stamp): the core covers what every
    case's outcome depends on (the sources but the parts' own cases, the
    build's recipe, the hidden inputs' salt); a part's, its cases (their
    values, its test sources, its runs and their limits). Where only some
    parts' stamps changed, only their cases need to run again."""
    digest = hashlib.sha256()
    for top in VERSIONED:
        for root, dirs, files in os.walk(os.path.join(KIT_DIR, top)):
            dirs[:] = sorted(d for d in dirs if d not in ("__pycache__", "tests"))
            for name in sorted(files):
                rel = os.path.relpath(os.path.join(root, name), KIT_DIR)
                if rel.startswith(CASE_SOURCES) or not (
                        name.endswith((".py", ".h", ".cpp", ".txt", ".in")) or name == "grade"):
                    continue
                digest.update(rel.encode() + b"\0")
                with open(os.path.join(root, name), "rb") as f:
                    digest.update(f.read())
    with open(os.path.join(build, "impl_recipe.json"), "rb") as f:
        digest.update(f.read())
    lines: Dict[str, List[bytes]] = {}
    for rel in judge.public_files() + judge.hidden_files() + [judge.BUNDLED]:
        try:
            with open(os.path.join(KIT_DIR, rel), "rb") as f:
                for line in f:
                    words = line.split()
                    if words and words[0] == b"salt":
                        digest.update(line)
                    elif len(words) > 1:
                        lines.setdefault(words[1].decode(errors="replace"), []).append(line)
        except OSError:
            continue  # a copy without the hidden values: its grader says so when it grades
    parts = {}
    for p in table.ALL_PARTS:
        mine = hashlib.sha256(repr([(r.filter, r.ranks, r.case_seconds) for r in p.runs]).encode())
        for case in sorted(c for c in lines if p.owns(c)):
            mine.update(b"".join(lines[case]))
        for rel in sorted(set(p.tests) | set(p.adds.hidden if p.adds else ())):
            try:
                with open(os.path.join(KIT_DIR, rel), "rb") as f:
                    mine.update(rel.encode() + b"\0" + f.read())
            except OSError:
                pass
        parts[p.key] = mine.hexdigest()[:16]
    return digest.hexdigest()[:16], parts


def content_key(path: str) -> str:
    """The hash of what grading reads from a handin (kit/handin_reader.py,
    in a limited child process): its accepted files by name and what it
    refused; a file that is no readable handin, by its bytes. Never raises:
    no handin stops a batch or its resumption."""
    try:
        return read_handin(path).key
    except Exception:  # noqa: BLE001 (the host's trouble starting the reader: the file's bytes still tell)
        return unreadable_key(path)


def content_keys(handins: List[str], workers: int) -> Dict[str, str]:
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        return dict(zip(handins, pool.map(content_key, handins)))
