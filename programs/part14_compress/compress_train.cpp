// compress_train (Part 14, an extension part): trains the 784-256-10 MLP on
// P ranks three times, from the same weights and on the same rows (each
// rank its own block of them): with data parallelism's dense allreduce of
// every gradient; with your top-k compression and error feedback, each
// rank sending only k = 1% of each gradient's entries (their indices and
// values) through your sparse_allreduce_mean; and with top-k alone, the
// entries not sent thrown away. After each epoch it prints the test
// accuracy, and at the end what one rank sent a step.
//   make train-compress DP=4
//   tools/kitrun -n 4 build/student/compress_train --num_epoch 2 --keep 0.05
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "cli.h"
#include "compress.h"
#include "flat_mlp.h"
#include "program_main.h"

using namespace dtrain;

namespace {

constexpr std::uint64_t kSeed = 14442;

enum class Sending { Dense, TopkWithFeedback, TopkAlone };

struct Way {
  Way(const char* way_name, Sending how) : name(way_name), sending(how) {}
  const char* name;
  Sending sending;
  Mlp model{kSeed};
  std::vector<ErrorFeedback> feedback;  // one per parameter (TopkWithFeedback)
  std::uint64_t step_bytes = 0;         // what this rank sent in its last step
};

}  // namespace

int run(Communicator& world, int argc, char** argv) {
  Flags flags("compress_train", "Trains the MLP with dense gradients and with your top-k compression, side by side.");
  const TrainingFlags training = own_rows_flags(
      flags, kSgdInitLr, "initial SGD learning rate on the ranks' mean gradient (falls linearly to 0 over the run)");
  const double& keep = flags.add_double("--keep", 0.01, "the share of each gradient's entries a rank sends, in (0, 1]");
  std::optional<OwnRows> rows;
  if (const auto status = start_own_rows("compress_train", flags, training, world, argc, argv, rows,
                                         [&] { return keep > 0 && keep <= 1; }, ", 0 < --keep <= 1"))
    return *status;
  auto& [data, local, local_batch] = *rows;
  const bool lead = world.rank() == 0;
  const int ranks = world.size();
  const long mine = local.usable / ranks;
  if (lead)
    std::printf("compress_train: %d ranks, MLP %d-%d-%d, batch %d (%ld rows a rank), lr %g, top-k keeps %g%% of "
                "each gradient, %ld training rows (%ld a rank), %ld test rows, data %s\n",
                ranks, kFeatures, kHidden, kClasses, training.batch, local_batch, training.init_lr, 100 * keep,
                local.usable, mine, static_cast<long>(data.test_x.rows()), data.dir.c_str());

  std::vector<Way> ways = {{"dense (allreduce of every gradient)", Sending::Dense},
                           {"top-k with error feedback (your compress_with_feedback)", Sending::TopkWithFeedback},
                           {"top-k alone (your topk; what is not sent is lost)", Sending::TopkAlone}};
  for (Way& way : ways) {
    Mlp& model = way.model;
    for (const Matrix& w : model.params()) way.feedback.emplace_back(static_cast<long>(w.size()));
    if (lead) std::printf("\n== %s\n", way.name);
    auto update = [&](double lr) {
      const std::uint64_t before = world.bytes_transferred();
      for (std::size_t p = 0; p < model.params().size(); ++p) {
        Matrix& w = model.params()[p];
        const Matrix& g = model.grads()[p];
        if (way.sending == Sending::Dense) {
          Matrix sum(g.rows(), g.cols());
          world.allreduce(g, sum);
          w -= lr / ranks * sum;
          continue;
        }
        const long k = std::max(1L, static_cast<long>(keep * static_cast<double>(g.size())));
        const Sparse sent = way.sending == Sending::TopkWithFeedback ? compress_with_feedback(way.feedback[p], flat(g), k)
                                                                     : topk(flat(g), k);
        Vector flat_w = flat(w);
        flat_w -= lr * sparse_allreduce_mean(sent, world);
        unflat(flat_w, w);
      }
      way.step_bytes = world.bytes_transferred() - before;
    };
    train_mlp(model, training, local, local_batch, lead, update,
              [&] { return lead ? evaluate(model, data.test_x, data.test_y) : 0.0; });
    if (lead)
      std::printf("   each step, rank 0 sent %.0f bytes in %s\n", static_cast<double>(way.step_bytes),
                  way.sending == Sending::Dense ? "4 allreduce calls (one for each parameter)"
                                                : "8 allgather calls (each parameter's indices, then its values)");
  }
  return 0;
}

int main(int argc, char** argv) { return program_main("compress_train", argc, argv, run); }
