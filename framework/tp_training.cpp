// tp_training.cpp: see tp_training.h.
#include "tp_training.h"

#include <chrono>
#include <stdexcept>
#include <string>

#include "comm_runtime.h"
#include "training_loop.h"

namespace dtrain {

std::string config_problem(const ParallelConfig& c, int world_size) {
  if (c.mp_size < 1 || c.dp_size < 1)
    return "mp_size and dp_size must be at least 1, got " + std::to_string(c.mp_size) + " and " + std::to_string(c.dp_size);
  if (c.mp_size * c.dp_size != world_size)
    return "mp_size x dp_size must equal the number of ranks: " + std::to_string(c.mp_size) + " x " +
           std::to_string(c.dp_size) + " = " + std::to_string(c.mp_size * c.dp_size) + ", but there are " +
           std::to_string(world_size) + " ranks";
  if (!c.megatron && (kHidden % c.mp_size != 0 || kClasses % c.mp_size != 0))
    return "naive model parallelism splits the outputs of both layers (" + std::to_string(kHidden) + " and " +
           std::to_string(kClasses) + "), so mp_size must divide both: 1 or 2, got " + std::to_string(c.mp_size);
  if (c.megatron && kHidden % c.mp_size != 0)
    return "Megatron splits the " + std::to_string(kHidden) + " hidden units, so mp_size must divide " +
           std::to_string(kHidden) + ", got " + std::to_string(c.mp_size);
  return "";
}

TpTrainResult train_tp(MLP& model, const ParallelConfig& config, const Matrix& x_local, const Labels& y_local,
                       RowSource x_test, const Labels& y_test, const TrainOptions& options) {
  if (!(options.init_lr > 0)) throw std::invalid_argument("train_tp needs init_lr > 0 (kSgdInitLr by default)");
  const long batch = options.global_batch / config.dp_size;
  if (batch < 1)
    throw std::invalid_argument("the global batch of " + std::to_string(options.global_batch) + " leaves no rows for " +
                                std::to_string(config.dp_size) + " dp groups");
  const long rows = x_local.rows();
  const long per_epoch = (rows + batch - 1) / batch;
  const std::vector<int> order = shuffled_order(rows, options.shuffle_seed);
  const bool lead = model.fc1.info.mp_idx == 0 && model.fc1.info.dp_idx == 0;

  TpTrainResult result;
  Matrix xb;
  Labels yb;
  for (int epoch = 0; epoch < options.epochs; ++epoch) {
    const double in_collectives = CommAccess::seconds_in_collectives();
    const auto started = std::chrono::steady_clock::now();
    const LayerTraffic before1{model.fc1.info.mp_comm.bytes_transferred(), model.fc1.info.dp_comm.bytes_transferred()};
    const LayerTraffic before2{model.fc2.info.mp_comm.bytes_transferred(), model.fc2.info.dp_comm.bytes_transferred()};
    for (long start = 0, it = 0; start < rows; start += batch, ++it) {
      const long n = std::min(batch, rows - start);
      gather_batch(x_local, y_local, order, start, n, xb, yb);
      double loss;
      {
        const ledger::Phase phase("forward");
        loss = model.forward(xb, yb);
      }
      {
        const ledger::Phase phase("backward");
        model.backward();
      }
      const double lr = linear_lr(options.init_lr, result.iterations, options.epochs * per_epoch);
      {
        const ledger::Phase phase("optimizer");
        model.sgd_step(lr);
      }
      ++result.iterations;
      result.losses.push_back(loss);
      if (options.on_progress && lead && ((it + 1) % options.report_every == 0 || it + 1 == per_epoch))
        options.on_progress(epoch, it + 1, per_epoch, loss, model.accuracy(), lr);
    }
    result.epoch_seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
    result.collective_seconds += CommAccess::seconds_in_collectives() - in_collectives;
    result.fc1.mp_bytes += model.fc1.info.mp_comm.bytes_transferred() - before1.mp_bytes;
    result.fc1.dp_bytes += model.fc1.info.dp_comm.bytes_transferred() - before1.dp_bytes;
    result.fc2.mp_bytes += model.fc2.info.mp_comm.bytes_transferred() - before2.mp_bytes;
    result.fc2.dp_bytes += model.fc2.info.dp_comm.bytes_transferred() - before2.dp_bytes;
    {
      // Every data-parallel group holds the same model, so one evaluates:
      // the others' forward passes would only repeat its work and memory.
      const ledger::Phase phase("evaluate");
      result.test_accuracy.push_back(model.fc1.info.dp_idx == 0 ? evaluate(model, x_test, y_test) : 0.0);
    }
    if (options.on_epoch && lead) options.on_epoch(epoch, result.test_accuracy.back(), result.epoch_seconds.back());
  }
  return result;
}

}  // namespace dtrain
