// zero_test_util.cpp: see zero_test_util.h.
#include "zero_test_util.h"

#include <algorithm>
#include <string>
#include <vector>

#include "idx_dataset.h"
#include "layers.h"
#include "zero_model.h"

namespace kit {

Vector expected_shard(const Matrix& full, int idx, int parts) {
  const Eigen::Index size = (full.size() + parts - 1) / parts;
  Vector shard = Vector::Zero(size);
  for (Eigen::Index i = 0; i < size && idx * size + i < full.size(); ++i) shard(i) = full.data()[idx * size + i];
  return shard;
}

dtrain::ZeroDPStage3FCLayer layer_from_full(Communicator& comm, const Matrix& full_w, const Matrix& full_b) {
  return dtrain::ZeroDPStage3FCLayer(comm, static_cast<int>(full_w.rows()), static_cast<int>(full_w.cols()), comm.size(),
                                     expected_shard(full_w, comm.rank(), comm.size()),
                                     expected_shard(full_b, comm.rank(), comm.size()));
}

double zero_training_accuracy(long train_rows, long test_rows, int global_batch) {
  // Each rank reads only its own rows: the whole set on every rank would
  // take most of a rank's memory budget (kit/parts.py) before any student code runs.
  const int ranks = world().size();
  const long rows = train_rows / ranks;
  const dtrain::Dataset data = dtrain::load_dataset("", rows, test_rows, rank() * rows);
  if (data.train.x.rows() != rows || data.test.x.rows() != test_rows)
    throw std::runtime_error("the data set in " + data.dir + " has too few samples for this case, which needs " +
                             std::to_string(train_rows) + " training and " + std::to_string(test_rows) +
                             " test rows");
  const Matrix& x_local = data.train.x;  // (rows, 784)
  const Labels& y_local = data.train.y;
  const dtrain::FullWeights init = dtrain::initial_weights(15442);
  dtrain::ZeroMLP model(world(), ranks, expected_shard(init.w1, rank(), ranks), expected_shard(init.b1, rank(), ranks),
                        expected_shard(init.w2, rank(), ranks), expected_shard(init.b2, rank(), ranks));
  dtrain::TrainOptions options;
  options.global_batch = global_batch;
  options.init_lr = dtrain::kAdamInitLr;
  const dtrain::ZeroTrainResult result =
      dtrain::train_zero(model, world(), x_local, y_local, data.test.x, data.test.y, options);
  return result.test_accuracy.back();
}

}  // namespace kit
