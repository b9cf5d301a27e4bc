"""The hostile gallery's forgeries: handins that print a fake score, forge
the harness's records or the results the judge reads, write another
case's or rank's record, or forge a byte counter, each scoring exactly
what its honest parts earn.

  python3 -m pytest grader/tests/test_hostile_gallery_forgery.py     (as root: the sandbox needs it)

The gallery's other attacks, and what every case must show, are in
hostile_gallery.py; all its files share one check that the kit is left
untouched (conftest.py, untouched_kit).
"""
from typing import List

import pytest

from conftest import IMPL_FILES, source
from hostile_gallery import (FEEDBACK, HONEST_PART1, PROLOGUE, ZERO_FUNCS, Hostile, cases, func_file, grade_hostile,
                             stub_with, zero_file)

ALL_MAX = ('{"scores": {"part1": 10, "part2": 20, "part3": 15, "part4": 15, "part5": 20, "part6": 10, '
           '"part7": 10, "part8_forward": 20, "part8_backward": 20, "part9": 10}, "scoreboard": [150]}')

FAKE_SCORE_PRINT = f'std::printf("%s\\n", R"FAKE({ALL_MAX})FAKE"); std::fflush(stdout);'

FORGE_RESULTS = r"""
namespace {
// Finds the harness's results file in our own command line, then appends pass
// records for the running case (unsealed and with a made-up seal) to it and to
// every path a forger might guess, and leaves before the harness can object.
// The system-call filter refuses opening them: the records also go to every
// file and pipe this process has open, its record channel among them, so
// the judge is still what stops them.
void forge_and_leave() {
  std::ifstream cmdline("/proc/self/cmdline");
  std::string all((std::istreambuf_iterator<char>(cmdline)), std::istreambuf_iterator<char>());
  std::vector<std::string> targets = {"results.jsonl", "/tmp/kit-results.jsonl"};
  for (size_t at = 0; at < all.size(); at += std::strlen(all.c_str() + at) + 1) {
    std::string arg(all.c_str() + at);
    if (arg.rfind("--results=", 0) == 0) targets.push_back(arg.substr(10));
  }
  // The cases it may be in, from the public test files (a process that runs
  // student code links no test framework to ask: the driven parts' doesn't).
  std::string forged;
  for (const char* name : {"Part8Backward.SeedDivisibleCase", "Part8Backward.SeedPaddingCase",
                           "Part9Adam.ThreeStepsMatchUnshardedAndRecordedAdam", "Part9Adam.PaddingStaysExactlyZero",
                           "Part13Ddp1.PlanOfOneBucket", "Part13Ddp1.PlanOfBucketsFilledToTheCap"}) {
    const std::string record = std::string("{\"event\":\"result\",\"case\":\"") + name +
                               "\",\"status\":\"pass\",\"seconds\":0.1,\"failures\":[]";
    forged += record + "}\n" + record + ",\"mac\":\"" + std::string(64, 'a') + "\"}\n" +
              "{\"event\":\"plan\",\"ranks\":4,\"cases\":[\"" + name + "\"]}\n";
  }
  for (const auto& path : targets) std::ofstream(path, std::ios::app) << forged;
  for (int fd = 3; fd < 1024; ++fd) {
    struct stat st {};
    if (::fstat(fd, &st) == 0 && (S_ISREG(st.st_mode) || S_ISFIFO(st.st_mode))) {
      ssize_t ignored = ::write(fd, forged.data(), forged.size());
      (void)ignored;
    }
  }
  std::_Exit(0);
}
}  // namespace
"""

