# The staff's make targets, in a copy of the kit that holds staff/ (course.toml,
# [copy] holds): the Makefile includes this file then, and a student's handout
# holds neither it nor its targets (staff/dist.py).
#
# Staff: add IMPL=reference to any target to use the solution in reference/
# instead of student/. The staff's Python commands are staff/.
#   make grade HANDIN=x    grade one handin tarball as the autograder does
#   make grade-reference   pack the reference as a handin and grade it (the course's total)
#   make handout           cut dist/handout.tar.gz for students, and verify it
#   make autograder        dist/autolab/, dist/gradescope.zip, dist/prairielearn/ (PRAIRIELEARN_IMAGE=NAME)
#   make hidden-data       re-record the hidden cases' expected values from the reference
#   make calibration-data  re-time the reference (kit/reference_figures.json), on a quiet machine
#   make check-fast        before each commit (under 2 min): units, stubs, reference, a known bug per file
#   make check             the kit's self-test (under 6 min): reference full marks, stubs zero,
#                          every known bug (staff/mutants.py) caught, the hostile gallery
#   make check-long        what make check leaves to CI: other modes of grading, long scenarios
#   make check-arm64       as root: the kit cross-built for aarch64 and run under qemu
#   make check-container   as root: the dev container built with podman, the student loop in it
#   make check-platforms   as root: Autolab's, Gradescope's and PrairieLearn's images, handins graded at their limits
#   make bench             the kit's speed figures (BENCH_ARGS=--quick tries it out in a minute;
#                          BASELINE=REV runs an earlier revision's trainers in turn with these)

.PHONY: grade grade-reference handout autograder hidden-data calibration-data bench check check-long check-fast check-arm64 check-container check-platforms

grade: build
	@test -n "$(HANDIN)" || { echo "make grade: name the tarball, e.g. make grade HANDIN=handin.tar"; exit 2; }
	@$(PYTHON) grader/grade $(HANDIN)

# The targets that use the solution (reference/) say so where the copy has none.
STAFF_ONLY = $(if $(filter reference,$(subst $(comma), ,$(KIT_HOLDS))),@true,@echo "make $@: this copy holds no reference/ (course.toml, [copy] holds)"; exit 2)

grade-reference: build
	$(STAFF_ONLY)
	@$(PYTHON) -m kit handin --source reference --output $(BUILD)/reference-handin.tar > /dev/null
	@$(PYTHON) grader/grade $(BUILD)/reference-handin.tar

handout:
	$(STAFF_ONLY)
	@$(PYTHON) -m staff.dist handout

autograder:
	$(STAFF_ONLY)
	@$(PYTHON) -m staff.bundles $(if $(PRAIRIELEARN_IMAGE),--prairielearn-image $(PRAIRIELEARN_IMAGE))

hidden-data: build
	$(STAFF_ONLY)
	@$(PYTHON) -m staff.hidden_data
	@$(MAKE) --no-print-directory grade-reference  # the judge reads the new values: the reference must pass them

# The figures the limits are calibrated from (kit/calibration.py): after a
# change to the reference, a part or the cases; the kit's grading and the
# student's make test read them on every machine.
calibration-data: build
	$(STAFF_ONLY)
	@$(PYTHON) -m staff.calibration_data --build $(BUILD)

bench: build
	$(STAFF_ONLY)
	@$(PYTHON) -m staff.bench $(if $(BASELINE),--baseline $(BASELINE)) $(BENCH_ARGS)

