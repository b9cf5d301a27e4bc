"""The hostile gallery's ways around the rules: code the static checks and
the link check refuse (and mentions they must not), compiles that spin or
quote a shipped file, and layers that break the memory or the traffic rule
behind an honest look.

  python3 -m pytest grader/tests/test_hostile_gallery_rules.py     (as root: the sandbox needs it)

The gallery's other attacks, and what every case must show, are in
hostile_gallery.py; all its files share one check that the kit is left
untouched (conftest.py, untouched_kit).
"""
from typing import List

import pytest

from conftest import IMPL_FILES, source
from hostile_gallery import FEEDBACK, Hostile, cases, grade_hostile, reference_with
from kit import parts as table

STATIC_CHECK_BYPASSES = r"""
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cstdio>
#include <cstdlib>
extern "C" void _ZN6dtrain10heap_hooks5freedEPv(void*);
extern "C" FILE* fopen64(const char*, const char*);
extern "C" ssize_t read(int, void*, size_t) { return 0; }
namespace dtrain {
int walk_around() {
  auto run = &std::system;
  if (not fork()) return (system)("id") + run("id");
  if (FILE* f = fopen64("/tmp/kit-gallery-bypass", "w")) std::fclose(f);
  _ZN6dtrain10heap_hooks5freedEPv(nullptr);
  mkfifo("/tmp/kit-gallery-fifo", 0600);
  return open64("/etc/passwd", O_RDONLY);
}
}  // namespace dtrain
"""

MEMORY_RULE_EVASIONS = r"""
#include <sys/mman.h>
#include <sys/shm.h>
#include <unistd.h>
#include <cstdlib>
#include <thread>
#include <vector>
extern "C" void* __libc_malloc(unsigned long);
extern "C" void* valloc(size_t);
namespace dtrain { class LibraryAllocations { public: LibraryAllocations(); ~LibraryAllocations(); }; }
namespace {
double kept_in_bss[784 * 256];
std::vector<double> reserved_before_main(784 * 256);
}  // namespace
namespace dtrain {
void* keep(unsigned long n) {
  thread_local double kept_per_thread[784 * 256];
  dtrain::LibraryAllocations exempt;
  std::vector<double>* by_a_thread = nullptr;
  std::thread([&] { by_a_thread = new std::vector<double>(n); }).join();
  void* p = mmap64(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  switch (n % 9) {
    case 0: return __libc_malloc(n);
    case 1: return valloc(n);
    case 2: return sbrk(static_cast<long>(n));
    case 3: return mremap(p, n, 2 * n, MREMAP_MAYMOVE);
    case 4: return shmat(shmget(IPC_PRIVATE, n, IPC_CREAT | 0600), nullptr, 0);
    case 5: return kept_per_thread;
    case 6: return by_a_thread;
    case 7: return reserved_before_main.data();
    default: return kept_in_bss;
  }
}
}  // namespace dtrain
"""

# Grader errors a handin must not be able to cause (the platform excuses them).
# A compile that spins in constant evaluation: eight assertions of 2048 x 2048
# steps, each under GCC's limits (262144 iterations a loop, 2^25 operations an
# evaluation) and several seconds of the compiler's CPU.
SPIN_IN_CONSTANT_EVALUATION = r"""
namespace {
constexpr unsigned long spin(unsigned long n) {
  unsigned long x = 0;
  for (unsigned long i = 0; i < n; ++i)
    for (unsigned long j = 0; j < n; ++j) x += (i ^ j) & 7;
  return x;
}
""" + "".join(f"static_assert(spin({2048 + k}) != 1, \"spins\");\n" for k in range(8)) + "}  // namespace\n"

# The words a killed compiler prints, written by the handin itself.
WORDS_OF_A_KILLED_COMPILER = ("#error virtual memory exhausted: Cannot allocate memory; internal compiler error: "
                              "Killed signal terminated program cc1plus; File size limit exceeded\n")

# A kit file reached by a path relative to the public include directory; the
# #error after it stops the preprocessor, so the static checks leave the file
# to the compiler, whose messages would quote the file's lines.
QUOTES_A_SHIPPED_FILE = '#include "../../tests/part1/expected_values.txt"\n#error stop here\n'



