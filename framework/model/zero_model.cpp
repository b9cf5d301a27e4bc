// zero_model.cpp: see zero_model.h.
#include "zero_model.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "comm_runtime.h"
#include "student_calls.h"
#include "training_loop.h"

namespace dtrain {

ZeroMLP::ZeroMLP(Communicator& comm, int dp_size, std::uint64_t seed)
    : fc1(comm, kFeatures, kHidden, dp_size, nullptr, nullptr, seed),
      fc2(comm, kHidden, kClasses, dp_size, nullptr, nullptr, seed + 1) {}

ZeroMLP::ZeroMLP(Communicator& comm, int dp_size, Vector w1_shard, Vector b1_shard, Vector w2_shard, Vector b2_shard)
    : fc1(comm, kFeatures, kHidden, dp_size, std::move(w1_shard), std::move(b1_shard)),
      fc2(comm, kHidden, kClasses, dp_size, std::move(w2_shard), std::move(b2_shard)) {}

double ZeroMLP::forward(const Matrix& x, const Labels& y) {
  using Phase = LayerProfiler::Phase;
  Matrix h;
  {
    ProfileScope scope(profiler, "fc1", Phase::Forward);
    h = student::forward(fc1, x);
  }
  const Matrix& a = relu_.forward(h);
  Matrix logits;
  {
    ProfileScope scope(profiler, "fc2", Phase::Forward);
    logits = student::forward(fc2, a);
  }
  return loss_.forward(logits, y);
}

void ZeroMLP::backward() {
  using Phase = LayerProfiler::Phase;
  Matrix g;
  {
    ProfileScope scope(profiler, "fc2", Phase::Backward);
    g = student::backward(fc2, loss_.backward());
  }
  const Matrix& ga = relu_.backward(g);
  ProfileScope scope(profiler, "fc1", Phase::Backward);
  student::backward(fc1, ga);
}

void ZeroMLP::zero_grad() {
  fc1.zero_grad();
  fc2.zero_grad();
}

ZeroTrainResult train_zero(ZeroMLP& model, Communicator& comm, RowSource x_local, const Labels& y_local,
                           RowSource x_test, const Labels& y_test, const TrainOptions& options) {
  if (!(options.init_lr > 0)) throw std::invalid_argument("train_zero needs init_lr > 0 (kAdamInitLr by default)");
  const int dp = comm.size();
  const long batch = options.global_batch / dp;
  if (batch < 1)
    throw std::invalid_argument("the global batch of " + std::to_string(options.global_batch) + " leaves no rows for " +
                                std::to_string(dp) + " ranks");
  ZeroDPAdam optimizer(model.layers(), options.init_lr);
  ZeroTrainResult result;
  std::uint64_t bytes_before = 0;
  LoopSteps steps;
  steps.train = [&](const Matrix& xb, const Labels& yb, long iteration) {
    Iteration done = forward_pass(model, xb, yb);
    model.zero_grad();
    {
      const ledger::Phase phase("backward");
      model.backward();
    }
    done.lr = optimizer.lr = decayed_lr(options.init_lr, iteration, 100.0 / dp);
    {
      const ledger::Phase phase("optimizer");
      student::step(optimizer);
    }
    result.final_loss = done.loss;
    return done;
  };
  steps.epoch_begins = [&] { bytes_before = comm.bytes_transferred(); };
  steps.epoch_ends = [&] { result.train_bytes += comm.bytes_transferred() - bytes_before; };
  steps.evaluate = [&] { return evaluate_shared(model, comm, x_test, y_test); };
  run_epochs(x_local, y_local, batch, options, comm.rank() == 0, steps, result);
  result.footprint = state_footprint(model, optimizer);
  return result;
}

StepVolume measure_step_volume(ZeroMLP& model, Communicator& comm, const Matrix& x, const Labels& y) {
  StepVolume volume;
  const std::uint64_t before = comm.bytes_transferred();
  model.forward(x, y);
  model.zero_grad();
  model.backward();
  volume.zero_bytes = comm.bytes_transferred() - before;

  // Plain data parallelism: one allreduce of each full gradient.
  Communicator replicas = comm.split(0, comm.rank());
  for (const ZeroDPStage3FCLayer* layer : model.layers()) {
    const Matrix grad_w = Matrix::Zero(layer->in_dim, layer->out_dim), grad_b = Matrix::Zero(1, layer->out_dim);
    Matrix sum_w(grad_w.rows(), grad_w.cols()), sum_b(1, layer->out_dim);
    replicas.allreduce(grad_w, sum_w);
    replicas.allreduce(grad_b, sum_b);
  }
  volume.data_parallel_bytes = replicas.bytes_transferred();
  return volume;
}

StateFootprint state_footprint(ZeroMLP& model, const ZeroDPAdam& optimizer) {
  StateFootprint footprint;
  for (const ZeroDPStage3FCLayer* layer : model.layers()) {
    footprint.sharded_bytes += sizeof(double) * static_cast<std::uint64_t>(layer->w_shard.size() + layer->b_shard.size() +
                                                                          layer->grad_w_shard.size() +
                                                                          layer->grad_b_shard.size());
    // parameters, gradients, m and v
    footprint.replica_bytes += 4 * sizeof(double) * static_cast<std::uint64_t>(layer->in_dim + 1) * layer->out_dim;
  }
  for (const auto& [key, moments] : optimizer.state)
    footprint.sharded_bytes += sizeof(double) * static_cast<std::uint64_t>(moments.m.size() + moments.v.size());
  return footprint;
}

}  // namespace dtrain
