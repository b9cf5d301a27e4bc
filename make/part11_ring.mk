# Part 11's make targets and settings: the Makefile includes this file where
# the copy holds part11_ring (kit/part_table.py, its row's Adds.make; kit-config.mk lists them).
#
#   make mpi-demo CASE=ring            Part 11: the naive and ring allreduces against MPI's, timed and charted

# Part 11: CASE=ring times the student's naive and ring allreduces against
# MPI's on 2, 3, 4 and 8 ranks.
ifeq ($(CASE),ring)
MPI_DEMO_TARGET = ring_timing_$(IMPL)
MPI_DEMO_RUN = $(PYTHON) -m kit ring --impl $(IMPL)
endif
