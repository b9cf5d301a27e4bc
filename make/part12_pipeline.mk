# Part 12's make targets and settings: the Makefile includes this file where
# the copy holds part12_pipeline (kit/part_table.py, its row's Adds.make; kit-config.mk lists them).
#
#   make train-pipeline K=4 M=8 SCHEDULE=1f1b
#                                      Part 12: pipeline_train on K ranks; the bubble and the stashes
#   make trace PIPELINE=1 K=4 M=8 SCHEDULE=gpipe   a short pipeline training traced

# Part 12: K stages (ranks), M micro-batches.
K        ?= 4
M        ?= 8
SCHEDULE ?= 1f1b
PIPELINE ?= 0
PIPELINE_RUN = tools/kitrun -n $(K) $(BUILD)/$(IMPL)/pipeline_train --micro_batches $(M) --schedule $(SCHEDULE)
ifneq ($(filter 1 yes true,$(PIPELINE)),)
TRACE_PROGRAM = pipeline_train
TRACE_RUN = $(PIPELINE_RUN)
endif
.PHONY: train-pipeline
train-pipeline: $(BUILD)/CMakeCache.txt
	@$(call build_targets,pipeline_train_$(IMPL))
	$(PIPELINE_RUN) $(TRAIN_ARGS)
