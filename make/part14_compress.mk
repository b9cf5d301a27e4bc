# Part 14's make targets and settings: the Makefile includes this file where
# the copy holds part14_compress (kit/part_table.py, its row's Adds.make; kit-config.mk lists them).
#
#   make train-compress DP=4           Part 14: dense data parallelism beside your top-k compression, with
#                                      and without error feedback: test accuracy and what a rank sends a step

# Part 14: three ways of training on DP ranks (4 unless DP is given).
COMPRESS_RANKS = $(if $(filter file,$(origin DP)),4,$(DP))
.PHONY: train-compress
train-compress: $(BUILD)/CMakeCache.txt
	@$(call build_targets,compress_train_$(IMPL))
	tools/kitrun -n $(COMPRESS_RANKS) $(BUILD)/$(IMPL)/compress_train $(TRAIN_ARGS)
