"""The link's messages, defined once in kit/link.py: the header it writes
compiles, fits the link's fixed room, and the link's structs hold no field
that is not named there.
  /usr/bin/python3 -m pytest staff/tests/test_link.py -q -p no:cacheprovider
"""
import os
import re
import shutil
import subprocess

import pytest

from kit import link

KIT_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

PROBE = """
#include <cstddef>
#include <cstdio>
#include "link_messages.h"
using namespace dtrain::link;
int main() {
  static_assert(sizeof(Asked) == 40 && sizeof(Answered) == 16);
  std::printf("%d %d %d\\n", static_cast<int>(Kind::Hello), static_cast<int>(Kind::Resume), answered(Kind::Enter));
  std::printf("%d %d %d %d %d %d\\n", harness_only(Kind::Case), harness_only(Kind::Allreduce), program_only(Kind::Serve),
              program_only(Kind::Call), program_only(Kind::Upcall), harness_only(Kind::Resume));
  Asked a{};
  a.sendrecv = {1, 2, 3, 4, 5};
  std::printf("%lld %lld\\n", static_cast<long long>(a.room[2]), static_cast<long long>(a.room[4]));
}
"""


def test_the_header_compiles_and_numbers_the_kinds_in_order(tmp_path):
    compiler = shutil.which("c++") or shutil.which("g++")
    if compiler is None:
        pytest.fail("no C++ compiler: the kit's build needs one")
    (tmp_path / "link_messages.h").write_text(link.cpp_text())
    (tmp_path / "probe.cpp").write_text(PROBE)
    subprocess.run([compiler, "-std=c++17", "-Wall", "-Wextra", "-Werror", "-I", str(tmp_path), "-o",
                    str(tmp_path / "probe"), str(tmp_path / "probe.cpp")], check=True)
    out = subprocess.run([str(tmp_path / "probe")], capture_output=True, text=True, check=True).stdout.split()
    # Hello is 1, Resume the last kind; an Enter gets no answer; a case and a
    # Resume are the harness's alone, a Serve and an Upcall the student's
    # process's alone, an allreduce either's; Sendrecv's fields lie in the order named.
    assert out == ["1", str(len(link.KINDS)), "0", "1", "0", "1", "0", "1", "1", "3", "5"]


def test_every_kind_fits_and_shared_fields_agree():
    for k in link.KINDS:
        assert len(k.ask) <= link.ASK_ROOM and len(k.answer) <= link.ANSWER_ROOM, k.name
    text = link.cpp_text()
    assert "union Asked" in text and "ask::Collective collective;" in text and "answer::Made made;" in text


def test_the_link_names_its_fields_nowhere_else():
    """comm_link.h's Header and Reply hold the generated unions, not fields by position."""
    with open(os.path.join(KIT_DIR, "framework", "comm", "comm_link.h")) as f:
        source = f.read()
    assert "Asked ask;" in source and "Answered answer;" in source
    assert not re.search(r"std::int64_t\s+a\s*,\s*b", source), "positional fields are back in comm_link.h"
    assert "enum class Kind" not in source, "the kinds are kit/link.py's"
