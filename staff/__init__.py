"""Staff-only tools, never shipped to students or to the autograder bundles:
run from the kit's top as python3 -m staff.NAME.

  bench                `make bench`: speed figures and their targets (its rows of
                       trainings: bench_training.py; its table: bench_table.py)
  dist                 `make handout`: the students' handout, cut and verified
  bundles              `make autograder`: each grading platform's bundle
  platforms            `make check-platforms`: the bundles' images, handins graded at each platform's limits
                       (each platform's image and job: platform_jobs.py)
  hidden_data          `make hidden-data`: records the hidden cases' expected values
  mutants              CTest's `mutants`: known bugs that must lose exactly their parts
  check_readme         CI: runs every command of README.md and docs/
  add_part             CI: follows docs/course-staff.md's "Add a part" recipe in a scratch copy
  repeat_check         CI: the whole suite again and again on correct code, half beside CPU hogs
  student_loop_as_user CI: the student loop as an unprivileged user, on a clean clone
  multihost            CTest's `multihost`: training across two network-namespace hosts
  portable             which functions of the binaries use instructions beyond the baseline
  arm64                `make check-arm64`: the kit cross-built for aarch64, run under qemu
  container            `make check-container`: the dev container, built with podman
  (stress_check        `make check` five times beside CPU hogs: a shell script)
"""
