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
$(KIT_CONFIG_MK): kit/parts.py kit/part_table.py kit/limits.py kit/part_types.py kit/build_lists.py kit/course.py kit/course_schema.py course.toml
	@mkdir -p $(dir $@) && $(PYTHON) -m kit.parts_cli --make > $@.tmp && mv $@.tmp $@
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

.PHONY: all setup build configure test clean train train-zero mpi-demo explore trace handin

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

# The targets of what a copy holds beyond a student's handout (course.toml,
# [copy] holds; the list, KIT_STAFF_MAKEFILES, is kit-config.mk's).
include $(KIT_STAFF_MAKEFILES)

clean:
	rm -rf $(BUILD)
