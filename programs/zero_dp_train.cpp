// zero_dp_train: trains the 784-256-10 MLP with ZeRO stage 3 (parameters,
// gradients and Adam state sharded over the dp ranks) on the kit's data set.
//   make train-zero DP=4
//   tools/kitrun -n 4 build/student/zero_dp_train --dp_size 4 --num_train_samples 8000
// Uses your split_data (Part 1), your ZeRO layer (Part 8) and your ZeroDPAdam (Part 9).
#include <cstdio>
#include <exception>

#include "cli.h"
#include "program_main.h"
#include "comm_runtime.h"
#include "data_parallel_preprocess.h"
#include "idx_dataset.h"
#include "progress.h"
#include "run_report.h"
#include "zero_model.h"

using namespace dtrain;

namespace {

double kib(std::uint64_t bytes) { return static_cast<double>(bytes) / 1024.0; }

int run(Communicator& world, int argc, char** argv) {
  Flags flags("zero_dp_train", "Trains the MLP with ZeRO stage 3 over all ranks (mpirun -n = --dp_size).");
  int& dp_size = flags.add_int("--dp_size", world.size(), "data-parallel size; must equal the number of ranks");
  const TrainingFlags training = add_training_flags(
      flags, "global batch (as the original assignment's zero_dp_train.py); each rank takes batch_size / dp_size rows", kAdamInitLr,
      "initial Adam learning rate (x0.9 every 100/dp iterations)");
  const auto& [epochs, batch, init_lr, train_samples, test_samples, data_dir, report_path, trace_path, check] = training;
  if (const int status = parse_training_flags(flags, training, world, argc, argv); status >= 0) return status;

  const bool lead = world.rank() == 0;
  if (dp_size != world.size()) {
    if (lead) std::fprintf(stderr, "zero_dp_train: --dp_size must equal the number of ranks: expected %d, got %d\n",
                           world.size(), dp_size);
    return 2;
  }
  if (epochs < 1 || batch < dp_size) {
    if (lead) std::fprintf(stderr, "zero_dp_train: need --num_epoch >= 1 and --batch_size >= dp_size (%d), got %d and %d\n",
                           dp_size, epochs, batch);
    return 2;
  }

  SharedDataset data = open_dataset(data_dir, train_samples, test_samples);
  const auto [x_local, y_local, usable] = take_local_rows(data, 1, dp_size, world.rank());
  if (lead)
    std::printf("zero_dp_train: dp_size %d, %ld training rows (%ld per rank), %ld test rows, batch %d, lr %g, data %s\n",
                dp_size, usable, static_cast<long>(x_local.rows()), static_cast<long>(data.test_x.rows()), batch,
                init_lr, data.dir.c_str());

  const ModelHeap model_heap;
  ZeroMLP model(world, dp_size);
  LayerProfiler profiler;
  model.profiler = &profiler;
  Progress progress;
  TrainOptions options = training_options(training, progress, x_local.rows(), batch / dp_size);
  const double started = CommAccess::wall_time();
  const ZeroTrainResult result = train_zero(model, world, x_local, y_local, data.test_x, data.test_y, options);
  const double seconds = CommAccess::wall_time() - started;
  const double model_heap_bytes = model_heap.max_over_ranks(world);  // before any measuring run
  finish_trace(world, training, world.bytes_transferred());  // before the measuring step below

  const long probe = std::min<long>(batch / dp_size, x_local.rows());
  const StepVolume volume = measure_step_volume(model, world, RowSource(x_local).rows(0, probe), y_local.head(probe));
  if (lead) {
    for (size_t e = 0; e < result.test_accuracy.size(); ++e)
      std::printf("epoch %zu: Test Acc: %.4f\n", e + 1, result.test_accuracy[e]);
    std::printf("\ntime: %.2f s for %ld iterations\n", seconds, result.iterations);
    std::printf("memory per rank (parameters + gradients + Adam moments): %.1f KiB sharded vs %.1f KiB for one "
                "unsharded replica = 1/%.2f\n",
                kib(result.footprint.sharded_bytes), kib(result.footprint.replica_bytes),
                static_cast<double>(result.footprint.replica_bytes) / static_cast<double>(result.footprint.sharded_bytes));
    std::printf("bytes per rank per step: ZeRO-3 %.1f KiB vs data-parallel allreduce %.1f KiB = %.3fx\n",
                kib(volume.zero_bytes), kib(volume.data_parallel_bytes), volume.ratio());
    print_layer_peaks(profiler);
  }
  RunReport report = common_report(result.test_accuracy, result.epoch_seconds, result.iterations, usable,
                                   static_cast<long>(data.test_x.rows()), model_heap_bytes, data.dir,
                                   result.collective_seconds);
  double params = 0, grads = 0;
  for (const ZeroDPStage3FCLayer* layer : model.layers()) {
    params += 8.0 * static_cast<double>(layer->w_shard.size() + layer->b_shard.size());
    grads += 8.0 * static_cast<double>(layer->grad_w_shard.size() + layer->grad_b_shard.size());
  }
  report.final_loss = result.final_loss;
  set_memory(report, params, grads,
             static_cast<double>(result.footprint.sharded_bytes) - params - grads);  // Adam's m and v
  report.strategy = "zero3";
  report.dp_size = dp_size;
  report.dp_bytes_per_iteration =
      static_cast<double>(result.train_bytes) / static_cast<double>(std::max(1L, result.iterations));
  return finish_run(world, report_path, report);
}

}  // namespace

int main(int argc, char** argv) { return program_main("zero_dp_train", argc, argv, run); }
