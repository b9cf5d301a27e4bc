# The kit's front door. Students: `make test-partN` (one per part: the
# handout's parts table), `make test`, `make train`, `make handin`.
#
#   make setup             install what the kit needs (Debian/Ubuntu; MPI=mpich adds MPICH)
#   make build             configure and build everything (the reference too, where there is one)
#   make test-partN        one part's public cases and its points (the keys: python3 -m kit parts)
#   make test              every part, then the score table
#   make train             unified_train: MP=2 DP=4 (naive), add MEGATRON=1 for Megatron
#   make train-zero        zero_dp_train: DP=4
#   make mpi-demo          Part 0's warm-up: CASE=allreduce|allgather|reduce_scatter|split
#   make explore           every strategy side by side: table, CSV and PNG (FULL=1 for whole epochs)
#   make trace             a short training traced: build/trace.json (Perfetto) and build/trace.png (MP, DP, MEGATRON)
#   (each extension part this copy holds adds its own targets: make/KEY.mk lists them)
#   make handin            check and pack handin.tar for submission
#   make clean             remove the build directory
#
# The Python commands are the kit's package (kit/, `python3 -m kit --help`).
# ---- staff only: staff/dist.py leaves this out of the students' handout ----
# Staff: add IMPL=reference to any target to use the solution in reference/
# instead of student/. The staff's Python commands are staff/.
#   make grade HANDIN=x    grade one handin tarball as the autograder does
#   make grade-reference   pack the reference as a handin and grade it (150/150)
#   make handout           cut dist/handout.tar.gz for students, and verify it
#   make autograder        dist/autolab/, dist/gradescope.zip, dist/prairielearn/ (PRAIRIELEARN_IMAGE=NAME)
#   make hidden-data       re-record the hidden cases' expected values from the reference
#   make check-fast        before each commit (under 2 min): units, stubs, reference, a known bug per file
#   make check             the kit's self-test: reference full marks, stubs zero,
#                          and every known bug (staff/mutants.py) caught
#   make check-arm64       as root: the kit cross-built for aarch64 and run under qemu
#   make check-container   as root: the dev container built with podman, the student loop in it
#   make check-platforms   as root: Autolab's, Gradescope's and PrairieLearn's images, handins graded at their limits
#   make bench             the kit's speed figures (BENCH_ARGS=--quick tries it out in a minute)
# ---- end of staff only ----

.DEFAULT_GOAL := all
comma := ,
IMPL   ?= student
JOBS   ?= $(shell nproc 2>/dev/null || echo 2)
PYTHON ?= $(shell tools/find_python)

# What the course file (course.toml) tells make: the default MPI
# (KIT_DEFAULT_MPI) and what this copy holds (KIT_HOLDS). Written by
# Python whenever the course or the table changes; make reads it again after writing it.
# It goes in the build directory named in the environment (the dev
# container's volume), else in build/: never in a checkout that keeps none.
KIT_CONFIG_MK := $(or $(BUILD),build)/kit-config.mk
$(KIT_CONFIG_MK): kit/parts.py kit/part_types.py kit/build_lists.py kit/course.py course.toml
	@mkdir -p $(dir $@) && $(PYTHON) -m kit.parts --make > $@.tmp && mv $@.tmp $@
-include $(KIT_CONFIG_MK)

# MPI=mpich builds against MPICH, in a build directory of its own; the
# launcher follows the build (tools/kitrun). HOSTFILE=FILE NET=IFACE runs
# make train, train-zero and mpi-demo across hosts: FILE lists `NAME slots=N`
# per line, IFACE is the network interface between the hosts.
MPI    ?= $(KIT_DEFAULT_MPI)
BUILD  ?= $(if $(filter mpich,$(MPI)),build-mpich,build)

# Checked once the configuration is read (make reads this file twice when it
# has just written the configuration's).
ifdef KIT_DEFAULT_MPI
ifeq ($(filter $(IMPL),student reference),)
$(error IMPL must be student or reference, got '$(IMPL)')
endif
ifeq ($(filter $(MPI),openmpi mpich),)
$(error MPI must be openmpi or mpich, got '$(MPI)')
endif
-include $(BUILD)/generated/build.mk
ifneq ($(KIT_BUILT_FOR),)
ifneq ($(KIT_BUILT_FOR),$(MPI))
$(error $(BUILD) was built for $(KIT_BUILT_FOR), not MPI=$(MPI): give each MPI its own BUILD (MPI=mpich uses build-mpich))
endif
endif
endif

export KIT_BUILD := $(abspath $(BUILD))
export KIT_MPI := $(MPI)
HOSTFILE ?=
NET ?=
export HOSTFILE NET
TRACE ?=
VERBOSE ?=
KIT_TEST = $(PYTHON) -m kit test --impl $(IMPL) $(if $(filter 1 yes true,$(TRACE)),--trace-dir $(BUILD)/traces) \
  $(if $(filter 1 yes true,$(VERBOSE)),--verbose)

# Training runs: MP x DP ranks; TRAIN_ARGS passes more flags (see --help).
MP       ?= 1
DP       ?= 1
MEGATRON ?= 0
CASE     ?= allreduce
FULL     ?= 0
TRAIN_ARGS ?=
MEGATRON_FLAG = $(if $(filter 1 yes true,$(MEGATRON)),--megatron-mp)

.PHONY: all setup build configure test check check-fast check-arm64 check-container check-platforms clean train train-zero mpi-demo explore trace handin grade grade-reference hidden-data handout autograder bench

all: build

setup:
	./setup.sh