def quotes_a_shipped_file(_tmp):
    return [("student/zero_dp_stage3.cpp", QUOTES_A_SHIPPED_FILE.encode() + source("reference", "zero_dp_stage3.cpp"))] + \
        [("student/" + f, source("reference", f)) for f in IMPL_FILES if f != "zero_dp_stage3.cpp"] + [FEEDBACK]


FUNC_POINTS = sum(p.points for p in table.PARTS if p.files == ("func_impl.cpp",))

ZERO_POINTS = sum(p.points for p in table.PARTS if p.files == ("zero_dp_stage3.cpp",))


def reference_but(**epilogues: str) -> List:
    """The reference, with an attack added to the end of the named files."""
    return [("student/" + f, reference_with(f, epilogues[f[:-4]]) if f[:-4] in epilogues else source("reference", f))
            for f in IMPL_FILES] + [FEEDBACK]


# A ZeRO layer that keeps its full weight after forward: part 8's forward
# cases fail, and part 8's forward alone. Part 9's training cases run a
# forward too, but they judge learning, not memory (their calls go unread:
# framework/calls/driven.h, MemoryUnread), so part 9 keeps its 10.
KEEPER_SCORE = 130

# The ZeRO memory rule's allowed blocks, taken by size (red team): forward
# saves its input in a block of (B + out) x in doubles, the full weight
# behind the input, and writes the Matrix's row count back to B through
# Eigen's storage; the block stays between calls at x.data(). Its control
# keeps the weight the plain way, in a static Matrix: both lose part 8's
# forward (and what of part 9 runs forward), nothing else.
ZERO_FORWARD = b"""  x = input;
  const Vector w = gather_flat(comm, w_shard);
"""

HIDE_BEHIND_X = b"""  const Vector w = gather_flat(comm, w_shard);
  {
    const long weight = static_cast<long>(in_dim) * out_dim;
    Matrix block(input.rows() + out_dim, in_dim);
    block.topRows(input.rows()) = input;
    std::copy(w.data(), w.data() + weight, block.data() + input.size());
    x.swap(block);
    struct Storage { double* data; Eigen::Index rows, cols; };
    reinterpret_cast<Storage*>(&x)->rows = input.rows();
  }
"""

KEEP_IN_A_STATIC = ZERO_FORWARD + b"""  static Matrix kept;
  kept = as_matrix(w, in_dim, out_dim);
"""


# The memory rule's blocks, counted from the call they are made in (red
# team): the block that keeps the weight is made and written in
# partition_flat_tensor, outside every forward and backward, so the rank's
# own watch of the calls' blocks sees nothing. The rank's MPI side reads the
# kernel's count of the program's memory when each call returns
# (framework/comm/side/traffic.h): from the first partition on, each rank
# holds 4 MiB more than the reference in every ZeRO-3 case it runs after,
# so it loses more than its control (the static Matrix, made in forward,
# which the rank's watch sees only in forward): part 8's backward too. Part
# 9's training cases, which judge learning and not memory, keep their points.
KEPT_FROM_PARTITION_SCORE = 150 - 20 - 20
KEEP_IN_A_BLOCK_FROM_PARTITION = ZERO_FORWARD + b"""  if (kept_weight != nullptr && w.size() <= kept_weight->size())
    std::copy(w.data(), w.data() + w.size(), kept_weight->data());
"""
PARTITION_BEGINS = b"  const Eigen::Index numel = tensor.size();\n"
MAKES_THE_BLOCK = b"""  if (kept_weight == nullptr) kept_weight = new Vector(Vector::Zero(1 << 19));  // 4 MiB, written: resident
""" + PARTITION_BEGINS


def zero_forward_keeping_from_partition() -> List:
    files = zero_forward_keeping(KEEP_IN_A_BLOCK_FROM_PARTITION)
    text = files[2][1]
    assert PARTITION_BEGINS in text, "the reference's partition_flat_tensor no longer starts with numel"
    text = text.replace(PARTITION_BEGINS, MAKES_THE_BLOCK).replace(
        b"namespace dtrain {\n", b"namespace dtrain {\nstatic Vector* kept_weight = nullptr;\n", 1)
    return files[:2] + [(files[2][0], text)] + files[3:]


def zero_forward_keeping(how: bytes) -> List:
    text = source("reference", "zero_dp_stage3.cpp")
    assert ZERO_FORWARD in text, "the reference's forward no longer saves x before gathering w"
    return [(f"student/{f}", source("reference", f)) for f in IMPL_FILES[:2]] + [
        ("student/zero_dp_stage3.cpp", b"#include <algorithm>\n" + text.replace(ZERO_FORWARD, how)), FEEDBACK]


