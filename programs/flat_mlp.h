// flat_mlp.h: the 784-256-10 MLP as the extension parts' trainers use it,
// its four parameters and their gradients as plain matrices, each of which
// a trainer can flatten into one vector for a student function
// (decentral_train, compress_train).
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <vector>

#include "layers.h"
#include "program_main.h"

namespace dtrain {

// The MLP, its four parameters and their gradients: W1 (784, 256), b1 (1, 256), W2 (256, 10), b2 (1, 10).
class Mlp {
 public:
  explicit Mlp(std::uint64_t seed) {
    LayerWeights drawn = mlp_weights({kFeatures, kHidden, kClasses}, seed);
    params_ = {drawn.w[0], drawn.b[0], drawn.w[1], drawn.b[1]};
    grads_.resize(params_.size());
  }

  double forward(const Matrix& x, const Labels& y) {  // (B, 784), (B) -> mean loss
    x_ = x;
    h_ = x * params_[0];  // (B, 256)
    h_.rowwise() += params_[1].row(0);
    a_ = h_.cwiseMax(0.0);
    Matrix logits = a_ * params_[2];  // (B, 10)
    logits.rowwise() += params_[3].row(0);
    return loss_.forward(logits, y);
  }
  double accuracy() const { return loss_.accuracy(); }

  void backward() {  // the gradients of the last forward's mean loss
    const Matrix& g = loss_.backward();  // (B, 10)
    grads_[2] = a_.transpose() * g;
    grads_[3] = g.colwise().sum();
    const Matrix gh = ((g * params_[2].transpose()).array() * (h_.array() > 0.0).cast<double>()).matrix();  // (B, 256)
    grads_[0] = x_.transpose() * gh;
    grads_[1] = gh.colwise().sum();
  }

  std::vector<Matrix>& params() { return params_; }
  std::vector<Matrix>& grads() { return grads_; }

 private:
  std::vector<Matrix> params_, grads_;
  Matrix x_, h_, a_;  // the last forward's input (B, 784), pre-activation and activation (B, 256)
  SoftmaxCrossEntropy loss_;
};

// A row-major matrix's storage as one vector, and back.
inline Vector flat(const Matrix& m) { return Eigen::Map<const Vector>(m.data(), m.size()); }
inline void unflat(const Vector& v, Matrix& m) { Eigen::Map<Vector>(m.data(), m.size()) = v; }

// What every extension trainer starts from: the data set and this rank's
// own block of its rows, batch_size / ranks of them a step.
struct OwnRows {
  SharedDataset data;
  LocalRows local;
  long local_batch = 0;
};

// The training flags every extension trainer takes (its own come after).
inline TrainingFlags own_rows_flags(Flags& flags, double default_lr, const char* lr_help) {
  return add_training_flags(flags, "global batch; each rank takes batch_size / ranks rows of its own", default_lr,
                            lr_help);
}

// Parses the flags and checks those every extension trainer shares (one
// epoch at least, a batch row per rank) and `usable` (the trainer's own,
// `need` saying which on rank 0); then reads the data set and takes this
// rank's block. Returns the exit status where the program stops now.
inline std::optional<int> start_own_rows(const char* program, Flags& flags, const TrainingFlags& training,
                                         Communicator& world, int argc, char** argv, std::optional<OwnRows>& out,
                                         const std::function<bool()>& usable = [] { return true; },
                                         const char* need = "") {
  if (const int status = parse_training_flags(flags, training, world, argc, argv); status >= 0) return status;
  if (training.epochs < 1 || training.batch < world.size() || !usable()) {
    if (world.rank() == 0)
      std::fprintf(stderr, "%s: need --num_epoch >= 1, --batch_size >= ranks%s\n", program, need);
    return 2;
  }
  SharedDataset data = open_dataset(training.data_dir, training.train_samples, training.test_samples);
  LocalRows local = own_block(data, world.size(), world.rank());
  out.emplace(OwnRows{std::move(data), std::move(local), training.batch / world.size()});
  return std::nullopt;
}

// One way of training, as each extension trainer runs each of its ways:
// `rows` (this rank's block, `local_batch` rows a step) for the epochs the
// flags say, the learning rate falling linearly. `update(lr)` applies the
// step's gradients (model.grads()) to the parameters; `evaluate` gives the
// test accuracy the loop records and prints after each epoch, followed by
// `accuracy_of` ("" or " (the ranks' average model)").
inline void train_mlp(Mlp& model, const TrainingFlags& training, const LocalRows& rows, long local_batch, bool lead,
                      const std::function<void(double lr)>& update, const std::function<double()>& evaluate,
                      const char* accuracy_of = "") {
  const long mine = static_cast<long>(rows.x.rows());
  Progress progress;
  TrainOptions options = training_options(training, progress, mine, local_batch);
  const long total = training.epochs * ((mine + local_batch - 1) / local_batch);
  LoopSteps steps;
  steps.train = [&](const Matrix& xb, const Labels& yb, long iteration) {
    Iteration done = forward_pass(model, xb, yb);
    model.backward();
    done.lr = linear_lr(training.init_lr, iteration, total);
    update(done.lr);
    return done;
  };
  steps.evaluate = evaluate;
  options.on_epoch = [accuracy_of](int epoch, double accuracy, double seconds) {
    std::printf("epoch %d: Test Acc: %.4f%s   (%.2f s of training)\n", epoch + 1, accuracy, accuracy_of, seconds);
    std::fflush(stdout);
  };
  LoopRecord record;
  run_epochs(rows.x, rows.y, local_batch, options, lead, steps, record);
}

}  // namespace dtrain