# The kit's self-test: CTest beside the grader's and the staff tools' pytest
# suites. Both spend much of their time waiting (planted hangs, MPI jobs),
# which side by side overlaps the other's work (docs/internals.md has the
# figures); the hostile gallery ignores exactly what CTest
# writes in the build (grader/tests/conftest.py, CTEST_WRITES). CTest's
# report goes to $(BUILD)/Testing/check.log and is printed at the end.
# The pytest suites' many planted hangs end sooner: their time limits at 0.4
# (KIT_TIME_SCALE, kit/limits.py); CTest runs at the grader's limits. Checks
# of handins that hang case after case run at half of either (HANG_SHARE).
# make check leaves the checks labelled or marked "long" (another mode of
# grading, one long scenario: pytest.ini, CMakeLists.txt) to make
# check-long, which runs them the same way; .ci/run runs both.
# $(1): CTest's label arguments; $(2): pytest's -m expression; $(3): the log's name.
define check_suites
@log=$(BUILD)/Testing/$(3).log; mkdir -p $(BUILD)/Testing; \
  echo "make $@: CTest runs beside pytest; its report, printed at the end: $$log"; \
  (cd $(BUILD) && exec ctest --output-on-failure --no-tests=error -j $(JOBS) $(1)) > $$log 2>&1 & ctest=$$!; \
  trap 'kill $$ctest 2>/dev/null' INT TERM; status=0; \
  if [ -d grader/tests ]; then py=$$(tools/find_python --with-pytest) && \
    workers=$$($$py -c 'import xdist' 2>/dev/null && echo "-n $(JOBS) --dist loadgroup") ; \
    KIT_TIME_SCALE=$${KIT_TIME_SCALE:-0.4} $$py -m pytest grader/tests staff/tests -q -p no:cacheprovider \
      -m '$(2)' --durations=12 $$workers || status=1; fi; \
  wait $$ctest || status=1; echo "---- CTest ($$log)"; cat $$log; exit $$status
endef
CHECK_LABELS = framework|reference|stubs|mutants|staff|multihost
check: build
	$(call check_suites,-L '$(CHECK_LABELS)' -LE '^long$$',not long,check)

# What make check leaves to CI (under 5 minutes here): the explorer's
# fifteen training runs and the add-a-part recipe's scratch copy (CTest),
# grading as a user that is not root, the gallery's entries graded
# without namespaces, without the syscall filter or with extension parts,
# a batch killed twice, a hang run by hand, a symbol defined in two files,
# hundreds of threads beside a neighbour, a static initializer that never
# returns with the link check only warning, the handout built and graded,
# and the hidden-case gradings of the correct variants and known bugs that
# make check does not run (pytest).
check-long: build
	$(STAFF_ONLY)
	$(call check_suites,-L '^long$$',long,check-long)

# The tier a developer runs before each commit (under 2 minutes; docs/internals.md):
# the framework's units, the stubs at zero, the reference's full marks, one
# known bug in each of the three student files caught, the suites that
# read records and reports without running a job, and the kit's shape (no
# file over 400 lines, no import cycle: staff/tests/test_structure.py).
# make check runs all of it and more; .ci/run runs make check and the staff
# checks of other machines.
FAST_MUTANTS = "data split by rank instead of by data-parallel group" "gradients summed instead of averaged" \
  "reduce-scatter averages instead of summing"
check-fast: build
	$(STAFF_ONLY)
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -R '^framework/units$$|^stubs/part[0-9]+(_[a-z]+)?$$'
	@$(PYTHON) -m kit test --impl reference --all
	@$(PYTHON) -m staff.mutants --exact $(FAST_MUTANTS)
	@py=$$(tools/find_python --with-pytest) && $$py -m pytest -q -p no:cacheprovider staff/tests/test_records.py \
	  staff/tests/test_parts.py staff/tests/test_course.py grader/tests/test_reports.py grader/tests/test_case_reports.py \
	  staff/tests/test_structure.py

# Staff, as root: the kit on aarch64 Linux (cross-built, run under qemu in an
# arm64 Debian root kept in build-arm64/), and the dev container (podman).
check-arm64:
	$(STAFF_ONLY)
	@$(PYTHON) -m staff.arm64

check-container:
	$(STAFF_ONLY)
	@$(PYTHON) -m staff.container

# Staff, as root: each platform's bundle built into its image (podman) and
# handins graded there at the platform's default limits (staff/platforms.py).
check-platforms:
	$(STAFF_ONLY)
	@$(PYTHON) -m staff.platforms
