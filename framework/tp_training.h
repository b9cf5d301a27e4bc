// tp_training.h: the training loop of the tensor- and data-parallel MLP,
// shared by programs/unified_train.cpp and the kit's agreement tests.
#pragma once

#include <functional>
#include <vector>

#include "layers.h"

namespace dtrain {

struct TpTrainOptions {
  int epochs = 1;
  int global_batch = 60;  // each dp group takes global_batch / dp_size rows per iteration
  double init_lr = 0.01;  // x0.9 every 100 iterations
  std::uint64_t shuffle_seed = 15442;
  std::function<void(int epoch, long iteration, long iterations_per_epoch, double loss, double accuracy, double lr)>
      on_progress;  // rank 0 only
  std::function<void(int epoch, double test_accuracy, double seconds)> on_epoch;  // rank 0 only
  int report_every = 10;
};

// Bytes one rank moved for one layer during training (evaluation excluded).
struct LayerTraffic {
  std::uint64_t mp_bytes = 0, dp_bytes = 0;
};

struct TpTrainResult {
  std::vector<double> test_accuracy;  // one per epoch
  std::vector<double> epoch_seconds;  // training time of each epoch, without the evaluation
  std::vector<double> losses;         // every iteration's loss on this rank
  long iterations = 0;
  LayerTraffic fc1, fc2;
};

// Trains on this rank's rows (already split over the dp groups) and
// evaluates the whole test set after each epoch.
TpTrainResult train_tp(MLP& model, const ParallelConfig& config, const Matrix& x_local, const Labels& y_local,
                       const Matrix& x_test, const Labels& y_test, const TpTrainOptions& options);

// Whether a configuration can split this model; empty when it can, else why not.
std::string config_problem(const ParallelConfig& config, int world_size);

}  // namespace dtrain
