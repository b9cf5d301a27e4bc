// The kit's own check that every parallel configuration trains the same
// model (not a graded part; CTest runs it on the reference as
// reference/training_agreement):
//   tools/kitrun -n 4 build/reference/kit_tests --gtest_filter='KitTrainingAgreement*'
// All configurations start from the same full weights, so data and model
// parallelism change where the arithmetic happens, not its result: the loss
// of every step must match one process training on the whole batch.
#include "layers.h"
#include "kit_test.h"

using namespace kit;
using dtrain::MLP;
using dtrain::ParallelConfig;

namespace {

constexpr int kBatch = 8, kSteps = 4;
constexpr double kLr = 0.05;

Matrix batch_x() { return (arange(kBatch, dtrain::kFeatures).array() * 0.37).sin().matrix() * 0.5; }
Labels batch_y() { return labels({3, 1, 4, 1, 5, 9, 2, 6}); }

// Losses of kSteps SGD steps on the batch, as one process sees them.
std::vector<double> single_process_losses() {
  Communicator alone = world().split(rank(), 0);
  MLP model(alone, ParallelConfig{1, 1, false});
  std::vector<double> losses;
  for (int s = 0; s < kSteps; ++s) {
    losses.push_back(model.forward(batch_x(), batch_y()));
    model.backward();
    model.sgd_step(kLr);
  }
  return losses;
}

// The same steps under `config` over the 4 ranks: each dp group takes its
// rows of the batch, and the reported loss is the mean over the groups.
std::vector<double> parallel_losses(const ParallelConfig& config) {
  MLP model(world(), config);
  const int rows = kBatch / config.dp_size, first = (rank() / config.mp_size) * rows;
  const Matrix x = batch_x().middleRows(first, rows);
  const Labels y = batch_y().segment(first, rows);
  std::vector<double> losses;
  for (int s = 0; s < kSteps; ++s) {
    Matrix mine(1, 1), sum(1, 1);
    mine(0, 0) = model.forward(x, y);
    model.backward();
    model.sgd_step(kLr);
    world().allreduce(mine, sum);  // every rank of a dp group has the same loss
    losses.push_back(sum(0, 0) / world().size());
  }
  return losses;
}

void expect_agreement(const ParallelConfig& config) {
  const std::vector<double> expected = single_process_losses();
  const std::vector<double> got = parallel_losses(config);
  for (int s = 0; s < kSteps; ++s)
    EXPECT_NEAR(got[s], expected[s], 1e-9 * std::max(1.0, std::abs(expected[s]))) << "loss of step " << s + 1;
}

}  // namespace

TEST(KitTrainingAgreement, NaiveMp2Dp2MatchesOneProcess) { expect_agreement({2, 2, false}); }
TEST(KitTrainingAgreement, NaiveMp1Dp4MatchesOneProcess) { expect_agreement({1, 4, false}); }
TEST(KitTrainingAgreement, MegatronMp4Dp1MatchesOneProcess) { expect_agreement({4, 1, true}); }
TEST(KitTrainingAgreement, MegatronMp2Dp2MatchesOneProcess) { expect_agreement({2, 2, true}); }
