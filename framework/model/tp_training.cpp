// tp_training.cpp: see tp_training.h.
#include "tp_training.h"

#include <stdexcept>
#include <string>
#include <tuple>

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

TpTrainResult train_tp(MLP& model, const ParallelConfig& config, RowSource x_local, const Labels& y_local,
                       RowSource x_test, const Labels& y_test, const TrainOptions& options) {
  if (!(options.init_lr > 0)) throw std::invalid_argument("train_tp needs init_lr > 0 (kSgdInitLr by default)");
  const long batch = options.global_batch / config.dp_size;
  if (batch < 1)
    throw std::invalid_argument("the global batch of " + std::to_string(options.global_batch) + " leaves no rows for " +
                                std::to_string(config.dp_size) + " dp groups");
  const long total = options.epochs * ((x_local.rows() + batch - 1) / batch);
  TpTrainResult result;
  auto traffic = [&](FCLayer& layer) { return LayerTraffic{layer.info.mp_comm.bytes_transferred(),
                                                         layer.info.dp_comm.bytes_transferred()}; };
  LayerTraffic before1, before2;
  LoopSteps steps;
  steps.train = [&](const Matrix& xb, const Labels& yb, long iteration) {
    Iteration done = forward_pass(model, xb, yb);
    {
      const ledger::Phase phase("backward");
      model.backward();
    }
    done.lr = linear_lr(options.init_lr, iteration, total);
    {
      const ledger::Phase phase("optimizer");
      model.sgd_step(done.lr);
    }
    result.losses.push_back(done.loss);
    return done;
  };
  steps.epoch_begins = [&] { before1 = traffic(model.fc1), before2 = traffic(model.fc2); };
  steps.epoch_ends = [&] {
    for (auto [sum, layer, before] : {std::tuple{&result.fc1, &model.fc1, before1}, std::tuple{&result.fc2, &model.fc2, before2}}) {
      const LayerTraffic now = traffic(*layer);
      sum->mp_bytes += now.mp_bytes - before.mp_bytes;
      sum->dp_bytes += now.dp_bytes - before.dp_bytes;
    }
  };
  // Every data-parallel group holds the same model, so one evaluates: the
  // others' forward passes would only repeat its work and memory.
  steps.evaluate = [&] { return model.fc1.info.dp_idx == 0 ? evaluate(model, x_test, y_test) : 0.0; };
  const bool lead = model.fc1.info.mp_idx == 0 && model.fc1.info.dp_idx == 0;  // world rank 0
  run_epochs(x_local, y_local, batch, options, lead, steps, result);
  return result;
}

}  // namespace dtrain
