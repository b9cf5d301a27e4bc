# The kit's front door. Students: `make test-part1` ... `make test-part9`,
# `make test`, `make train`, `make handin`. Staff: add IMPL=reference to any
# target to use the solution in reference/ instead of student/.
#
#   make setup             install what the kit needs (Debian/Ubuntu)
#   make build             configure and build both variants
#   make test-partN        one part's public cases and its points (N = 1..9)
#   make test              every part, then the score table
#   make train             unified_train: MP=2 DP=4 (naive), add MEGATRON=1 for Megatron
#   make train-zero        zero_dp_train: DP=4
#   make mpi-demo          Part 0's warm-up: CASE=allreduce|allgather|reduce_scatter|split
#   make explore           every strategy side by side: table, CSV and PNG (FULL=1 for whole epochs)
#   make handin            check and pack handin.tar for submission
#   make grade HANDIN=x    grade one handin tarball as the autograder does
#   make grade-reference   pack the reference as a handin and grade it (150/150)
#   make handout           staff: cut dist/handout.tar.gz for students, and verify it
#   make autograder        staff: dist/autograde.tar + autograde-Makefile (Autolab), dist/gradescope.zip
#   make hidden-data       staff: re-record the hidden cases' expected values from the reference
#   make check             the kit's self-test: reference full marks, stubs zero,
#                          and every known bug (tools/check_mutants.py) caught
#   make clean             remove the build directory

IMPL   ?= student
BUILD  ?= build
JOBS   ?= $(shell nproc 2>/dev/null || echo 2)
PYTHON ?= $(shell tools/find_python)

ifeq ($(filter $(IMPL),student reference),)
$(error IMPL must be student or reference, got '$(IMPL)')
endif

RUN_PARTS = $(PYTHON) tools/run_parts.py --build $(BUILD) --impl $(IMPL)

# Training runs: MP x DP ranks; TRAIN_ARGS passes more flags (see --help).
MP       ?= 1
DP       ?= 1
MEGATRON ?= 0
CASE     ?= allreduce
FULL     ?= 0
TRAIN_ARGS ?=
MEGATRON_FLAG = $(if $(filter 1 yes true,$(MEGATRON)),--megatron-mp)
PART_KEYS = 1 2 3 4 5 6 7 8 9

.PHONY: all setup build configure test check clean train train-zero mpi-demo explore handin grade grade-reference hidden-data handout autograder bench $(addprefix test-part,$(PART_KEYS))

all: build

setup:
	./setup.sh

# A failed configure must not leave a cache behind, or the next `make` skips
# configuring and fails with a confusing "No rule to make target 'Makefile'".
# Ninja, when there is one: it finds nothing to do in 0.02 s where make takes
# 0.5 s, and every `make test-partN` starts with that check.
GENERATOR = $(if $(shell command -v ninja 2>/dev/null),-G Ninja,-DCMAKE_RULE_MESSAGES=OFF)
$(BUILD)/CMakeCache.txt:
	@mkdir -p $(BUILD) && cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(GENERATOR) > $(BUILD)/configure.log 2>&1 || { cat $(BUILD)/configure.log; rm -f $(BUILD)/CMakeCache.txt; echo "make: configuring failed; missing packages? run 'make setup' (log: $(BUILD)/configure.log)"; exit 1; }

configure: $(BUILD)/CMakeCache.txt

# $(call build_targets,TARGETS): quiet when all is well; the compiler's
# warnings, or the whole log on failure. No TARGETS: everything.
build_targets = cmake --build $(BUILD) -j $(JOBS) $(if $(1),--target $(1)) > $(BUILD)/build.log 2>&1 || { cat $(BUILD)/build.log; echo "make: the build failed (log: $(BUILD)/build.log)"; exit 1; }; grep -E -A4 'warning:' $(BUILD)/build.log || true

build: $(BUILD)/CMakeCache.txt
	@$(call build_targets)

# The tests need only their own program: a student's edit relinks nothing else.
$(addprefix test-part,$(PART_KEYS)): test-part%: $(BUILD)/CMakeCache.txt
	@$(call build_targets,kit_tests_$(IMPL))
	@$(RUN_PARTS) part$*

test: $(BUILD)/CMakeCache.txt
	@$(call build_targets,kit_tests_$(IMPL))
	@$(RUN_PARTS) --all

train: build
	tools/kitrun -n $$(( $(MP) * $(DP) )) $(BUILD)/$(IMPL)/unified_train --mp_size $(MP) --dp_size $(DP) $(MEGATRON_FLAG) $(TRAIN_ARGS)

train-zero: build
	tools/kitrun -n $(DP) $(BUILD)/$(IMPL)/zero_dp_train --dp_size $(DP) $(TRAIN_ARGS)

mpi-demo: build
	tools/kitrun -n 8 $(BUILD)/mpi_demo --case $(CASE)

explore: build
	$(PYTHON) tools/explore.py --build $(BUILD) --impl $(IMPL) $(if $(filter 1 yes true,$(FULL)),--full)

handin: build
	@$(PYTHON) tools/handin.py --build $(BUILD)

grade: build
	@test -n "$(HANDIN)" || { echo "make grade: name the tarball, e.g. make grade HANDIN=handin.tar"; exit 2; }
	@$(PYTHON) grader/grade --build $(BUILD) $(HANDIN)

grade-reference: build
	@test -d reference || { echo "make grade-reference: staff only (this copy has no reference/)"; exit 2; }
	@$(PYTHON) tools/handin.py --build $(BUILD) --source reference --output $(BUILD)/reference-handin.tar > /dev/null
	@$(PYTHON) grader/grade --build $(BUILD) $(BUILD)/reference-handin.tar

handout:
	@$(PYTHON) tools/dist.py handout

autograder:
	@$(PYTHON) tools/dist.py autograder

hidden-data: build
	@test -d reference || { echo "make hidden-data: staff only (this copy has no reference/)"; exit 2; }
	@$(PYTHON) grader/hidden/generate.py $(BUILD)
	@$(MAKE) --no-print-directory build grade-reference  # the values are compiled in: rebuild, then check

# Speed figures (issue: performance); BENCH_ARGS=--quick tries it out in a minute.
bench: build
	@test -d reference || { echo "make bench: staff only (it times the reference; this copy has no reference/)"; exit 2; }
	@$(PYTHON) tools/bench.py --build $(BUILD) $(BENCH_ARGS)

check: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -L 'framework|reference|stubs|mutants'
	@if [ -d grader/tests ]; then py=$$(tools/find_python --with-pytest) && \
	  workers=$$($$py -c 'import xdist' 2>/dev/null && echo "-n $(JOBS) --dist loadgroup") ; \
	  KIT_BUILD=$(abspath $(BUILD)) $$py -m pytest grader/tests -q -p no:cacheprovider $$workers; fi

clean:
	rm -rf $(BUILD)
