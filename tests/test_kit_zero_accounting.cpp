// The kit's own checks of ZeRO-3's costs (not a graded part; run on the
// reference by CTest as reference/zero_accounting):
//   tools/kitrun -n 4 build/reference/kit_tests --gtest_filter='KitZeroAccounting*'
// - a training step moves 1.5x the bytes of plain data parallelism, as the
//   ZeRO paper says for stage 3 (up to padding);
// - parameters, gradients and Adam moments take 1/dp of one replica's memory.
#include "zero_model.h"
#include "student_calls.h"
#include "zero_test_util.h"

using namespace kit;

namespace {
dtrain::ZeroMLP model_from_seed(Communicator& comm) {
  const dtrain::FullWeights w = dtrain::initial_weights(7);
  const int p = comm.size(), r = comm.rank();
  return dtrain::ZeroMLP(comm, p, expected_shard(w.w1, r, p), expected_shard(w.b1, r, p), expected_shard(w.w2, r, p),
                         expected_shard(w.b2, r, p));
}
}  // namespace

TEST(KitZeroAccounting, StepMovesOneAndAHalfTimesDataParallel) {
  dtrain::ZeroMLP model = model_from_seed(world());
  const Matrix x = arange(6, dtrain::kFeatures) / 5000.0;
  const Labels y = labels({0, 1, 2, 3, 4, 5});
  const dtrain::StepVolume volume = dtrain::measure_step_volume(model, world(), x, y);
  // Stage 3 per rank: gather W in forward and again in backward, reduce-scatter
  // the gradient: 3 (P-1)/P of the (padded) weights; DP's allreduce is 2 (P-1)/P.
  // The biases (0.13% of the model) need no gather in backward, which with
  // the padding keeps the ratio within a hair of 1.5.
  EXPECT_GT(volume.data_parallel_bytes, 0u);
  EXPECT_NEAR(volume.ratio(), 1.5, 1e-3) << "ZeRO-3 moved " << volume.zero_bytes << " bytes, data parallelism "
                                         << volume.data_parallel_bytes;
}

TEST(KitZeroAccounting, StateIsOneOverDpOfAReplica) {
  dtrain::ZeroMLP model = model_from_seed(world());
  dtrain::ZeroDPAdam optimizer(model.layers());
  for (auto* layer : model.layers()) {
    layer->grad_w_shard.setConstant(0.01);
    layer->grad_b_shard.setConstant(0.01);
  }
  dtrain::student::step(optimizer);  // creates the moments
  const dtrain::StateFootprint footprint = dtrain::state_footprint(model, optimizer);
  const double share = static_cast<double>(footprint.sharded_bytes) / static_cast<double>(footprint.replica_bytes);
  EXPECT_NEAR(share, 1.0 / world().size(), 1e-4) << footprint.sharded_bytes << " of " << footprint.replica_bytes << " bytes";
}