# ZeRO-3's backward that all-reduces the weight gradient, where ZeRO-3
# reduce-scatters it. The handin sends its allreduce to the rank's MPI side
# itself, as raw bytes on the link's descriptor (framework/comm/comm_link.h),
# so the rank's own ledger never sees it, and makes the reduce-scatter the
# rank's check wants on a buffer it throws away: every check in the rank
# passes. The side's account holds the allreduce, and the judge compares it
# with the reference's. Its control all-reduces through the Communicator,
# which the rank's own check names: both lose the same cases.
ZERO_WEIGHT_GRADIENT = b"  comm.reduce_scatter(grad_w.flat, grad_w_shard, Op::Sum);\n"
# An allreduce sent to the rank's MPI side as raw bytes on the link's
# descriptor (4: the side's socket pair, made first), with the layouts of
# comm_link.h's Header and Reply and the communicator's number read from its
# handle: the program's own ledger never sees it.
BEHIND_THE_LEDGER = b"""#include <unistd.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
namespace {
// The link's descriptor as the process's environment names it (the driven
// mode's student process has its own).
int link_fd() {
  int link = 4, control = -1;
  if (const char* ends = std::getenv("KIT_MPI_LINK")) std::sscanf(ends, "%d,%d", &link, &control);
  return link;
}
dtrain::Vector allreduce_behind_the_ledger(dtrain::Communicator& comm, const dtrain::Vector& v) {
  struct Header { std::int32_t kind, comm; std::int64_t a, b, c, d, e;
                  std::uint64_t in_bytes, in_at, out_at, out_capacity; };
  struct Reply { std::int32_t status, comm; std::int64_t a, b; std::uint64_t out_bytes; std::int32_t placed, unused; };
  const long n = v.size();
  Header h{6, **reinterpret_cast<std::int32_t* const*>(&comm), n, 0, 0, 0, 0, std::uint64_t(n) * 8, 0, 0, 0};
  dtrain::Vector summed(n);
  Reply r{};
  auto out = [](const void* p, std::size_t k) {
    for (auto c = static_cast<const char*>(p); k > 0;) { const long m = write(link_fd(), c, k); c += m; k -= m; }
  };
  auto in = [](void* p, std::size_t k) {
    for (auto c = static_cast<char*>(p); k > 0;) { const long m = read(link_fd(), c, k); c += m; k -= m; }
  };
  out(&h, sizeof h);
  out(v.data(), n * 8);
  in(&r, sizeof r);
  in(summed.data(), n * 8);
  return summed;
}
}  // namespace
"""
# ZeRO-3's backward that all-reduces the weight gradient, where ZeRO-3
# reduce-scatters it, behind the ledger, and makes the reduce-scatter the
# rank's own check wants on a buffer it throws away: every check in the
# process passes. The side logs the allreduce as a request of the call,
# so the harness's traffic rule (in a process of its own, driven) names it
# as it names its control's, which all-reduces through the Communicator:
# both lose the same cases, in the same words.
# (Both graded with the static checks only warning: read and write are
# refused by name, and this is the attack behind that.)
ALLREDUCE_BEHIND_THE_LEDGER = b"""  grad_w_shard = allreduce_behind_the_ledger(comm, grad_w.flat).segment(
      static_cast<long>(comm.rank()) * w_shard_size, w_shard_size);
  { Vector thrown_away(w_shard_size); comm.reduce_scatter(grad_w.flat, thrown_away, Op::Sum); }
"""
ALLREDUCE_IN_THE_OPEN = b"""  {
    Vector summed(grad_w.flat.size());
    comm.allreduce(grad_w.flat, summed);
    grad_w_shard = summed.segment(static_cast<long>(comm.rank()) * w_shard_size, w_shard_size);
    Vector thrown_away(w_shard_size);
    comm.reduce_scatter(grad_w.flat, thrown_away, Op::Sum);
  }
"""


def zero_backward_reducing(how: bytes) -> List:
    text = source("reference", "zero_dp_stage3.cpp")
    assert ZERO_WEIGHT_GRADIENT in text, "the reference's backward no longer reduce-scatters grad_w in one line"
    return [(f"student/{f}", source("reference", f)) for f in IMPL_FILES[:2]] + [
        ("student/zero_dp_stage3.cpp", text.replace(b'#include "zero_dp_stage3.h"\n',
                                                    b'#include "zero_dp_stage3.h"\n' + BEHIND_THE_LEDGER)
         .replace(ZERO_WEIGHT_GRADIENT, how)), FEEDBACK]


