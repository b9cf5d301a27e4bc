// unified_train: trains the 784-256-10 MLP with model parallelism (naive or
// Megatron) inside each data-parallel group, on the kit's data set.
//   make train MP=2 DP=4                    (naive)
//   make train MP=4 DP=2 MEGATRON=1
//   tools/kitrun -n 8 build/student/unified_train --mp_size 2 --dp_size 4
// Uses your split_data (Part 1) and Parts 2-7. Ranks are model-parallel-major.
#include <cstdio>

#include "cli.h"
#include "comm_runtime.h"
#include "data_parallel_preprocess.h"
#include "idx_dataset.h"
#include "program_main.h"
#include "progress.h"
#include "run_report.h"
#include "tp_training.h"

using namespace dtrain;

namespace {

double kib(double bytes) { return bytes / 1024.0; }

int run(Communicator& world, int argc, char** argv) {
  Flags flags("unified_train", "Trains the MLP with mp_size-way model parallelism in each of dp_size data-parallel groups.");
  int& mp_size = flags.add_int("--mp_size", 1, "model-parallel size");
  int& dp_size = flags.add_int("--dp_size", 1, "data-parallel size (mp_size x dp_size = ranks)");
  bool& megatron = flags.add_switch("--megatron-mp", "Megatron-style model parallelism (default: naive)");
  const TrainingFlags training = add_training_flags(
      flags, "global batch; each dp group takes batch_size / dp_size rows", kSgdInitLr,
      "initial SGD learning rate on the batch's mean gradient (falls linearly to 0 over the run); the original "
      "Python assignment's --init_lr 0.01 stepped on the summed gradient: 0.01 x batch_size here");
  const auto& [epochs, batch, init_lr, train_samples, test_samples, data_dir, report_path, trace_path, check] = training;
  if (const int status = parse_training_flags(flags, training, world, argc, argv); status >= 0) return status;

  const bool lead = world.rank() == 0;
  const ParallelConfig config{mp_size, dp_size, megatron};
  if (const std::string problem = config_problem(config, world.size()); !problem.empty()) {
    if (lead) std::fprintf(stderr, "unified_train: %s\n", problem.c_str());
    return 2;
  }
  if (epochs < 1 || batch < dp_size) {
    if (lead) std::fprintf(stderr, "unified_train: need --num_epoch >= 1 and --batch_size >= dp_size, got %d and %d\n",
                           epochs, batch);
    return 2;
  }

  SharedDataset data = open_dataset(data_dir, train_samples, test_samples);
  const auto [x_local, y_local, usable] = take_local_rows(data, mp_size, dp_size, world.rank());
  if (lead)
    std::printf("unified_train: %s mp_size %d x dp_size %d, %ld training rows (%ld per dp group), %ld test rows, "
                "batch %d, lr %g, data %s\n",
                megatron ? "Megatron" : "naive", mp_size, dp_size, usable, static_cast<long>(x_local.rows()),
                static_cast<long>(data.test_x.rows()), batch, init_lr, data.dir.c_str());

  const ModelHeap model_heap;
  MLP model(world, config);
  LayerProfiler profiler;
  model.profiler = &profiler;
  Progress progress;
  TrainOptions options = training_options(training, progress, x_local.rows(), batch / dp_size);
  options.on_epoch = [](int epoch, double accuracy, double seconds) {
    std::printf("epoch %d: Test Acc: %.4f   (%.2f s of training)\n", epoch + 1, accuracy, seconds);
    std::fflush(stdout);
  };
  const TpTrainResult result = train_tp(model, config, x_local, y_local, data.test_x, data.test_y, options);
  const double model_heap_bytes = model_heap.max_over_ranks(world);  // before any measuring run
  finish_trace(world, training,
               model.fc1.info.mp_comm.bytes_transferred() + model.fc1.info.dp_comm.bytes_transferred() +
                   model.fc2.info.mp_comm.bytes_transferred() + model.fc2.info.dp_comm.bytes_transferred());

  const double its = static_cast<double>(std::max(1L, result.iterations));
  if (lead) {
    std::printf("\ncommunication of rank 0 during training (%ld iterations):\n", result.iterations);
    std::printf("  %-6s %16s %16s %18s %18s\n", "layer", "MP KiB total", "DP KiB total", "MP KiB/iteration",
                "DP KiB/iteration");
    const std::pair<const char*, LayerTraffic> layers[] = {{"fc1", result.fc1}, {"fc2", result.fc2}};
    for (const auto& [name, t] : layers)
      std::printf("  %-6s %16.1f %16.1f %18.2f %18.2f\n", name, kib(t.mp_bytes), kib(t.dp_bytes), kib(t.mp_bytes) / its,
                  kib(t.dp_bytes) / its);
    std::printf("\n");
    print_layer_peaks(profiler);
    std::printf("\n");
  }
  RunReport report = common_report(result.test_accuracy, result.epoch_seconds, result.iterations, usable,
                                   static_cast<long>(data.test_x.rows()), model_heap_bytes, data.dir,
                                   result.collective_seconds);
  double params = 0, grads = 0;
  for (const FCLayer* layer : {&model.fc1, &model.fc2}) {
    params += 8.0 * static_cast<double>(layer->w.size() + layer->b.size());
    grads += 8.0 * static_cast<double>(layer->grad_w.size() + layer->grad_b.size());
  }
  set_memory(report, params, grads, 0.0);  // SGD keeps no state
  report.final_loss = result.losses.empty() ? 0.0 : result.losses.back();
  report.strategy = mp_size == 1 ? "dp" : megatron ? "megatron" : "naive";
  report.mp_size = mp_size;
  report.dp_size = dp_size;
  report.mp_bytes_per_iteration = static_cast<double>(result.fc1.mp_bytes + result.fc2.mp_bytes) / its;
  report.dp_bytes_per_iteration = static_cast<double>(result.fc1.dp_bytes + result.fc2.dp_bytes) / its;
  return finish_run(world, report_path, report);
}

}  // namespace

int main(int argc, char** argv) { return program_main("unified_train", argc, argv, run); }