# The stubs, and on each rank's first student call a hook that finds its
# record channel among its open descriptors (no file can be opened under the
# system-call filter), tries to read it back, seek it and cut it (a channel
# is write-only and a pipe), and then, for every case compiled into the
# binary (gtest lists them, hidden ones too), writes a passing result, a plan
# without the case, and values for the labels a forger can guess, each as
# every rank; it then throws as the stub does. Nothing it writes is a
# verdict, and a record that names another rank than its channel's is none.
# The rank's record channel among its descriptors, by its name (MPI has
# pipes too), or -1: what every attack on the channel starts with.
FIND_CHANNEL = r"""
namespace {
int record_channel() {
  for (int fd = 3; fd < 1024; ++fd) {
    char name[512] = {};
    const std::string link = "/proc/self/fd/" + std::to_string(fd);
    if (::readlink(link.c_str(), name, sizeof name - 1) > 0 && std::strstr(name, "kit-records-")) return fd;
  }
  return -1;
}
}  // namespace
"""

FORGE_EVERY_PASS = FIND_CHANNEL + r"""
namespace {
void forge_every_pass() {
  static bool done = false;
  if (done) return;
  done = true;
  const int channel = record_channel();
  if (channel < 0) return;
  char back[64];
  if (::pread(channel, back, sizeof back, 0) > 0 || ::read(channel, back, sizeof back) > 0 ||
      ::ftruncate(channel, 0) == 0 || ::lseek(channel, 0, SEEK_SET) == 0)
    std::printf("FORGER: the channel could be read, cut or sought\n");
  std::vector<std::string> cases;
  const auto* unit = ::testing::UnitTest::GetInstance();
  for (int s = 0; s < unit->total_test_suite_count(); ++s) {
    const auto* suite = unit->GetTestSuite(s);
    for (int t = 0; t < suite->total_test_count(); ++t)
      cases.push_back(std::string(suite->name()) + "." + suite->GetTestInfo(t)->name());
  }
  std::ostringstream out;
  for (const auto& c : cases) {
    for (int rank = 0; rank < 8; ++rank)
      out << "{\"event\":\"value\",\"case\":\"" << c << "\",\"rank\":" << rank
          << ",\"label\":\"split_data.x#1\",\"rows\":1,\"cols\":1,\"stride\":1,\"values\":[0]}\n";
    out << "{\"event\":\"result\",\"case\":\"" << c << "\",\"status\":\"pass\",\"seconds\":0.1,\"failures\":[]}\n";
  }
  out << "{\"event\":\"plan\",\"ranks\":8,\"cases\":[]}\n";
  const std::string text = out.str();
  for (size_t at = 0; at < text.size();) {  // one record per write, as the harness writes them
    const size_t end = text.find('\n', at) + 1;
    if (::write(channel, text.data() + at, end - at) < 0) break;
    at = end;
  }
}
}  // namespace
"""

# The reference, with a hook in collect_weight_grad that, in a hidden case,
# logs the case's name and input and writes them, as its rank's failure, into
# a public case whose messages students see. Hidden cases run in jobs of
# their own, which plan no public case: the record is nobody's.
LEAK_HIDDEN_INPUTS = FIND_CHANNEL + r"""
namespace {
void leak_hidden_input(const dtrain::Matrix& grad_w) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  if (info == nullptr || std::strncmp(info->test_suite_name(), "Hidden", 6) != 0) return;
  const std::string log = std::string("HIDDEN-INPUT ") + info->test_suite_name() + "." + info->name() + " " +
                          std::to_string(grad_w.size() ? grad_w(0, 0) : 0.0);
  const int fd = record_channel();
  for (const char* open_case : {"Part7WeightGrad.SeedCaseTwoRows", "Part1DataSplit.Mp1Dp2Halves"}) {
    const std::string record = std::string("{\"event\":\"rank_failure\",\"case\":\"") + open_case +
                               "\",\"rank\":0,\"message\":\"" + log + "\"}\n";
    if (fd >= 0 && ::write(fd, record.data(), record.size()) < 0) break;
  }
}
}  // namespace
"""