# Both lose Part 8's backward, and Part 9's cases that train (one of them hidden): 6.67 of its 10.
ALL_REDUCING_SCORE = 150 - 20 - 10 + 6.67


GALLERY: List[Hostile] = [
    # Driven, the rule is the harness's, from every request the side logged for the call: the raw
    # allreduce is named as its control's is.
    Hostile("backward_all_reduces_behind_the_ledger", lambda tmp: zero_backward_reducing(ALLREDUCE_BEHIND_THE_LEDGER),
            ALL_REDUCING_SCORE, says=("backward: allreduce of 8 elements on comm that ZeRO-3's backward doesn't need",
                                      "an allreduce leaves every rank the whole tensor"),
            scores={"part8_backward": 0, "part8_forward": 20}, static="warn", budget=120),
    Hostile("backward_all_reduces_in_the_open", lambda tmp: zero_backward_reducing(ALLREDUCE_IN_THE_OPEN),
            ALL_REDUCING_SCORE, says=("an allreduce leaves every rank the whole tensor",),
            scores={"part8_backward": 0, "part8_forward": 20}, static="warn", budget=120),
    # ZeRO-3's backward that reuses the weight forward gathered, except on a
    # fresh communicator: the traffic rule is checked on every call.
    Hostile("backward_skips_its_all_gather_on_a_used_communicator",
            lambda tmp: [(f"student/{f}", source("reference", f)) for f in IMPL_FILES[:2]] + [
                ("student/zero_dp_stage3.cpp", source("reference", "zero_dp_stage3.cpp").replace(
                    b"  const Vector w = gather_flat(comm, w_shard);\n  Matrix grad_x;",
                    b"  static std::map<const void*, int> seen;\n"
                    b"  const bool fresh = seen[&comm]++ == 0;\n"
                    b"  static Vector last;\n"
                    b"  if (fresh || last.size() != w_shard.size() * comm.size()) last = gather_flat(comm, w_shard);\n"
                    b"  const Vector& w = last;\n  Matrix grad_x;").replace(
                    b"#include \"zero_dp_stage3.h\"", b"#include \"zero_dp_stage3.h\"\n#include <map>"))],
            # Part 9 keeps its 10: its training cases, where the kept weight
            # went unnoticed by the traffic (the two layers alternate, so the
            # static is gathered again each call), judge learning, not
            # memory; the memory is Part 8's to judge, and it does.
            130, says=("backward: no all-gather of",), scores={"part8_backward": 0, "part9": 10}),
    Hostile("refused_by_the_static_rules",
            lambda tmp: [("student/func_impl.cpp", reference_with("func_impl.cpp",
                          "#include <mpi.h>\nstatic int r = [] { int x; MPI_Comm_rank(MPI_COMM_WORLD, &x); return x; }();\n")),
                         ("student/data_parallel_preprocess.cpp", reference_with("data_parallel_preprocess.cpp",
                          "static const char* home = std::getenv(\"HOME\");\nstatic void nop() { asm(\"nop\"); }\n")),
                         ("student/zero_dp_stage3.cpp", reference_with("zero_dp_stage3.cpp",
                          "#include <cstdlib>\n__attribute__((constructor)) static void early() { std::system(\"id\"); }\n"
                          "#define SNEAKY pop##en\nstatic auto p = SNEAKY;\n")), FEEDBACK],
            0, says=("includes mpi.h", "'MPI_Comm_rank'", "'getenv'", "'asm'", "attribute 'constructor'",
                     "'system'", "'popen'", "refused by the static checks")),
    # The identifier rules walked around: the link check refuses each file
    # by what its object uses, defines or keeps; every other file keeps its
    # points (the score is the control's, the handin with that file's stub).
    Hostile("static_check_bypasses_refused_by_the_link_check",
            lambda tmp: reference_but(func_impl=STATIC_CHECK_BYPASSES), 150 - FUNC_POINTS,
            says=("refused by the link check", "uses system", "uses fork", "uses fopen64", "uses open64",
                  "uses mkfifo", "uses dtrain::heap_hooks::freed(void*)", "defines read: a C name"),
            scores={"part1": 10, "part2": 0, "part8_forward": 20}),
    Hostile("memory_rule_evasions_refused_by_the_link_check",
            lambda tmp: reference_but(zero_dp_stage3=MEMORY_RULE_EVASIONS), 150 - ZERO_POINTS,
            says=("refused by the link check", "uses sbrk", "uses valloc", "uses __libc_malloc", "uses mmap64", "uses mremap",
                  "uses shmat", "uses std::thread::_M_start_thread", "static or thread-local storage",
                  "static initializer", "uses dtrain::LibraryAllocations::LibraryAllocations()"),
            scores={"part1": 10, "part7": 10, "part8_forward": 0, "part8_backward": 0, "part9": 0}),
    Hostile("mentions_in_comments_and_strings_are_fine",
            lambda tmp: [("student/" + f, reference_with(f, (
                "// system(\"rm -rf /\"), MPI_Send, fopen, getenv, asm, __attribute__((constructor)), testing::\n"
                "/* #include <mpi.h> fork() popen() */\n"
                "static const char* kMention = \"system() MPI_Init getenv asm fork ofstream gtest\";\n"
                "static const char* kRaw = R\"x(exit(0) abort() __attribute__((constructor)))x\";\n"
                "[[maybe_unused]] static const char* mentions() { return kMention[0] ? kRaw : kMention; }\n"))) for f in IMPL_FILES] + [FEEDBACK],
            150, budget=60),
    # A grader error is the platform's excuse: no handin may earn one.
    Hostile("compile_spins_in_constant_evaluation",
            lambda tmp: reference_but(zero_dp_stage3=SPIN_IN_CONSTANT_EVALUATION), 150 - ZERO_POINTS,
            says=("its compile ran past",), never=("grader error",), budget=150),
    Hostile("writes_the_words_of_a_killed_compiler",
            lambda tmp: reference_but(zero_dp_stage3=WORDS_OF_A_KILLED_COMPILER), 150 - ZERO_POINTS,
            says=("does not compile", "virtual memory exhausted"), never=("grader error",)),
    # The static checks refuse the climbing include before anything opens it;
    # behind them (warn), the compile sees only the public headers' copy.
    Hostile("compile_messages_quote_a_shipped_file",
            quotes_a_shipped_file,
            150 - ZERO_POINTS, says=("includes '../../tests/part1/expected_values.txt': only standard headers",),
            never=("split_data.x#1 0 4 2 1",)),
    Hostile("compile_messages_quote_a_shipped_file_behind_the_static_checks",
            quotes_a_shipped_file,
            150 - ZERO_POINTS, says=("expected_values.txt: No such file or directory",),
            never=("split_data.x#1 0 4 2 1",), static="warn"),
    Hostile("full_weight_kept_in_a_static_matrix", lambda tmp: zero_forward_keeping(KEEP_IN_A_STATIC), KEEPER_SCORE,
            says=("against a full weight of",), scores={"part8_forward": 0, "part8_backward": 20}, budget=120),
    Hostile("full_weight_hidden_behind_the_saved_input", lambda tmp: zero_forward_keeping(HIDE_BEHIND_X),
            KEEPER_SCORE, says=("lie past the saved input x in its block of",),
            scores={"part8_forward": 0, "part8_backward": 20}, budget=120),
    Hostile("full_weight_kept_in_a_block_made_by_partition", lambda tmp: zero_forward_keeping_from_partition(),
            KEPT_FROM_PARTITION_SCORE, says=("a full weight, or a copy as big, kept between calls",),
            scores={"part8_forward": 0, "part8_backward": 0, "part9": 10}, budget=120),
]
# The rules the ranks' MPI sides judge, attacked as root without namespaces
# too (the platforms' containers): the side and the program then share no
# namespace of their own, and the same accounts decide (as not root:
# test_not_root.py).
GALLERY += [Hostile(h.name + "_without_namespaces", h.members, h.total, says=h.says, scores=h.scores,
                    static=h.static, budget=h.budget, namespaces=False)
            for h in GALLERY if h.name in ("backward_all_reduces_behind_the_ledger",
                                           "full_weight_kept_in_a_block_made_by_partition")]


@pytest.mark.parametrize("case", cases(GALLERY))
def test_hostile_handin(case: Hostile, tmp_path, untouched_kit):
    grade_hostile(case, tmp_path)
