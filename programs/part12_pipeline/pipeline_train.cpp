// pipeline_train (Part 12, an extension part): trains the K-layer MLP (784,
// then K-1 hidden layers of 256, then 10) with pipeline parallelism, one
// layer per rank, K = the number of ranks, each batch cut into M
// micro-batches and run by your pipeline_step under GPipe or 1F1B.
//   make train-pipeline K=4 M=8 SCHEDULE=1f1b
//   tools/kitrun -n 4 build/student/pipeline_train --micro_batches 8 --schedule gpipe
// After training it measures the bubble from the ledger's spans (the share
// of a step each stage spends outside forward and backward) and each
// stage's peak stash under both schedules.
#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli.h"
#include "pipeline_calls.h"
#include "pipeline_runtime.h"
#include "program_main.h"
#include "run_report.h"

using namespace dtrain;

namespace {

constexpr std::uint64_t kSeed = 15442;
constexpr int kMeasuredSteps = 20;
// The pipeline of equal stages the bubble is also measured on, as the
// formula assumes it: layers of 512x512 and batches of 256 rows (32 rows a
// micro-batch at M = 8), so that a stage's call takes a millisecond or more
// and a message, some 40 us here, a few percent of it.
constexpr int kEqualWidth = 512;
constexpr long kEqualBatch = 256;

const char* name_of(Schedule s) { return s == Schedule::GPipe ? "gpipe" : "1f1b"; }

// Inference through the stages with the framework's own messages (no
// stashes, no student code): stage 0 reads the rows, each stage applies its
// layer and hands the result on, the last counts the right answers.
// evaluate() (training_loop.h) drives it a chunk of rows at a time.
struct PipelineInference {
  PipelineStage& stage;
  Communicator& comm;
  long right = 0;  // the last stage's, in the chunk just run
  long rows = 0;
  void forward(const Matrix& xb, const Labels& yb) {
    const bool last = stage.stage == stage.num_stages - 1;
    rows = static_cast<long>(yb.size());
    Matrix a;  // (rows, in_dim)
    if (stage.stage == 0) {
      a = xb;
    } else {
      a.resize(rows, stage.in_dim);
      comm.recv(a, stage.stage - 1, 0);
    }
    Matrix z = a * PipelineAccess::w(stage);  // (rows, out_dim)
    z.rowwise() += PipelineAccess::b(stage).row(0);
    if (!last) {
      comm.send(Matrix(z.cwiseMax(0.0)), stage.stage + 1, 0);
      right = 0;
      return;
    }
    right = 0;
    for (long i = 0; i < rows; ++i) {
      Eigen::Index best = 0;
      z.row(i).maxCoeff(&best);
      right += best == yb(i) ? 1 : 0;
    }
  }
  double accuracy() const { return rows ? static_cast<double>(right) / static_cast<double>(rows) : 0.0; }
};

// The same number on every rank: the sum over ranks of what each holds.
double summed(Communicator& world, double mine) {
  Vector v(1), total(1);
  v(0) = mine;
  world.allreduce(v, total);
  return total(0);
}

// The bubble of `steps` steps of `schedule`, measured from the ledger's spans: each stage's forward and backward time
// per call, and the share of a step it spends outside them. No updates.
// Collective: every stage's figures, on every stage.
struct Bubble {
  double step = 0;                       // seconds
  std::vector<double> forward, backward;  // per stage: seconds per call
  std::vector<double> idle;               // per stage: the share of a step
  int busiest() const { return static_cast<int>(std::min_element(idle.begin(), idle.end()) - idle.begin()); }
};

template <typename NextBatch>  // void(long step): gives the stage step's batch
Bubble measure_bubble(PipelineStage& stage, Communicator& world, Schedule schedule, long steps, NextBatch next_batch) {
  const bool was_tracing = ledger::tracing();
  ledger::set_tracing(true);
  CommAccess::rendezvous(world);  // the stages start the first measured step together
  ledger::take_entries();
  for (long i = 0; i < steps; ++i) {
    next_batch(i);
    student::pipeline_step(stage, world, schedule);
  }
  double forward = 0, backward = 0, first = 0, last = 0;
  long forwards = 0, backwards = 0;
  for (const LedgerEntry& e : ledger::take_entries()) {
    const bool f = e.phase == "forward";
    if (!f && e.phase != "backward") continue;
    (f ? forward : backward) += e.end - e.start;
    (f ? forwards : backwards) += 1;
    first = forwards + backwards == 1 ? e.start : std::min(first, e.start);
    last = std::max(last, e.end);
  }
  ledger::set_tracing(was_tracing);
  const auto every = from_every_rank(world, {(forward + backward) / static_cast<double>(steps),
                                             forward / static_cast<double>(std::max(1L, forwards)),
                                             backward / static_cast<double>(std::max(1L, backwards)), last - first});
  // Stage 0 starts each step and ends it (its last backward is the step's
  // last call), and starts the next at once: its spans tile the steps.
  Bubble b;
  b.step = every[0][3] / static_cast<double>(steps);
  for (const auto& r : every) {
    b.forward.push_back(r[1]);
    b.backward.push_back(r[2]);
    b.idle.push_back(1.0 - r[0] / b.step);
  }
  return b;
}

std::string fixed3(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f", v);
  return text;
}

int run(Communicator& world, int argc, char** argv) {
  Flags flags("pipeline_train",
              "Trains the K-layer MLP with pipeline parallelism, one layer per rank (K = the number of ranks).");
  int& micro_batches = flags.add_int("--micro_batches", 8, "M: micro-batches per batch");
  std::string& schedule_name = flags.add_string("--schedule", "1f1b", "gpipe or 1f1b");
  const TrainingFlags training = add_training_flags(
      flags, "rows per step, cut into M micro-batches (the first batch_size % M one row larger)", kSgdInitLr,
      "initial SGD learning rate on the batch's mean gradient (falls linearly to 0 over the run)");
  // 64, not the trainers' 60: M = 1, 2, 4, 8 and 16 (make explore's) all cut it into equal micro-batches.
  training.batch = 64;
  const auto& [epochs, batch, init_lr, train_samples, test_samples, data_dir, report_path, trace_path, check] = training;
  if (const int status = parse_training_flags(flags, training, world, argc, argv); status >= 0) return status;

  const int stages = world.size(), k = world.rank();
  const bool lead = k == 0, last = k == stages - 1;
  if (schedule_name != "gpipe" && schedule_name != "1f1b") {
    if (lead) std::fprintf(stderr, "pipeline_train: --schedule must be gpipe or 1f1b, got '%s'\n", schedule_name.c_str());
    return 2;
  }
  const Schedule schedule = schedule_name == "gpipe" ? Schedule::GPipe : Schedule::OneFOneB;
  const Schedule other = schedule == Schedule::GPipe ? Schedule::OneFOneB : Schedule::GPipe;
  if (epochs < 1 || micro_batches < 1 || batch < micro_batches) {
    if (lead)
      std::fprintf(stderr, "pipeline_train: need --num_epoch >= 1 and 1 <= --micro_batches <= --batch_size, got %d, %d "
                   "and %d\n", epochs, micro_batches, batch);
    return 2;
  }

  SharedDataset data = open_dataset(data_dir, train_samples, test_samples);
  const long usable = data.train_x.rows() / batch * batch;  // whole batches: every step cuts into M alike
  if (usable == 0) {
    if (lead) std::fprintf(stderr, "pipeline_train: %ld training rows make no batch of %d\n",
                           static_cast<long>(data.train_x.rows()), batch);
    return 2;
  }
  // Stage 0 reads the pixels; the others need only the labels (the last
  // stage's loss) and the row count, so their x has no columns.
  const Matrix x = lead ? RowSource(data.train_x).rows(0, usable) : Matrix(usable, 0);  // (usable, 784 or 0)
  const Labels y = data.train_y.head(usable);
  data.train_x = PixelFile();
  const std::vector<int> dims = pipeline_dims(stages);
  if (lead) {
    std::string model;
    for (int d : dims) model += (model.empty() ? "" : "-") + std::to_string(d);
    const int small = batch / micro_batches;
    const std::string rows = std::to_string(small) + (batch % micro_batches ? " or " + std::to_string(small + 1) : "");
    std::printf("pipeline_train: K=%d stages (%s, one layer each), M=%d micro-batches of %s rows, %s, batch %d, "
                "lr %g, %ld training rows, %ld test rows, data %s\n",
                stages, model.c_str(), micro_batches, rows.c_str(), name_of(schedule), batch, init_lr, usable,
                static_cast<long>(data.test_x.rows()), data.dir.c_str());
  }

  const ModelHeap model_heap;
  const PipelineWeights weights = pipeline_weights(dims, kSeed);
  PipelineStage stage = PipelineAccess::make(k, weights, x.topRows(batch), y.head(batch), micro_batches);
  Progress progress;
  TrainOptions options = training_options(training, progress, usable, batch);
  options.on_epoch = [](int epoch, double accuracy, double seconds) {
    std::printf("epoch %d: Test Acc: %.4f   (%.2f s of training)\n", epoch + 1, accuracy, seconds);
    std::fflush(stdout);
  };
  const long total = epochs * (usable / batch);
  PipelineInference inference{stage, world};
  LoopSteps steps;
  steps.train = [&](const Matrix& xb, const Labels& yb, long iteration) {
    PipelineAccess::next_batch(stage, xb, yb);
    student::pipeline_step(stage, world, schedule);
    const double lr = linear_lr(init_lr, iteration, total);
    {
      const ledger::Phase phase("optimizer");
      PipelineAccess::w(stage) -= lr * PipelineAccess::grad_w(stage);
      PipelineAccess::b(stage) -= lr * PipelineAccess::grad_b(stage);
    }
    const double rows = static_cast<double>(yb.size());
    return Iteration{PipelineAccess::loss(stage), static_cast<double>(PipelineAccess::correct(stage)) / rows, lr};
  };
  steps.evaluate = [&] {
    const ledger::Phase phase("evaluate");
    const double mine = evaluate(inference, data.test_x, data.test_y);
    return summed(world, last ? mine : 0.0);  // the last stage alone counts
  };
  LoopRecord record;
  // The loss lives on the last stage: it reports the progress and the epochs.
  run_epochs(x, y, batch, options, last, steps, record);
  const double model_heap_bytes = model_heap.max_over_ranks(world);
  finish_trace(world, training, world.bytes_transferred());  // before the measuring steps below

  // The bubble, on this model and on a pipeline of equal stages.
  const long measured = std::min<long>(kMeasuredSteps, usable / batch);
  const Bubble bubble = measure_bubble(stage, world, schedule, measured, [&](long i) {
    PipelineAccess::next_batch(stage, x.middleRows(i * batch, batch), y.segment(i * batch, batch));
  });
  // The formula's pipeline: equal stages, and micro-batches large enough
  // that computing outweighs a message's fixed cost. One batch, again and again.
  const long equal_rows = std::min<long>(kEqualBatch, usable);
  Matrix equal_x(equal_rows, lead ? kEqualWidth : 0);  // (equal_rows, width): the pixels, their columns repeated
  for (Eigen::Index j = 0; j < equal_x.cols(); ++j) equal_x.col(j) = x.col(j % x.cols()).head(equal_rows);
  const Labels equal_y = y.head(equal_rows);
  PipelineStage equal = PipelineAccess::make(k, pipeline_weights(std::vector<int>(stages + 1, kEqualWidth), kSeed),
                                             equal_x, equal_y, micro_batches);
  const Bubble equal_bubble = measure_bubble(equal, world, schedule, measured,
                                             [&](long) { PipelineAccess::next_batch(equal, equal_x, equal_y); });
  const double formula = bubble_formula(stages, micro_batches);
  const ScheduleTimes played = play_schedule(schedule, micro_batches, bubble.forward, bubble.backward);

  // The stashes: those of the steps just measured, and of one step under the other schedule.
  const double stash_this = static_cast<double>(PipelineAccess::peak_stash_bytes(stage));
  const int stashes_this = PipelineAccess::peak_stashes(stage);
  PipelineAccess::next_batch(stage, x.topRows(batch), y.head(batch));
  student::pipeline_step(stage, world, other);
  const auto every = from_every_rank(world, {stash_this, static_cast<double>(stashes_this),
                                             static_cast<double>(PipelineAccess::peak_stash_bytes(stage)),
                                             static_cast<double>(PipelineAccess::peak_stashes(stage))});
  const int rows0 = stage.rows(0);
  const int busiest = bubble.busiest(), equal_busiest = equal_bubble.busiest();
  if (lead) {
    std::printf("\nbubble: the share of a step the busiest stage idles (it sets the pace; the others idle more because "
                "they have less to do),\nfrom the ledger's forward and backward spans over %ld steps after training; "
                "(K-1)/(M+K-1) = %.3f\n", measured, formula);
    std::string shares;
    for (double share : equal_bubble.idle) shares += (shares.empty() ? "" : " ") + fixed3(share);
    std::printf("  equal stages (%d layers of %dx%d, batches of %ld rows, no training): %.3f (stage %d; every stage: "
                "%s), %.2f ms a step\n", stages, kEqualWidth, kEqualWidth, equal_rows, equal_bubble.idle[equal_busiest],
                equal_busiest, shares.c_str(), equal_bubble.step * 1e3);
    std::printf("  this model: %.3f (stage %d), played out %.3f; %.2f ms a step\n", bubble.idle[busiest], busiest,
                played.idle_share[busiest], bubble.step * 1e3);
    std::printf("  %-5s %-9s %11s %12s %9s %12s\n", "stage", "layer", "forward ms", "backward ms", "idle", "played out");
    for (int s = 0; s < stages; ++s)
      std::printf("  %-5d %-9s %11.3f %12.3f %9.3f %12.3f\n", s,
                  (std::to_string(dims[s]) + "x" + std::to_string(dims[s + 1])).c_str(), bubble.forward[s] * 1e3,
                  bubble.backward[s] * 1e3, bubble.idle[s], played.idle_share[s]);
    std::printf("  played out: the schedule run with these stages' times and messages that cost nothing. The formula "
                "assumes equal stages; this model's first layer works most, its last least\n");
    std::printf("\npeak stash per stage (inputs and pre-activations kept for backward; a micro-batch of %d rows):\n",
                rows0);
    std::printf("  %-5s %22s %22s\n", "stage", name_of(schedule), name_of(other));
    for (int s = 0; s < stages; ++s) {
      const auto& r = every[static_cast<size_t>(s)];
      std::printf("  %-5d %6.0f (formula %2d) %6.1f KiB %6.0f (formula %2d) %6.1f KiB\n", s, r[1],
                  stash_formula(schedule, stages, s, micro_batches), r[0] / 1024.0, r[3],
                  stash_formula(other, stages, s, micro_batches), r[2] / 1024.0);
    }
    std::printf("\n");
  }

  RunReport report = common_report(record.test_accuracy, record.epoch_seconds, record.iterations, usable,
                                   static_cast<long>(data.test_x.rows()), model_heap_bytes, data.dir,
                                   record.collective_seconds);
  report.strategy = "pipeline";
  nlohmann::json stash_of = nlohmann::json::object();
  for (const Schedule s : {schedule, other}) {
    const size_t at = s == schedule ? 0 : 2;
    nlohmann::json bytes = nlohmann::json::array(), count = nlohmann::json::array(), formula_count = bytes;
    for (int r = 0; r < stages; ++r) {
      bytes.push_back(every[static_cast<size_t>(r)][at]);
      count.push_back(every[static_cast<size_t>(r)][at + 1]);
      formula_count.push_back(stash_formula(s, stages, r, micro_batches));
    }
    stash_of[name_of(s)] = {{"bytes", bytes}, {"micro_batches", count}, {"formula_micro_batches", formula_count}};
  }
  report.extra["pipeline"] = {{"stages", stages},
                              {"micro_batches", micro_batches},
                              {"schedule", name_of(schedule)},
                              {"step_seconds", bubble.step},
                              {"idle_measured", bubble.idle},
                              {"idle_played", played.idle_share},
                              {"busiest_stage", busiest},
                              {"bubble_measured", bubble.idle[busiest]},
                              {"bubble_played", played.idle_share[busiest]},
                              {"idle_equal_stages", equal_bubble.idle},
                              {"bubble_equal_stages", equal_bubble.idle[equal_busiest]},
                              {"bubble_formula", formula},
                              {"forward_seconds", bubble.forward},
                              {"backward_seconds", bubble.backward},
                              {"stash", stash_of}};
  return finish_run(world, report_path, report);
}

}  // namespace

int main(int argc, char** argv) { return program_main("pipeline_train", argc, argv, run); }
