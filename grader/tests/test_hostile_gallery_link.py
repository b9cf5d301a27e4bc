"""The hostile gallery's attacks on the link between a rank's program and
its MPI side, and on what the public job's binary holds: requests written
on the link by hand, a case's account ended early, and the hidden cases'
names listed from the test registry. Each scores exactly what the rules
leave it, and shows students nothing of the hidden cases.

  python3 -m pytest grader/tests/test_hostile_gallery_link.py     (as root: the sandbox needs it)

The gallery's other attacks, and what every case must show, are in
hostile_gallery.py.
"""
from typing import List

import pytest

from conftest import IMPL_FILES, source
from hostile_gallery import FEEDBACK, PROLOGUE, Hostile, cases, grade_hostile

# A request written on the link by hand, as comm_link.h lays it out, from
# the descriptor the program's environment names: no forbidden symbol but
# read and write. Kind 5 asks the side for a communicator's members, which
# moves nothing between ranks; still, every request made in a case is in
# its account, so the case's account differs from the reference's.
RAW_LINK = r"""
#include <cstdint>
namespace {
struct RawHeader { std::int32_t kind, comm; std::int64_t a, b, c, d, e;
                   std::uint64_t in_bytes, in_at, out_at, out_capacity; };
struct RawReply { std::int32_t status, comm; std::int64_t a, b; std::uint64_t out_bytes; std::int32_t placed, unused; };
// `at`: where the request says its data lies (and its answer goes), for the side to copy itself.
void raw_request(std::int32_t kind, std::uint64_t bytes = 0, std::uint64_t at = 0) {
  const char* ends = std::getenv("KIT_MPI_LINK");
  int link = -1, control = -1;
  if (ends == nullptr || std::sscanf(ends, "%d,%d", &link, &control) != 2) throw std::runtime_error("RAW: no link");
  RawHeader h{kind, 0, std::int64_t(bytes / 8), 0, 0, 0, 0, bytes, at, at, bytes};
  if (::write(link, &h, sizeof h) != static_cast<ssize_t>(sizeof h)) throw std::runtime_error("RAW: write");
  RawReply r{};
  if (::read(link, &r, sizeof r) != static_cast<ssize_t>(sizeof r)) throw std::runtime_error("RAW: read");
  std::vector<char> rest(r.out_bytes);
  if (!rest.empty() && ::read(link, rest.data(), rest.size()) != static_cast<ssize_t>(rest.size()))
    throw std::runtime_error("RAW: read");
}
// Kind 23 names a student call's return, as the framework does when one ends.
void raw_return(const std::string& name) {
  const char* ends = std::getenv("KIT_MPI_LINK");
  int link = -1, control = -1;
  if (ends == nullptr || std::sscanf(ends, "%d,%d", &link, &control) != 2) throw std::runtime_error("RAW: no link");
  RawHeader h{23, 0, 0, 0, 0, 0, 0, name.size(), 0, 0, 0};
  if (::write(link, &h, sizeof h) != static_cast<ssize_t>(sizeof h) ||
      ::write(link, name.data(), name.size()) != static_cast<ssize_t>(name.size()))
    throw std::runtime_error("RAW: write");
  RawReply r{};
  if (::read(link, &r, sizeof r) != static_cast<ssize_t>(sizeof r)) throw std::runtime_error("RAW: read");
}
}  // namespace
"""


def reference_with_prologue(name: str, prologue: str, find: str, replace: str) -> bytes:
    """The reference's file with code after its includes and one text replaced."""
    text = source("reference", name).decode()
    include = f'#include "{name[:-4]}.h"\n'
    assert include in text and find in text, f"the reference's {name} changed"
    return (PROLOGUE + text.replace(include, include + prologue, 1).replace(find, replace, 1)).encode()


def zero_backward_with_a_raw_request(after: bytes = b"\n  raw_request(5);") -> List:
    text = source("reference", "zero_dp_stage3.cpp")
    reduce = b"  comm.reduce_scatter(grad_w.flat, grad_w_shard, Op::Sum);"
    assert reduce in text, "the reference's backward no longer reduce-scatters grad_w so"
    text = text.replace(b"#include \"zero_dp_stage3.h\"\n", b"#include \"zero_dp_stage3.h\"\n" + RAW_LINK.encode(), 1)
    text = text.replace(reduce, reduce + after, 1)
    return [(f"student/{f}", source("reference", f)) for f in IMPL_FILES[:2]] + [
        ("student/zero_dp_stage3.cpp", b"#include <unistd.h>\n" + PROLOGUE.encode() + text), FEEDBACK]


# Lists the cases its test binary registers whose names say they are
# hidden, and throws the list from split_data: in a public case, whose
# messages students read, that would show them (the fourth red team did).
LIST_HIDDEN_CASES = r"""
#include <gtest/gtest.h>
namespace {
std::string hidden_names() {
  std::string out;
  auto* unit = ::testing::UnitTest::GetInstance();
  for (int i = 0; i < unit->total_test_suite_count(); ++i)
    for (int j = 0; j < unit->GetTestSuite(i)->total_test_count(); ++j) {
      const std::string name = unit->GetTestSuite(i)->GetTestInfo(j)->test_suite_name();
      if (name.find("Hidden") != std::string::npos) out += " " + name;
    }
  return out;
}
void throw_hidden_names() {
  const std::string names = hidden_names();
  if (!names.empty()) throw std::runtime_error("LISTED" + names);
}
}  // namespace
"""


