# Part 15's make targets and settings: the Makefile includes this file where
# the copy holds part15_decentral (kit/part_table.py, its row's Adds.make; kit-config.mk lists them).
#
#   make train-decentral DP=4          Part 15: data parallelism and your decentralized SGD side by side:
#                                      test accuracy, consensus distance, what a rank sends a step

# Part 15: both ways of training on DP ranks (4 unless DP is given).
DECENTRAL_RANKS = $(if $(filter file,$(origin DP)),4,$(DP))
.PHONY: train-decentral
train-decentral: $(BUILD)/CMakeCache.txt
	@$(call build_targets,decentral_train_$(IMPL))
	tools/kitrun -n $(DECENTRAL_RANKS) $(BUILD)/$(IMPL)/decentral_train $(TRAIN_ARGS)
