"""A student file sees only the public headers, framework/include/: with
the flags kit/recipe.py reads from the build (the ones `make test`,
`make handin` and the grader compile with), an #include of one of the kit's
internal headers is "No such file or directory", and the reference, which
includes only public headers, compiles cleanly.

  /usr/bin/python3 -m pytest grader/tests/test_public_headers.py -q      (after `make build`)
"""
import os
import re

import pytest

from conftest import BUILD, KIT
from kit.build import compile_one
from kit import parts as table
from kit.paths import FRAMEWORK_DIR, PUBLIC_HEADERS_DIR
from kit.recipe import recipe

# Internal headers a student might reach for: the heap counter, the
# communicator's runtime, the wrappers around student functions.
INTERNAL = ["heap_watch.h", "comm_runtime.h", "student_calls.h"]


@pytest.fixture(scope="module")
def how():
    # No object cache: every compile here runs the compiler.
    return dict(recipe(BUILD), cache_dir=None)


def test_the_only_kit_directory_on_the_include_path_is_the_public_one(how):
    flags = how["compile_flags"]
    dirs = [os.path.realpath(f[2:]) for f in flags if f.startswith("-I")]
    assert dirs == [os.path.realpath(PUBLIC_HEADERS_DIR)], flags
    # The system dirs (Eigen's, MPI's) are none of the kit's.
    system = [os.path.realpath(flags[i + 1]) for i, f in enumerate(flags[:-1]) if f == "-isystem"]
    kit = os.path.realpath(KIT) + os.sep
    assert not [d for d in system if (d + os.sep).startswith(kit)], flags


def test_every_header_a_student_file_includes_is_public():
    """The closure: what student/ and reference/ include, and what those include, is in framework/include/."""
    quoted = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
    seen, todo = set(), []
    for impl in ("student", "reference"):
        for name in table.IMPL_FILES:
            path = os.path.join(KIT, impl, name)
            if os.path.exists(path):
                with open(path) as f:
                    todo += quoted.findall(f.read())
    while todo:
        header = todo.pop()
        if header in seen:
            continue
        seen.add(header)
        path = os.path.join(PUBLIC_HEADERS_DIR, header)
        assert os.path.isfile(path), f"{header} is included by student code but is not in framework/include/"
        with open(path) as f:
            todo += quoted.findall(f.read())
    assert {"comm.h", "tensor.h", "func_impl.h"} <= seen


@pytest.mark.parametrize("header", INTERNAL)
def test_an_internal_header_is_not_found(how, tmp_path, header):
    # A real student file with one more include, where the grader keeps it:
    # a directory of its own, outside the kit.
    with open(os.path.join(KIT, "student", table.IMPL_FILES[0])) as f:
        text = f.read()
    source = tmp_path / table.IMPL_FILES[0]
    source.write_text(f'#include "{header}"\n' + text)
    # It exists, in one of the framework's folders, just not for student code.
    assert [d for d in os.listdir(FRAMEWORK_DIR) if os.path.isfile(os.path.join(FRAMEWORK_DIR, d, header))]
    message = compile_one(how, str(source), str(tmp_path / "out.o"))
    assert message is not None, f"{header} was found from a student file"
    assert "No such file" in message and header in message, message


@pytest.mark.skipif(not os.path.isdir(os.path.join(KIT, "reference")), reason="no reference/ (a handout)")
@pytest.mark.parametrize("name", table.IMPL_FILES)
def test_the_reference_compiles_cleanly(how, tmp_path, name):
    source = os.path.join(KIT, "reference", name)
    if not os.path.exists(source):
        pytest.skip(f"no reference/{name} in this tree")
    message = compile_one(how, source, str(tmp_path / "out.o"))
    assert message is None, message
