"""tools/kitrun with a HOSTFILE whose host can't be used: one line that names
the host, the check that failed, and what to try, before any launcher runs.
The hosts are reached through a stand-in for ssh (the launchers' agent
setting), so no network is needed.

  python3 -m pytest staff/tests/test_kitrun_hosts.py -q
"""
import os
import subprocess

from kit.paths import KIT_DIR

KITRUN = os.path.join(KIT_DIR, "tools", "kitrun")
PROGRAM = os.path.join(KIT_DIR, "build", "mpi_demo")


def kitrun_with(tmp_path, agent_body: str):
    agent = tmp_path / "fake-ssh"
    agent.write_text("#!/bin/sh\n" + agent_body)
    agent.chmod(0o755)
    hosts = tmp_path / "hosts"
    hosts.write_text("# two hosts\nlocalhost slots=1\nnode9 slots=1\n")
    env = dict(os.environ, HOSTFILE=str(hosts), NET="lo", OMPI_MCA_plm_rsh_agent=str(agent),
               HYDRA_LAUNCHER_EXEC=str(agent))
    return subprocess.run([KITRUN, "-n", "2", PROGRAM], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=60)


def test_a_host_that_does_not_answer_is_named_with_what_to_try(tmp_path):
    proc = kitrun_with(tmp_path, 'echo "ssh: Could not resolve hostname $1: Name or service not known" >&2\nexit 255\n')
    assert proc.returncode == 2, proc.stdout
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 1, proc.stdout
    assert lines[0].startswith(f"kitrun: HOSTFILE: host node9 does not answer `{tmp_path}/fake-ssh node9 true`: "
                               "ssh: Could not resolve hostname node9: Name or service not known. "), lines[0]
    assert "ssh-copy-id node9" in lines[0]


def test_a_host_without_the_program_is_named(tmp_path):
    # The host answers, but has nothing at the program's path.
    proc = kitrun_with(tmp_path, 'shift\n[ "$1" = true ] && exit 0\nexit 1\n')
    assert proc.returncode == 2, proc.stdout
    assert proc.stdout.strip() == (f"kitrun: HOSTFILE: host node9 has no {PROGRAM}: build the kit at the same path "
                                   "on every host (a shared home, or the same checkout built on each)"), proc.stdout