# A failed configure must not leave a cache behind, or the next `make` skips
# configuring and fails with a confusing "No rule to make target 'Makefile'".
# Ninja, when there is one: it finds nothing to do in 0.02 s where make takes
# 0.5 s, and every `make test-partN` starts with that check.
GENERATOR = $(if $(shell command -v ninja 2>/dev/null),-G Ninja,-DCMAKE_RULE_MESSAGES=OFF)
$(BUILD)/CMakeCache.txt:
	@mkdir -p $(BUILD) && cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DKIT_MPI=$(MPI) $(GENERATOR) > $(BUILD)/configure.log 2>&1 || { cat $(BUILD)/configure.log; rm -f $(BUILD)/CMakeCache.txt; echo "make: configuring failed; missing packages? run 'make setup' (log: $(BUILD)/configure.log)"; exit 1; }

configure: $(BUILD)/CMakeCache.txt

# $(call build_targets,TARGETS): quiet when all is well, with progress while
# there is work (tools/quiet_build); the compiler's warnings, or the whole
# log on failure. No TARGETS: everything.
build_targets = tools/quiet_build $(BUILD) $(JOBS) $(1)

build: $(BUILD)/CMakeCache.txt
	@$(call build_targets)

# The tests need only their own program: a student's edit relinks nothing else.
# Any key of the parts table works (test-part3, test-part8, test-part8_forward).
test-part%: $(BUILD)/CMakeCache.txt
	@$(call build_targets,kit_tests_$(IMPL))
	@$(KIT_TEST) part$*

test: $(BUILD)/CMakeCache.txt
	@$(call build_targets,kit_tests_$(IMPL))
	@$(KIT_TEST) --all

# Each program target builds only its program (and what it links).
train: $(BUILD)/CMakeCache.txt
	@$(call build_targets,unified_train_$(IMPL))
	tools/kitrun -n $$(( $(MP) * $(DP) )) $(BUILD)/$(IMPL)/unified_train --mp_size $(MP) --dp_size $(DP) $(MEGATRON_FLAG) $(TRAIN_ARGS)

train-zero: $(BUILD)/CMakeCache.txt
	@$(call build_targets,zero_dp_train_$(IMPL))
	tools/kitrun -n $(DP) $(BUILD)/$(IMPL)/zero_dp_train --dp_size $(DP) $(TRAIN_ARGS)

MPI_DEMO_TARGET = mpi_demo
MPI_DEMO_RUN = tools/kitrun -n 8 $(BUILD)/mpi_demo --case $(CASE)
mpi-demo: $(BUILD)/CMakeCache.txt
	@$(call build_targets,$(MPI_DEMO_TARGET))
	$(MPI_DEMO_RUN)

explore: build
	$(PYTHON) -m kit explore --impl $(IMPL) $(if $(filter 1 yes true,$(FULL)),--full)

# A short training with every rank's collectives and phases recorded.
TRACE_FILE = $(BUILD)/trace.json
TRACE_PROGRAM = unified_train
TRACE_RUN = tools/kitrun -n $$(( $(MP) * $(DP) )) $(BUILD)/$(IMPL)/unified_train --mp_size $(MP) --dp_size $(DP) \
  $(MEGATRON_FLAG)
trace: $(BUILD)/CMakeCache.txt
	@$(call build_targets,$(TRACE_PROGRAM)_$(IMPL))
	$(TRACE_RUN) --num_train_samples 1200 --num_test_samples 200 --trace $(TRACE_FILE) $(TRAIN_ARGS)
	@$(PYTHON) -m kit trace $(TRACE_FILE) --check-overlap

# The make targets of the extension parts this copy holds (make/KEY.mk; the
# list, KIT_PART_MAKEFILES, is kit-config.mk's).
include $(KIT_PART_MAKEFILES)

handin: $(BUILD)/CMakeCache.txt
	@$(call build_targets,kit_tests_$(IMPL))
	@$(PYTHON) -m kit handin

# ---- staff only: staff/dist.py leaves this out of the students' handout ----
grade: build
	@test -n "$(HANDIN)" || { echo "make grade: name the tarball, e.g. make grade HANDIN=handin.tar"; exit 2; }
	@$(PYTHON) grader/grade $(HANDIN)

STAFF_ONLY = $(if $(and $(filter reference,$(subst $(comma), ,$(KIT_HOLDS))),$(filter staff,$(subst $(comma), ,$(KIT_HOLDS)))),@true,@echo "make $@: staff only (this copy holds no reference/ or staff/: course.toml, [copy] holds)"; exit 2)

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

bench: build
	$(STAFF_ONLY)
	@$(PYTHON) -m staff.bench $(BENCH_ARGS)

# The kit's self-test: CTest, then the grader's and the staff tools' pytest suites.
# The pytest suites' many planted hangs end sooner: their time limits at 0.4
# (KIT_TIME_SCALE, kit/parts.py); CTest runs at the grader's limits. Checks
# of handins that hang case after case run at half of either (HANG_SHARE).
check: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -L 'framework|reference|stubs|mutants|staff|multihost'
	@if [ -d grader/tests ]; then py=$$(tools/find_python --with-pytest) && \
	  workers=$$($$py -c 'import xdist' 2>/dev/null && echo "-n $(JOBS) --dist loadgroup") ; \
	  KIT_TIME_SCALE=$${KIT_TIME_SCALE:-0.4} $$py -m pytest grader/tests staff/tests -q -p no:cacheprovider \
	    --durations=12 $$workers; fi

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
# ---- end of staff only ----

clean:
	rm -rf $(BUILD)