# Finds the record channels in our command line, then attacks the reader: a
# line of 100,000 '[' (a recursion error in a naive JSON reader), and the
# channels' directory swapped for a FIFO (root owns it: refused).
RESULTS_PATH = FIND_CHANNEL + r"""
namespace {
std::string results_path() {
  std::ifstream cmdline("/proc/self/cmdline");
  std::string all((std::istreambuf_iterator<char>(cmdline)), std::istreambuf_iterator<char>());
  for (size_t at = 0; at < all.size(); at += std::strlen(all.c_str() + at) + 1) {
    std::string arg(all.c_str() + at);
    if (arg.rfind("--results=", 0) == 0) return arg.substr(10);
  }
  return "";
}
void break_the_reader() {
  static bool done = false;
  if (done) return;
  done = true;
  const std::string deep = std::string(100000, '[') + "\n";
  // The record channel, open already (no file opens under the filter).
  if (const int fd = record_channel(); fd >= 0 && ::write(fd, deep.data(), deep.size()) < 0) return;
  const std::string path = results_path();
  if (std::remove(path.c_str()) == 0) mkfifo(path.c_str(), 0666);
}
}  // namespace
"""

# Part 11: naive_allreduce as the reference; ring_allreduce sums by passing
# each rank's whole buffer round the ring (n-1 steps), then n-1 more steps of
# whole buffers, so its messages and their ends are a ring's but its bytes
# are n times a ring's. forge_counter finds the Communicator's byte counter
# by its value and writes the ring's count there.
WHOLE_BUFFER_RING = r"""
#include <cstdint>
#include <cstring>
#include "ring_collectives.h"
namespace dtrain {
namespace {
void forge_counter(Communicator& comm, std::uint64_t before, long length) {
  const std::uint64_t now = comm.bytes_transferred(), n = comm.size();
  const std::uint64_t ring = before + 2 * (n - 1) * static_cast<std::uint64_t>(length / n) * sizeof(double);
  auto* bytes = reinterpret_cast<unsigned char*>(&comm);
  for (size_t at = 0; at + sizeof now <= sizeof comm; at += alignof(std::uint64_t)) {
    std::uint64_t v;
    std::memcpy(&v, bytes + at, sizeof v);
    if (v == now) std::memcpy(bytes + at, &ring, sizeof ring);
  }
}
}  // namespace
NAIVE
Vector ring_allreduce(const Vector& src, Communicator& comm) {
  const int n = comm.size(), r = comm.rank();
  const std::uint64_t before = comm.bytes_transferred();
  Vector sum = src, carry = src, incoming(src.size());
  for (int s = 0; s < n - 1; ++s) {
    comm.sendrecv(carry, (r + 1) % n, s, incoming, (r - 1 + n) % n, s);
    carry = incoming;
    sum += incoming;
  }
  for (int s = 0; s < n - 1; ++s) comm.sendrecv(sum, (r + 1) % n, n + s, incoming, (r - 1 + n) % n, n + s);
  FORGE
  return sum;
}
}  // namespace dtrain
"""

# What the whole-buffer ring scores without forging (its control), and so with:
# its naive half passes, its ring cases on one rank pass, the rest lose their
# byte check (measured; with the counter trusted, the forged one got 170).
RING_CONTROL = 159.33


def ring_handin(ring_source: str) -> List:
    naive = source("reference", "ring_collectives.cpp").decode()
    naive = naive[naive.index("Vector naive_allreduce"):naive.index("Vector ring_allreduce")]
    return [(f"student/{f}", source("reference", f)) for f in IMPL_FILES] + [
        ("student/ring_collectives.cpp", ring_source.replace("NAIVE", naive).encode()), FEEDBACK]


# Tries every way to change what its rank's channel already carried, and
# says so if one works (zero_backward_allreducing).
REWRITE = FIND_CHANNEL + r"""
namespace {
void rewrite_records() {
  if (const int fd = record_channel(); fd >= 0) {
    char back[256];
    const char pass[] = "{\"event\":\"result\",\"status\":\"pass\"}\n";
    if (::pread(fd, back, sizeof back, 0) > 0 || ::read(fd, back, sizeof back) > 0 || ::ftruncate(fd, 0) == 0 ||
        ::lseek(fd, 0, SEEK_SET) >= 0 || ::pwrite(fd, pass, sizeof pass - 1, 0) >= 0 ||
        ::fcntl(fd, F_SETFL, O_RDWR) == 0 && ::read(fd, back, sizeof back) > 0)
      std::printf("REWROTE the records through descriptor %d\n", fd);
  }
}
}  // namespace
"""


