// zero_model.h: the ZeRO stage-3 MLP (FC -> ReLU -> FC -> softmax
// cross-entropy, all FC parameters sharded over the dp ranks) and its
// training loop, shared by programs/zero_dp_train.cpp and the part 9 test.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "layers.h"
#include "training_loop.h"
#include "zero_dp_stage3.h"

namespace dtrain {

class ZeroMLP {
 public:
  // Seeded layers (the framework constructor, which partitions through the
  // student's partition_flat_tensor).
  ZeroMLP(Communicator& comm, int dp_size, std::uint64_t seed = 15442);
  // Layers built from shards the caller computed, so partition_flat_tensor
  // is not involved.
  ZeroMLP(Communicator& comm, int dp_size, Vector w1_shard, Vector b1_shard, Vector w2_shard, Vector b2_shard);

  double forward(const Matrix& x, const Labels& y);  // (B, 784), (B) -> mean loss; accuracy() after
  double accuracy() const { return loss_.accuracy(); }
  void backward();
  void zero_grad();
  std::vector<ZeroDPStage3FCLayer*> layers() { return {&fc1, &fc2}; }

  LayerProfiler* profiler = nullptr;
  ZeroDPStage3FCLayer fc1, fc2;

 private:
  ReLULayer relu_;
  SoftmaxCrossEntropy loss_;
};


// Bytes of parameters, gradients and Adam moments this rank keeps for the
// model, against the same for one unsharded replica.
struct StateFootprint {
  std::uint64_t sharded_bytes = 0;
  std::uint64_t replica_bytes = 0;
};

struct ZeroTrainResult : LoopRecord {
  double final_loss = 0;
  std::uint64_t train_bytes = 0;      // this rank's traffic during training, evaluation excluded
  StateFootprint footprint;           // at the end of training
};

// Trains on this rank's rows (already split by data parallelism) and
// evaluates on the whole test set after every epoch, each rank testing a
// 1/dp share of it (the accuracy is the same on every rank).
ZeroTrainResult train_zero(ZeroMLP& model, Communicator& comm, RowSource x_local, const Labels& y_local,
                           RowSource x_test, const Labels& y_test, const TrainOptions& options);

// Bytes one rank moves in one training step, both measured by communicator
// counters: the ZeRO model's forward and backward on (x, y), and an
// allreduce of full-size gradients of the same model, as plain data
// parallelism would do. Collective over comm.
struct StepVolume {
  std::uint64_t zero_bytes = 0;
  std::uint64_t data_parallel_bytes = 0;
  double ratio() const { return data_parallel_bytes ? double(zero_bytes) / double(data_parallel_bytes) : 0.0; }
};
StepVolume measure_step_volume(ZeroMLP& model, Communicator& comm, const Matrix& x, const Labels& y);

StateFootprint state_footprint(ZeroMLP& model, const ZeroDPAdam& optimizer);

}  // namespace dtrain