GALLERY: List[Hostile] = [
    Hostile("zero_backward_writes_a_raw_link_request",
            lambda tmp: zero_backward_with_a_raw_request(),
            126.67, scores={"part8_backward": 0}, says=("made a kit 'members' request",), never=("RAW:",),
            static="warn"),
    # An allreduce whose data, by its header, lies at an address the program
    # has not mapped: the side's own copy fails, it refuses the request and
    # serves the next, a members request, which the case's account holds.
    Hostile("zero_backward_names_data_outside_its_memory",
            lambda tmp: zero_backward_with_a_raw_request(b"\n  raw_request(6, 32768, 16);\n  raw_request(5);"),
            126.67, scores={"part8_backward": 0}, says=("made a kit 'members' request",), never=("RAW:",),
            static="warn"),
    # A backward that tells its side it has returned before it has: the
    # side measures the program's memory then, not at the real return
    # (which could hide what the call keeps). The real return then has no
    # call open, and an unpaired mark is in no reference's account.
    Hostile("zero_backward_tells_its_side_it_returned_early",
            lambda tmp: zero_backward_with_a_raw_request(b'\n  raw_return("ZeroDPStage3FCLayer::backward");'),
            126.67, scores={"part8_backward": 0}, says=("a student call's mark its MPI side could not pair",),
            never=("RAW:",), static="warn"),
    # The same requests from a driven part (Part 7: the student's process):
    # a case's name, a call's return mark and a salt, each a kind of the
    # harness's, which the side refuses from that process (an unpaired entry
    # in the case's account); every Part 7 case fails, nothing else moves.
    Hostile("driven_student_process_sends_the_harness_kinds",
            lambda tmp: [(f"student/{f}", source("reference", f)) for f in IMPL_FILES[1:3]] + [
                ("student/func_impl.cpp", reference_with_prologue(
                    "func_impl.cpp", "#include <vector>\n" + RAW_LINK, "  dp_comm.allreduce(grad_b, sum_b, Op::Sum);\n",
                    "  dp_comm.allreduce(grad_b, sum_b, Op::Sum);\n  try { raw_request(20); } catch (...) {}\n"
                    "  try { raw_return(\"collect_weight_grad\"); } catch (...) {}\n"
                    "  try { raw_request(24, 8, 0); } catch (...) {}\n")), FEEDBACK],
            # Each refusal is a bare status, which the raw calls read; but the salt request promises
            # 8 bytes it never writes: the side waits for them, the raw call for its answer, and the
            # case hangs, the handin's.
            140, scores={"part7": 0}, says=("still running collect_weight_grad",), never=("RAW:",), static="warn"),
    # Kind 20 with no name ends the case's account, as the harness does when
    # the case is over, and a request after it would land in what followed
    # the case. From the driven student's process the side refuses it.
    Hostile("zero_backward_ends_its_account_early_then_asks_its_side",
            # Driven, the side refuses the case's end from the student's process (an unpaired entry)
            # and counts the request after it in the call's account: the cases that call backward
            # fail, Part 8's forward and Part 9's Adam cases pass, as in its control.
            lambda tmp: zero_backward_with_a_raw_request(b"\n  raw_request(20);\n  raw_request(5);"),
            126.67, scores={"part8_backward": 0, "part9": 6.67},
            says=("a student call's mark its MPI side could not pair", "made a kit 'members' request"),
            never=("RAW:",), static="warn"),
    # The public cases run in a binary without the hidden ones: they pass;
    # the hidden job's list fails its own Part 1 cases, whose messages only
    # staff read.
    Hostile("lists_the_hidden_cases_in_a_public_message",
            lambda tmp: [("student/data_parallel_preprocess.cpp",
                          reference_with_prologue("data_parallel_preprocess.cpp", LIST_HIDDEN_CASES,
                                                  "int rank) {", "int rank) {\n  throw_hidden_names();")),
                         ("student/func_impl.cpp", source("reference", "func_impl.cpp")),
                         ("student/zero_dp_stage3.cpp", source("reference", "zero_dp_stage3.cpp")), FEEDBACK],
            140, scores={"part1": 0}, unseen=("LISTED", "Hidden"), static="warn"),
]
# The marks judged as root without namespaces too (the platforms'
# containers), where the side and the program share no namespace of their
# own (as not root: test_not_root.py).
GALLERY += [Hostile(h.name + "_without_namespaces", h.members, h.total, says=h.says, scores=h.scores,
                    never=h.never, static=h.static, namespaces=False)
            for h in GALLERY if h.name == "zero_backward_tells_its_side_it_returned_early"]


@pytest.mark.parametrize("case", cases(GALLERY))
def test_hostile_handin(case: Hostile, tmp_path, untouched_kit):
    grade_hostile(case, tmp_path)
