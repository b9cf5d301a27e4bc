"""The hostile gallery's hunts for the hidden cases' secrets: handins that
look for the salt of the hidden inputs, or carry a hidden input out to
what a student reads. Each scores what its honest parts earn, and no
output holds what it found.

  python3 -m pytest grader/tests/test_hostile_gallery_secrets.py     (as root: the sandbox needs it)

The gallery's other attacks, and what every case must show, are in
hostile_gallery.py; all its files share one check that the kit is left
untouched (conftest.py, untouched_kit).
"""
import os
from typing import List

import pytest

from conftest import IMPL_FILES, KIT, source
from kit import judge
from hostile_gallery import PROLOGUE, Hostile, cases, grade_hostile

# A static object that, before the system-call filter, looks for the hidden
# cases' salt wherever a job could leave it: its own command line and
# environment, its ancestors' (the MPI side's, mpirun's, ...), and the job's
# folder, the salt pipe included. Found (as digits or as its 8 bytes), it
# spoils split_data, so a found salt costs Part 1 its hidden cases. The side
# alone holds the salt, so nothing is found.
HUNT_FOR_THE_SALT = r"""
#include <fcntl.h>
#include <iterator>
namespace {
std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}
std::string hunted() {
  std::string all;
  for (long pid = getpid(); pid > 1;) {
    const std::string at = "/proc/" + std::to_string(pid);
    all += read_all(at + "/cmdline") + read_all(at + "/environ");
    std::istringstream stat(read_all(at + "/stat"));
    std::string field;
    for (int i = 0; i < 4 && (stat >> field); ++i) {
    }
    pid = std::atol(field.c_str());
  }
  const std::string args = read_all("/proc/self/cmdline");
  for (size_t at = 0; at < args.size(); at += std::strlen(args.c_str() + at) + 1) {
    const std::string arg(args.c_str() + at);
    if (arg.rfind("--results=", 0) != 0) continue;
    const int fd = ::open((arg.substr(10) + "/salt").c_str(), O_RDONLY | O_NONBLOCK);
    char bytes[64];
    for (ssize_t n; fd >= 0 && (n = ::read(fd, bytes, sizeof bytes)) > 0;) all.append(bytes, n);
  }
  return all;
}
const bool g_found = [] {
  const std::string all = hunted();
  const unsigned long long salt = SALTULL;
  return all.find(std::to_string(salt)) != std::string::npos ||
         all.find(std::string(reinterpret_cast<const char*>(&salt), sizeof salt)) != std::string::npos;
}();
}  // namespace
"""


# The fifth red team's leak: split_data, on world rank 0, writes a second
# plan record through its record channel (stdio's FILE pointed at fd 3 for a
# moment), with a hidden input in the plan's syscall_filter text, which the
# report used to quote in its note. A plan now says one of the kit's codes,
# and a job with a second plan fails every case; no note quotes it.
PLAN_WITH_A_NOTE = r"""
#include <cstdio>
namespace {
void tell(const Matrix& x) {
  if (Communicator::world().rank() != 0) return;
  std::string s = "off: LEAKED rows=" + std::to_string(x.rows()) + " x=";
  char buf[64];
  for (Eigen::Index i = 0; i < x.size() && i < 4; ++i) {
    std::snprintf(buf, sizeof buf, "%.17g,", x.data()[i]);
    s += buf;
  }
  for (const char* state : {s.c_str(), "off_asked"}) {
    const std::string line = std::string("{\"event\":\"plan\",\"ranks\":1,\"cases\":[],\"syscall_filter\":\"") +
                             state + "\"}\n";
    FILE* f = stderr;
    const int old = f->_fileno;
    f->_fileno = 3;
    std::fputs(line.c_str(), f);
    std::fflush(f);
    f->_fileno = old;
  }
}
}  // namespace
"""


def plan_with_a_note(tmp: str) -> List:
    text = source("reference", "data_parallel_preprocess.cpp")
    head = b"                                     int rank) {\n"
    spoiled = text.replace(head, head + b"  if (rank == 0) tell(x_train);\n", 1).replace(
        b"namespace dtrain {\n", b"namespace dtrain {\n" + PLAN_WITH_A_NOTE.encode(), 1)
    return [("student/data_parallel_preprocess.cpp", spoiled)] + [
        (f"student/{f}", source("reference", f)) for f in IMPL_FILES if f != "data_parallel_preprocess.cpp"]


def salt_hunter(tmp: str) -> List:
    salt = next(line.split()[1] for line in open(os.path.join(KIT, judge.SALT)) if line.startswith("salt "))
    spoiled = source("reference", "data_parallel_preprocess.cpp").replace(
        b"                                     int rank) {\n",
        b"                                     int rank) {\n  if (g_found) return {x_train, y_train};\n", 1)
    return [("student/data_parallel_preprocess.cpp",
             PROLOGUE.encode() + HUNT_FOR_THE_SALT.replace("SALT", salt).encode() + spoiled)] + [
        (f"student/{f}", source("reference", f)) for f in IMPL_FILES if f != "data_parallel_preprocess.cpp"]


GALLERY = [
    Hostile("static_constructor_hunts_for_the_hidden_salt", salt_hunter, 150, scores={"part1": 10}, static="warn"),
    # Part 1 runs in the driven parts' student process, which is given no record channel: the
    # note has nowhere to go (in the process that has one, it was no record: 0).
    Hostile("hidden_inputs_written_into_a_second_plans_note", plan_with_a_note, 150,
            never=("LEAKED", "off: the job was run without it", "integrity:")),
]


@pytest.mark.parametrize("case", cases(GALLERY))
def test_hostile_handin(case: Hostile, tmp_path, untouched_kit):
    grade_hostile(case, tmp_path)
