"""The bases that the later staff stages of .ci/run start from, made ahead
of them and side by side: the arm64 Debian root (staff/arm64.py), the dev
container's Debian image and its image built from the Containerfile
(staff/container.py), and the platforms' Debian image with the kit's
packages (staff/platform_jobs.py).

  python3 -m staff.bases      (as root; .ci/run starts it in the background)

Making them is downloading and unpacking packages, which waits on the
network and the disk more than on the CPU, so .ci/run runs this at the
lowest priority beside its first stages (the README's commands, MPICH, the
student loop) and waits for it before the arm64 stage. Each base is made by
the same function its stage calls, and kept under the same key (the root's
package list, an image's name and packages, the Containerfile's layers), so
the stage then finds it made; a base that failed here is made again, and
its failure told, by its own stage.
"""
import sys
import threading
import time
import traceback

from staff import arm64, container, platform_jobs
from staff.student_loop_as_user import StepFailed, unprivileged_user


def main() -> int:
    container.require_podman("bases")
    started = time.monotonic()
    try:
        arm64.step_binfmt()  # mmdebstrap runs the arm64 root's package scripts under qemu
    except StepFailed as e:
        print(f"bases: {e}")
        return 1
    user = unprivileged_user(container.HOST_USER)
    makers = {"arm64 root": arm64.step_root,
              # podman keeps the image's layers, keyed by the Containerfile's
              # steps and the files they copy: the stage's build reuses them
              "dev container's image": lambda: container.build_image(container.make_base("amd64"), "amd64",
                                                                     user.pw_uid, user.pw_gid),
              "platforms' base": platform_jobs.make_deps_base}
    failed = []

    def make(name, maker):
        begun = time.monotonic()
        try:
            maker()
            print(f"  {name}: ready after {time.monotonic() - begun:.0f} s", flush=True)
        except Exception:  # its stage makes it again and tells why
            failed.append(name)
            print(f"  {name}: FAILED (its stage tries again)\n{traceback.format_exc()}", flush=True)

    threads = [threading.Thread(target=make, args=item) for item in makers.items()]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(f"bases: {'FAILED: ' + ', '.join(failed) if failed else 'ready'} in {time.monotonic() - started:.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
