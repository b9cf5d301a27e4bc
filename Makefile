# The kit's front door. Students: `make test-part1` ... `make test-part9`,
# `make test`, `make train`, `make handin`. Staff: add IMPL=reference to any
# target to use the solution in reference/ instead of student/.
#
#   make setup             install what the kit needs (Debian/Ubuntu)
#   make build             configure and build both variants
#   make test-partN        one part's public cases and its points (N = 1..9)
#   make test              every part, then the score table
#   make check             the kit's self-test: reference full marks, stubs zero
#   make clean             remove the build directory

IMPL   ?= student
BUILD  ?= build
JOBS   ?= $(shell nproc 2>/dev/null || echo 2)
PYTHON ?= $(shell tools/find_python)

ifeq ($(filter $(IMPL),student reference),)
$(error IMPL must be student or reference, got '$(IMPL)')
endif

RUN_PARTS = $(PYTHON) tools/run_parts.py --build $(BUILD) --impl $(IMPL)
PART_KEYS = 1 2 3 4 5 6 7 8 9

.PHONY: all setup build configure test check clean $(addprefix test-part,$(PART_KEYS))

all: build

setup:
	./setup.sh

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release

configure: $(BUILD)/CMakeCache.txt

build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

$(addprefix test-part,$(PART_KEYS)): test-part%: build
	@$(RUN_PARTS) part$*

test: build
	@$(RUN_PARTS) --all

check: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -L 'reference|stubs'

clean:
	rm -rf $(BUILD)
