// decentral_train (Part 15, an extension part): trains the 784-256-10 MLP
// on P ranks twice, from the same weights and on the same rows (each rank
// its own block of them): with data parallelism, an allreduce of every
// gradient each step, so that the ranks hold one model; and with your
// decentralized_sgd_step on every parameter, so that each rank keeps a
// model of its own, mixed with its two ring neighbours' each step. After
// each epoch it prints both test accuracies (decentralized: the ranks'
// average model's, and rank 0's own), the consensus distance (how far the
// ranks' models are from their average), and what one rank sends a step.
//   make train-decentral DP=4
//   tools/kitrun -n 4 build/student/decentral_train --num_epoch 2
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "cli.h"
#include "decentral.h"
#include "flat_mlp.h"
#include "program_main.h"

using namespace dtrain;

namespace {

constexpr std::uint64_t kSeed = 15442;

// The sum over the ranks of each parameter, divided by P: the ranks' average model.
Mlp average_of(Mlp& model, Communicator& world) {
  Mlp avg = model;
  for (std::size_t p = 0; p < model.params().size(); ++p) {
    Matrix sum(model.params()[p].rows(), model.params()[p].cols());
    world.allreduce(model.params()[p], sum);
    avg.params()[p] = sum / world.size();
  }
  return avg;
}

// sum_r ||w_r - avg||^2 / (P ||avg||^2), over every parameter: 0 when the ranks agree.
double consensus_distance(Mlp& model, Mlp& avg, Communicator& world) {
  double apart = 0, size = 0;
  for (std::size_t p = 0; p < model.params().size(); ++p) {
    apart += (model.params()[p] - avg.params()[p]).squaredNorm();
    size += avg.params()[p].squaredNorm();
  }
  Vector mine(1), all(1);  // (1)
  mine(0) = apart;
  world.allreduce(mine, all);
  return all(0) / world.size() / std::max(size, 1e-300);
}

struct Way {
  const char* name;
  bool decentralized;
  Mlp model{kSeed};
  std::uint64_t step_bytes = 0;  // what this rank sent in its last step
  long step_messages = 0;  // its calls of the communicator
};

}  // namespace

int run(Communicator& world, int argc, char** argv) {
  Flags flags("decentral_train",
              "Trains the MLP with data parallelism and with your decentralized SGD, side by side.");
  const TrainingFlags training = own_rows_flags(
      flags, kSgdInitLr, "initial SGD learning rate on each rank's mean gradient (falls linearly to 0 over the run)");
  std::optional<OwnRows> rows;
  if (const auto status = start_own_rows("decentral_train", flags, training, world, argc, argv, rows)) return *status;
  auto& [data, local, local_batch] = *rows;
  const bool lead = world.rank() == 0;
  const int ranks = world.size();
  const long mine = local.usable / ranks;
  const double init_lr = training.init_lr;
  if (lead)
    std::printf("decentral_train: %d ranks on a ring, MLP %d-%d-%d, batch %d (%ld rows a rank), lr %g, %ld "
                "training rows (%ld a rank), %ld test rows, data %s\n",
                ranks, kFeatures, kHidden, kClasses, training.batch, local_batch, init_lr, local.usable, mine,
                static_cast<long>(data.test_x.rows()), data.dir.c_str());

  for (Way way : {Way{"data parallel (allreduce)", false}, Way{"decentralized (your gossip)", true}}) {
    Mlp& model = way.model;
    if (lead) std::printf("\n== %s\n", way.name);
    auto update = [&](double lr) {
      const std::uint64_t before = world.bytes_transferred();
      for (std::size_t p = 0; p < model.params().size(); ++p) {
        Matrix& w = model.params()[p];
        if (way.decentralized) {
          Vector flat_w = flat(w);
          decentralized_sgd_step(flat_w, flat(model.grads()[p]), lr, world);
          unflat(flat_w, w);
        } else {
          Matrix sum(w.rows(), w.cols());
          world.allreduce(model.grads()[p], sum);
          w -= lr / ranks * sum;
        }
      }
      way.step_bytes = world.bytes_transferred() - before;
      way.step_messages = way.decentralized ? (ranks == 1 ? 0 : ranks == 2 ? 1 : 2) * 4 : 4;
    };
    // The accuracy the loop records: the ranks' average model's (the one model, in data parallelism).
    auto accuracy = [&] {
      Mlp avg = average_of(model, world);
      const double distance = consensus_distance(model, avg, world);
      const double own = way.decentralized && lead ? evaluate(model, data.test_x, data.test_y) : 0.0;
      const double of_average = lead ? evaluate(avg, data.test_x, data.test_y) : 0.0;
      if (lead) {
        std::printf("   consensus distance %.3g", distance);
        if (way.decentralized) std::printf(", rank 0's own model: Test Acc %.4f", own);
        std::printf("\n");
      }
      return of_average;
    };
    train_mlp(model, training, local, local_batch, lead, update, accuracy, " (the ranks' average model)");
    if (lead)
      std::printf("   each step, each rank made %ld %s; rank 0 sent %.0f bytes\n", way.step_messages,
                  way.decentralized ? "sendrecv calls (with its neighbours, for each of the 4 parameters)"
                                    : "allreduce calls (one for each of the 4 parameters)",
                  static_cast<double>(way.step_bytes));
  }
  return 0;
}

int main(int argc, char** argv) { return program_main("decentral_train", argc, argv, run); }
