"""What a batch's result stands on (grader/batches.py): the kit's stamps,
which say whether the cases would run as they ran, and a handin's content
key, which says whether it is the handin that was graded.
"""
import hashlib
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Dict, List, Tuple

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
