// zero_stages (Part 16, an extension part): trains the 784-256-10 MLP on P
// ranks twice, from the same weights and on the same rows (each rank its own
// block of them), with all four parameters as one flat vector of N
// doubles: with your Zero1Adam, then your Zero2Adam. After each it prints
// the test accuracy, the bytes rank 0 sent in a step, and what a rank keeps
// between steps: the parameters (N), the gradient as the stage holds it
// (stage 1: the averaged gradient, whole; stage 2: its shard, S), and the
// moments as your optimizer keeps them. `make explore` sets these beside
// stage 3 (Parts 8-9) and the ZeRO paper's formulas.
//   tools/kitrun -n 4 build/student/zero_stages --num_train_samples 6000
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli.h"
#include "flat_mlp.h"
#include "program_main.h"
#include "zero12.h"

using namespace dtrain;

namespace {

constexpr std::uint64_t kSeed = 16442;

// The model's four parameters as one flat vector (N), and back.
Vector joined(const std::vector<Matrix>& parts) {
  long n = 0;
  for (const Matrix& m : parts) n += m.size();
  Vector out(n);  // (N)
  long at = 0;
  for (const Matrix& m : parts) out.segment(at, m.size()) = flat(m), at += m.size();
  return out;
}
void split(const Vector& all, std::vector<Matrix>& parts) {
  long at = 0;
  for (Matrix& m : parts) {
    Vector piece = all.segment(at, m.size());
    unflat(piece, m);
    at += m.size();
  }
}

// One stage's run: the figures the explorer reads.
template <class Adam>
nlohmann::json train_stage(int stage, Communicator& world, const TrainingFlags& training, SharedDataset& data,
                           const LocalRows& local, long local_batch, bool lead) {
  Mlp model{kSeed};
  Vector params = joined(model.params());  // (N)
  const long n = params.size();
  Adam optimizer(n, world, training.init_lr);
  std::uint64_t step_bytes = 0;
  if (lead) std::printf("\n== stage %d (your Zero%dAdam)\n", stage, stage);
  auto update = [&](double lr) {
    optimizer.lr = lr;
    const std::uint64_t before = world.bytes_transferred();
    optimizer.step(params, joined(model.grads()));
    step_bytes = world.bytes_transferred() - before;
    split(params, model.params());
  };
  std::vector<double> accuracy;
  train_mlp(model, training, local, local_batch, lead, update, [&] {
    accuracy.push_back(lead ? evaluate(model, data.test_x, data.test_y) : 0.0);
    return accuracy.back();
  });
  const ShardLayout l = shard_layout(n, world.size());
  const long gradient = stage == 1 ? n : l.shard;
  const long kept = n + gradient + optimizer.m.size() + optimizer.v.size();
  if (lead)
    std::printf("   each step, rank 0 sent %.0f bytes; a rank keeps %ld doubles: parameters %ld, gradient %ld, "
                "m %ld, v %ld\n", static_cast<double>(step_bytes), kept, n, gradient,
                static_cast<long>(optimizer.m.size()), static_cast<long>(optimizer.v.size()));
  return {{"stage", stage}, {"bytes_per_step", step_bytes}, {"kept_doubles", kept}, {"parameters", n},
          {"gradient", gradient}, {"m", optimizer.m.size()}, {"v", optimizer.v.size()},
          {"test_accuracy", accuracy.empty() ? 0.0 : accuracy.back()}};
}

}  // namespace

int run(Communicator& world, int argc, char** argv) {
  Flags flags("zero_stages", "Trains the MLP with your ZeRO stages 1 and 2 and prints what each sends and keeps.");
  const TrainingFlags training =
      own_rows_flags(flags, kAdamInitLr, "initial Adam learning rate (falls linearly to 0 over the run)");
  std::optional<OwnRows> rows;
  if (const auto status = start_own_rows("zero_stages", flags, training, world, argc, argv, rows)) return *status;
  auto& [data, local, local_batch] = *rows;
  const bool lead = world.rank() == 0;
  const int ranks = world.size();
  if (lead)
    std::printf("zero_stages: %d ranks, MLP %d-%d-%d as one flat vector, batch %d (%ld rows a rank), Adam lr %g, "
                "%ld training rows, %ld test rows, data %s\n",
                ranks, kFeatures, kHidden, kClasses, training.batch, local_batch, training.init_lr, local.usable,
                static_cast<long>(data.test_x.rows()), data.dir.c_str());
  nlohmann::json stages = nlohmann::json::array();
  stages.push_back(train_stage<Zero1Adam>(1, world, training, data, local, local_batch, lead));
  stages.push_back(train_stage<Zero2Adam>(2, world, training, data, local, local_batch, lead));
  if (!lead || training.report_path.empty()) return 0;
  std::FILE* f = std::fopen(training.report_path.c_str(), "w");
  const std::string text = nlohmann::json{{"zero_stages", {{"ranks", ranks}, {"stages", stages}}}}.dump(1) + "\n";
  const bool written = f != nullptr && std::fputs(text.c_str(), f) >= 0;
  if (f == nullptr || std::fclose(f) != 0 || !written) {
    std::fprintf(stderr, "zero_stages: could not write %s\n", training.report_path.c_str());
    return 1;
  }
  return 0;
}

int main(int argc, char** argv) { return program_main("zero_stages", argc, argv, run); }
