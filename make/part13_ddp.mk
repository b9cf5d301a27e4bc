# Part 13's make targets and settings: the Makefile includes this file where
# the copy holds part13_ddp (kit/part_table.py, its row's Adds.make; kit-config.mk lists them).
#
#   make train-ddp DP=4 BUCKET_KB=256  Part 13: ddp_train with your buckets; OVERLAP=0 hands the gradients over
#                                      after backward; step times and overlap shares, with buckets and without
#   make trace DDP=1 DP=2 BUCKET_KB=256   a short bucketed training traced
#   make mpi-demo CASE=progress        does an iallreduce move while the rank computes? (2 ranks)

# Part 13: data parallelism on DP ranks (4 unless DP is given), with buckets
# of BUCKET_KB KiB; OVERLAP=0 hands every gradient over after backward.
# CASE=progress: does a request move while its rank computes (2 ranks)?
BUCKET_KB ?= 256
OVERLAP   ?= 1
DDP       ?= 0
DDP_RANKS = $(if $(filter file,$(origin DP)),4,$(DP))
DDP_RUN = tools/kitrun -n $(DDP_RANKS) $(BUILD)/$(IMPL)/ddp_train --bucket_kb $(BUCKET_KB) \
  $(if $(filter 0 no false,$(OVERLAP)),--no-overlap)
ifneq ($(filter 1 yes true,$(DDP)),)
TRACE_PROGRAM = ddp_train
TRACE_RUN = $(DDP_RUN)
endif
ifeq ($(CASE),progress)
MPI_DEMO_TARGET = request_progress_$(IMPL)
MPI_DEMO_RUN = tools/kitrun -n 2 $(BUILD)/$(IMPL)/request_progress --trace $(BUILD)/progress.json && \
  $(PYTHON) -m kit trace $(BUILD)/progress.json
endif
.PHONY: train-ddp
train-ddp: $(BUILD)/CMakeCache.txt
	@$(call build_targets,ddp_train_$(IMPL))
	$(DDP_RUN) $(TRAIN_ARGS)