# ZeRO-3's backward that all-reduces instead of reduce-scattering (the right
# values; the traffic rule fails it), then runs `after`: the red team's
# rewrote the results file at exit (read back, cut, seek, write at an
# offset). A channel is a write-only pipe: every try fails, and the handin
# scores its control, the same code without `after`.
def zero_backward_allreducing(after: bytes) -> List:
    text = source("reference", "zero_dp_stage3.cpp")
    reduce = b"  comm.reduce_scatter(grad_w.flat, grad_w_shard, Op::Sum);"
    assert reduce in text, "the reference's backward no longer reduce-scatters grad_w so"
    text = text.replace(b"#include \"zero_dp_stage3.h\"\n", b"#include \"zero_dp_stage3.h\"\n" + REWRITE.encode(), 1)
    text = text.replace(reduce, b"  {\n    Vector all(grad_w.flat.size());\n    comm.allreduce(grad_w.flat, all, Op::Sum);\n"
                                b"    grad_w_shard = all.segment(comm.rank() * w_shard_size, w_shard_size);\n  }\n" + after, 1)
    return [(f"student/{f}", source("reference", f)) for f in IMPL_FILES[:2]] + [
        ("student/zero_dp_stage3.cpp", b"#include <fcntl.h>\n#include <unistd.h>\n" + PROLOGUE.encode() + text), FEEDBACK]


