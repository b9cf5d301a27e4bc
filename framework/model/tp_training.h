// tp_training.h: the training loop of the tensor- and data-parallel MLP,
// shared by programs/unified_train.cpp and the kit's agreement tests.
#pragma once

#include <functional>
#include <vector>

#include "layers.h"
#include "training_loop.h"

namespace dtrain {

// Bytes one rank moved for one layer during training (evaluation excluded).
struct LayerTraffic {
  std::uint64_t mp_bytes = 0, dp_bytes = 0;
};

struct TpTrainResult : LoopRecord {
  std::vector<double> losses;         // every iteration's loss on this rank
  LayerTraffic fc1, fc2;
};

// Trains on this rank's rows (already split over the dp groups) and
// evaluates the whole test set after each epoch, on data-parallel group 0
// (test_accuracy is 0 on the other groups' ranks).
TpTrainResult train_tp(MLP& model, const ParallelConfig& config, RowSource x_local, const Labels& y_local,
                       RowSource x_test, const Labels& y_test, const TrainOptions& options);

// Whether a configuration can split this model; empty when it can, else why not.
std::string config_problem(const ParallelConfig& config, int world_size);

}  // namespace dtrain
