"""The hostile gallery's escapes: handins that reach outside the sandbox
(the reference, the hidden cases, other handins, the grader's files),
ship or link files where they must not go, or call the system around
its filter or through MPI's launcher.

  python3 -m pytest grader/tests/test_hostile_gallery_escapes.py     (as root: the sandbox needs it)

The gallery's other attacks, and what every case must show, are in
hostile_gallery.py; all its files share one check that the kit is left
untouched (conftest.py, untouched_kit).
"""
import os
import shutil
import stat
import subprocess
import tarfile
from typing import List

import pytest

from conftest import BUILD, KIT
from hostile_gallery import (FEEDBACK, HONEST_PART1, PROLOGUE, Hostile, cases, func_file, grade_hostile, in_shared_tmp,
                             reference_calling)
from grader.leftovers import MQUEUE_LOOK
from grader.slots import LOCK_DIR

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
                           slurp(kit + "/grader/hidden/salt.txt") + "|" + slurp(kit + "/grader/hidden/part9/expected.txt") + "|" +
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


def locks_intact(tmp: str) -> List[str]:
    """No FIFO or symlink where a grader takes its slot lock, nothing made
    at a planted symlink's target, and root's lock folder its own."""
    problems = [p for p in in_shared_tmp("kit-grader-slot-*") if not stat.S_ISREG(os.lstat(p).st_mode)]
    problems += [p for p in ["/tmp/kit-gallery-lock-target"] if os.path.lexists(p)]
    st = os.lstat(LOCK_DIR)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != 0 or st.st_mode & 0o077:
        problems.append(f"{LOCK_DIR}: mode {stat.filemode(st.st_mode)}, owner {st.st_uid}")
    # Besides the locks, root's folder holds only another grading's look at
    # its message queues, for as long as it looks (leftovers.MQUEUE_LOOK).
    for name in os.listdir(LOCK_DIR):
        try:
            mode = os.lstat(os.path.join(LOCK_DIR, name)).st_mode
        except FileNotFoundError:  # that look, over as this one read the folder
            continue
        if not stat.S_ISREG(mode) and not (name.startswith(MQUEUE_LOOK) and stat.S_ISDIR(mode)):
            problems.append(os.path.join(LOCK_DIR, name))
    return problems


# MPI_Comm_spawn found by address, and MPI's handles too (Open MPI's are the
# addresses of its globals, MPICH's fixed numbers), to ask MPI's launcher,
# which the ranks' system-call filter does not hold, to start a shell. The
# rank's program holds no MPI (its MPI side does, framework/comm/comm_link.h):
# neither its own symbols nor a library it opens (the filter refuses the
# open) offer MPI_Comm_spawn, so the attack finds nothing and the handin
# keeps the reference's 150. Behind that, the launcher runs under the exec
# guard: nothing it is asked to start after the job's start would run.
SPAWN = r"""
#include <dlfcn.h>
namespace {
void spawn_a_shell() {
  static bool once = false;
  if (once) return;
  once = true;
  for (const char* library : {"libmpi.so.40", "libmpich.so.12"})
    if (::dlsym(RTLD_DEFAULT, "MPI_Comm_spawn") == nullptr) ::dlopen(library, RTLD_NOW | RTLD_GLOBAL);
  void* spawn = ::dlsym(RTLD_DEFAULT, "MPI_Comm_spawn");
  void* on_error = ::dlsym(RTLD_DEFAULT, "MPI_Comm_set_errhandler");
  if (!spawn || !on_error) return;  // no MPI in this process: nothing to ask
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
    Hostile("reads_the_reference_and_hidden_cases_and_writes_the_grader",
            lambda tmp: [HONEST_PART1, func_file({"get_info": "leak();"}, prologue=PROLOGUE + READ_SECRETS)],
            10, says=("LEAK[unreadable(",), static="warn", filtered=False,
            never=("ParallelInfo get_info(Communicator& comm", "6 5 0.5 1.5 2.5", "ELF")),
    Hostile("ships_files_named_like_the_grader",
            lambda tmp: [HONEST_PART1, ("grader/grade", b"#!/bin/sh\necho 150\n"),
                         ("grader/grading.py", b"raise SystemExit(0)\n"), ("kit/jobs.py", b"x = 1\n"),
                         ("tests/part2/test_part2_get_info.cpp", b"int main() { return 0; }\n"),
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
    Hostile("raw_system_calls_through_a_pointer",
            lambda tmp: [HONEST_PART1, func_file({"get_info": "leap();"}, prologue=PROLOGUE + "#include <sys/socket.h>\n"
                                                 + RAW_CALLS.replace("OFFSET", str(_syscall_offset())))],
            10, says=("ESCAPE[openat=refused fork=refused execve=refused socket=refused unlink=refused kill=refused "
                      "mmap_exec=refused",), never=("=GOT", "escaped"), static="warn", scores={"part2": 0}),
    Hostile("spawns_a_shell_through_the_launcher",
            lambda tmp: reference_calling("spawn_a_shell();", SPAWN), 150, scores={"part2": 20},
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
]


@pytest.mark.parametrize("case", cases(GALLERY))
def test_hostile_handin(case: Hostile, tmp_path, untouched_kit):
    grade_hostile(case, tmp_path)