GALLERY: List[Hostile] = [
    Hostile("forged_autolab_line",
            lambda tmp: [HONEST_PART1, zero_file({f: FAKE_SCORE_PRINT for f in ZERO_FUNCS})], 10),
    Hostile("static_constructor_prints_a_fake_score",
            lambda tmp: [HONEST_PART1, zero_file({}, epilogue="namespace { struct Fake { Fake() { "
                                                            + FAKE_SCORE_PRINT + " } } fake; }\n")], 10,
            static="warn"),  # the link check refuses the constructor; this tests what stands behind it
    Hostile("forged_gtest_output",
            lambda tmp: [HONEST_PART1, func_file({"get_info": 'std::printf("[       OK ] Part2GetInfo.All (1 ms)\\n'
                                                  '[  PASSED  ] 200 tests.\\n200 passed, 0 failed\\n");'})], 10),
    # The forger in Part 13 (an extension), the rest the reference's. Every part is
    # driven: its code runs in a process that holds no record channel and no harness,
    # so its records reach nothing, and leaving mid-call fails its own cases.
    Hostile("forged_result_records_with_honest_tensor_parallel_parts",
            lambda tmp: [(f"student/{f}", source("reference", f)) for f in IMPL_FILES] + [
                ("student/ddp_buckets.cpp", (PROLOGUE + "#include <sys/stat.h>\n#include <iterator>\n" + FORGE_RESULTS).encode()
                 + source("reference", "ddp_buckets.cpp").replace(
                     b"long cap_elems) {\n", b"long cap_elems) {\n  forge_and_leave();\n", 1))],
            150, says=("the process exited in the middle of the case",), never=("results for this case",),
            static="warn", gone=("/tmp/kit-results.jsonl",), extensions="part13_ddp", scores={"part13_ddp": 0}),
    # The red team's 150/150: the stubs with a hook that forges a pass for
    # every case. The judge wants values, and a second result fails a case.
    Hostile("stubs_with_a_forging_hook",
            lambda tmp: [(f"student/{name}", stub_with(name, {fn: "forge_every_pass();" for fn in fns},
                                                      prologue=PROLOGUE + "#include <gtest/gtest.h>\n#include <sys/stat.h>\n"
                                                             + FORGE_EVERY_PASS))
                         for name, fns in (("data_parallel_preprocess.cpp", ["split_data"]),
                                           ("func_impl.cpp", ["get_info", "collect_weight_grad"]),
                                           ("zero_dp_stage3.cpp", ZERO_FUNCS))] + [FEEDBACK],
            # The student's process of the driven parts holds no test framework and no record
            # channel: a hook into the harness does not even link there.
            0, says=("undefined reference to `testing::UnitTest::GetInstance()'",), never=("FORGER:",), static="warn"),
    Hostile("hidden_inputs_written_into_a_public_cases_messages",
            lambda tmp: [(f"student/{f}", source("reference", f)) for f in IMPL_FILES[1:3]] + [
                ("student/func_impl.cpp",
                 b"#include <gtest/gtest.h>\n" + PROLOGUE.encode() + source("reference", "func_impl.cpp").replace(
                     b"#include \"func_impl.h\"\n", b"#include \"func_impl.h\"\n" + LEAK_HIDDEN_INPUTS.encode(), 1)
                 .replace(b"Communicator& dp_comm) {", b"Communicator& dp_comm) {\n  leak_hidden_input(grad_w);", 1))],
            # Its functions run in the driven parts' student process, which holds no test framework:
            # the hook does not link there, so parts 2-7 score 0, and nothing of it is shown.
            60, never=("HIDDEN-INPUT",), says=("func_impl.cpp breaks the program even alone",), static="warn",
            scores={"part2": 0, "part7": 0}),
    # The reader's input made hostile: a line built to overflow a JSON parser
    # on the record channel, and the results file swapped for a FIFO. The
    # attacker is in Part 13, driven like every part: its process is given no
    # record channel, and the results file's path is on no command line of
    # its, so it finds neither, and its honest code keeps every point (the
    # channels' own defences: staff/tests/test_records.py).
    Hostile("results_file_attacked_with_deep_json_and_a_fifo",
            lambda tmp: [(f"student/{f}", source("reference", f)) for f in IMPL_FILES] + [
                ("student/ddp_buckets.cpp",
                 b"#include <sys/stat.h>\n#include <iterator>\n" + PROLOGUE.encode() + RESULTS_PATH.encode() +
                 source("reference", "ddp_buckets.cpp").replace(
                     b"long cap_elems) {\n", b"long cap_elems) {\n  break_the_reader();\n", 1))],
            170, static="warn", extensions="part13_ddp", never=("grader error", "were no record"),
            scores={"part13_ddp": 20}),
    # Part 11's "ring" that passes whole buffers round the ring (the right
    # messages, to the right ranks, n times the bytes), then writes the
    # ring's byte count into its Communicator's counter, a field it holds:
    # the checks count bytes from the ledger's log, so it scores what its
    # control (the same code, no counter written) scores.
    Hostile("part11_byte_counter_written_over",
            lambda tmp: ring_handin(WHOLE_BUFFER_RING.replace("FORGE", "forge_counter(comm, before, src.size());")),
            RING_CONTROL, scores={"part11_ring": 9.33}, static="warn", extensions="part11_ring"),
    Hostile("part11_whole_buffer_ring_control",
            lambda tmp: ring_handin(WHOLE_BUFFER_RING.replace("FORGE", "")),
            RING_CONTROL, scores={"part11_ring": 9.33}, static="warn", extensions="part11_ring"),
    # ZeRO-3's backward that all-reduces instead of reduce-scattering (the
    # right values; the traffic rule fails it), then tries to rewrite the
    # records its rank already sent, as the red team's did to the results
    # file at exit: read them back, cut, seek, write at an offset. A channel
    Hostile("zero_backward_allreduces_then_rewrites_its_records",
            lambda tmp: zero_backward_allreducing(b"  rewrite_records();"),
            126.67, scores={"part8_backward": 0, "part9": 6.67}, never=("REWROTE",), static="warn"),
    Hostile("zero_backward_allreduces_control",
            lambda tmp: zero_backward_allreducing(b""),
            126.67, scores={"part8_backward": 0, "part9": 6.67}, says=("allreduce",), static="warn"),
]


@pytest.mark.parametrize("case", cases(GALLERY))
def test_hostile_handin(case: Hostile, tmp_path, untouched_kit):
    grade_hostile(case, tmp_path)
