"""A grader that is not root: student code runs with the grader's own rights,
and, where the kernel allows unprivileged user namespaces, in IPC and PID
namespaces of its own, so the System V objects and POSIX message queues a
job leaves end with it (grader/namespaces.py, USER_NAMESPACES).

  python3 -m pytest grader/tests/test_not_root.py -q     (as root, after `make build`: it adds a user)

Root makes an unprivileged user, copies the build where that user may
write its object cache, and runs grader/grade as that user with runuser.
"""
import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile

import pytest

from conftest import BUILD, GRADE, make_tar
from grader.leftovers import remove_mqueues, sysv_objects
from hostile_gallery import MQUEUES, reference_calling
from test_hostile_gallery_link import GALLERY as LINK_GALLERY
from test_hostile_gallery_rules import GALLERY
from test_hostile_gallery_secrets import GALLERY as SECRETS_GALLERY

USER = "kit-notroot"
pytestmark = [pytest.mark.long, pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("runuser"),
                                reason="root makes the user and runs the grader as it")]

# The filter refuses shmget and mq_open; behind it (filter off), the
# reference's get_info leaves one of each per rank, and the handin keeps 150.
LEAVE_IPC = MQUEUES + r"""
#include <sys/shm.h>
namespace {
void leave_ipc(int rank) {
  leave_queues(rank);
  shmget(IPC_PRIVATE, 1 << 16, IPC_CREAT | 0600);
}
}  // namespace
"""


@pytest.fixture(scope="module")
def grader_user():
    try:
        pwd.getpwnam(USER)
    except KeyError:
        made = subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", USER],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if made.returncode != 0:
            pytest.skip(f"useradd {USER} failed: {made.stdout}")
    user = pwd.getpwnam(USER)
    home = tempfile.mkdtemp(prefix="kit-notroot-")
    shutil.copytree(BUILD, os.path.join(home, "build"), symlinks=True)
    for root, dirs, files in os.walk(home):
        for name in [root] + [os.path.join(root, n) for n in dirs + files]:
            os.lchown(name, user.pw_uid, user.pw_gid)
    yield user, home
    shutil.rmtree(home, ignore_errors=True)


def grade_as(user, home, handin: str, **env) -> dict:
    report = os.path.join(home, "report.json")
    environ = dict(os.environ, KIT_STATIC_CHECKS="warn", KIT_SYSCALL_FILTER="off", HOME=home)
    environ.update(env)
    proc = subprocess.run(["runuser", "-u", user.pw_name, "--", sys.executable, GRADE, "--build",
                           os.path.join(home, "build"), "--json", report, handin], env=environ, cwd=home,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout
    with open(report) as f:
        return json.load(f)


def left_by(uid: int):
    return sysv_objects(uid), remove_mqueues(uid)


# Both tests grade as the same user, and the control leaves objects behind
# for a moment: they run in one worker, one after the other.
@pytest.mark.xdist_group("not_root_user")
def test_what_a_job_leaves_in_the_kernel_ends_with_it(grader_user):
    user, home = grader_user
    handin = make_tar(os.path.join(home, "ipc.tar"), reference_calling("leave_ipc(comm.rank());", LEAVE_IPC))
    os.chown(handin, user.pw_uid, user.pw_gid)
    report = grade_as(user, home, handin)
    notes = "\n".join(report["notes"])
    assert report["status"] == "graded" and report["total"] == 150, notes
    if "without namespaces" in notes:
        pytest.skip("this kernel refuses unprivileged user namespaces (the report says so)")
    assert "in IPC and PID namespaces of its own" in notes, notes
    objects, queues = left_by(user.pw_uid)
    assert not objects and not queues, f"left behind: System V {objects}, message queues {queues}"


@pytest.mark.xdist_group("not_root_user")
def test_without_the_namespaces_they_would_stay(grader_user):
    # The control: the same handin, namespaces off (staff only), leaves them.
    user, home = grader_user
    handin = make_tar(os.path.join(home, "ipc.tar"), reference_calling("leave_ipc(comm.rank());", LEAVE_IPC))
    os.chown(handin, user.pw_uid, user.pw_gid)
    report = grade_as(user, home, handin, KIT_SANDBOX_NAMESPACES="off")
    objects, queues = left_by(user.pw_uid)
    for flag, ident in objects:
        subprocess.run(["ipcrm", flag, str(ident)], check=False)
    assert "without namespaces" in "\n".join(report["notes"]), report["notes"]
    assert objects and queues, "the handin left nothing even without namespaces: the test above proves nothing"


# The rules judged from each rank's MPI side hold for a grader that is not
# root too, where the side and the program share the grader's user id: the
# side is not dumpable and the program's filter refuses ptrace. Each attack
# scores its control's, as in the gallery (graded as root there), and so do
# the requests written on the link by hand (the side copies a buffer a
# request names from its program as that same user).
@pytest.mark.xdist_group("not_root_user")
@pytest.mark.parametrize("name", ["backward_all_reduces_behind_the_ledger",
                                  "full_weight_kept_in_a_block_made_by_partition",
                                  "zero_backward_writes_a_raw_link_request",
                                  "zero_backward_ends_its_account_early_then_asks_its_side",
                                  "zero_backward_names_data_outside_its_memory",
                                  "zero_backward_tells_its_side_it_returned_early",
                                  "hidden_inputs_written_into_a_second_plans_note"])
def test_the_sides_rules_hold_when_the_grader_is_not_root(grader_user, name):
    user, home = grader_user
    case = next(h for h in GALLERY + LINK_GALLERY + SECRETS_GALLERY if h.name == name)
    handin = make_tar(os.path.join(home, name + ".tar"), case.members(home))
    os.chown(handin, user.pw_uid, user.pw_gid)
    report = grade_as(user, home, handin, KIT_SYSCALL_FILTER="on")
    assert "isolation reduced" in "\n".join(report["notes"]), report["notes"]
    assert report["total"] == pytest.approx(case.total, abs=0.01), json.dumps(report)[:3000]
