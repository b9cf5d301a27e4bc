// program_main.h: how the training programs end on an error.
#pragma once

#include <cstdio>
#include <exception>

#include "cli.h"
#include "comm_runtime.h"
#include "idx_dataset.h"
#include "not_implemented.h"
#include "progress.h"
#include "training_loop.h"

namespace dtrain {

// Runs `body` and turns an exception into a message and an exit status.
// Data errors and unfinished stubs happen on every rank alike, before any
// rank can be left waiting, so rank 0 reports them and every rank returns 1.
// Any other error may hit one rank in the middle of a collective: that rank
// reports it and ends the whole job, so no other rank waits forever.
template <typename Body>
int run_or_report(const char* program, Communicator& world, Body&& body) {
  try {
    return body();
  } catch (const DataError& e) {
    if (world.rank() == 0) std::fprintf(stderr, "%s: %s\n", program, e.what());
    return 1;
  } catch (const NotImplemented& e) {
    if (world.rank() == 0) std::fprintf(stderr, "%s: %s\n", program, e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: [rank %d] %s\n", program, world.rank(), e.what());
    std::fflush(stderr);
    MpiSession::abort_job(1);
  }
}

// The flags both trainers share, with the seed program's names.
struct TrainingFlags {
  int& epochs;
  int& batch;
  double& init_lr;
  int& train_samples;
  int& test_samples;
  std::string& data_dir;
  std::string& report_path;
};

inline TrainingFlags add_training_flags(Flags& flags, const char* batch_help, const char* lr_help) {
  return TrainingFlags{
      flags.add_int("--num_epoch", 1, "epochs"),
      flags.add_int("--batch_size", 60, batch_help),
      flags.add_double("--init_lr", 0.01, lr_help),
      flags.add_int("--num_train_samples", -1, "use the first N training samples (-1: all 60000)"),
      flags.add_int("--num_test_samples", -1, "use the first N test samples (-1: all 10000)"),
      flags.add_string("--data", "", "directory of the IDX files (default: see README)"),
      flags.add_string("--report", "", "also write a one-line JSON summary here (rank 0)")};
}

// The training options the flags give, with rank 0's progress on `progress`.
inline TrainOptions training_options(const TrainingFlags& f, Progress& progress, long local_rows, long local_batch) {
  TrainOptions options;
  options.epochs = f.epochs;
  options.global_batch = f.batch;
  options.init_lr = f.init_lr;
  options.report_every = progress.log_every((local_rows + local_batch - 1) / std::max(1L, local_batch));
  options.on_progress = [&progress](int epoch, long it, long per_epoch, double loss, double acc, double lr) {
    progress.update(epoch, it, per_epoch, loss, acc, lr);
  };
  return options;
}

// The whole main of a training program: MPI's scope, the world, and `run`
// (int run(Communicator&, int, char**)) under run_or_report.
template <typename Run>
int program_main(const char* program, int argc, char** argv, Run&& run) {
  MpiSession mpi(argc, argv);
  Communicator world = Communicator::world();
  return run_or_report(program, world, [&] { return run(world, argc, argv); });
}

}  // namespace dtrain
