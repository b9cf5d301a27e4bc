// program_main.h: how the training programs end on an error.
#pragma once

#include <cstdio>
#include <exception>
#include <vector>

#include "cli.h"
#include "comm_runtime.h"
#include "student_calls.h"
#include "data_parallel_preprocess.h"
#include "idx_dataset.h"
#include "layer_profiler.h"
#include "not_implemented.h"
#include "progress.h"
#include "trace.h"
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
  std::string& trace_path;
  bool& check_collectives;
};

inline TrainingFlags add_training_flags(Flags& flags, const char* batch_help, double default_lr, const char* lr_help) {
  return TrainingFlags{
      flags.add_int("--num_epoch", 1, "epochs"),
      flags.add_int("--batch_size", facts::kGlobalBatch, batch_help),
      flags.add_double("--init_lr", default_lr, lr_help),
      flags.add_int("--num_train_samples", -1, "use the first N training samples (-1: all 60000)"),
      flags.add_int("--num_test_samples", -1, "use the first N test samples (-1: all 10000)"),
      flags.add_string("--data", "",
                       "directory of the IDX files (default: $DTRAIN_DATA, then data/ in the kit, then "
                       "/usr/share/datasets/fashion-mnist)"),
      flags.add_string("--report", "", "also write a one-line JSON summary here (rank 0)"),
      flags.add_string("--trace", "",
                       "write every rank's collectives and training phases here, as one Chrome trace JSON "
                       "(open it in ui.perfetto.dev; python3 -m kit trace FILE draws it)"),
      flags.add_switch("--check-collectives",
                       "before each collective, check that every rank makes the same call (as the tests do)")};
}

// Parses the flags, then sets the ledger up as --trace and
// --check-collectives ask (collective when tracing: the hosts' clocks are
// compared). Returns the exit status if the program should stop now (--help,
// a bad flag), else -1.
inline int parse_training_flags(Flags& flags, const TrainingFlags& f, Communicator& world, int argc, char** argv) {
  if (const int status = flags.parse(argc, argv, world.rank()); status >= 0) return status;
  if (!f.trace_path.empty()) start_trace(world);
  ledger::set_checking(f.check_collectives);
  return -1;
}

// Writes the --trace file, if one was asked for. Collective.
inline void finish_trace(Communicator& world, const TrainingFlags& f, std::uint64_t bytes_counted) {
  if (f.trace_path.empty()) return;
  if (!write_trace(world, f.trace_path, bytes_counted))
    std::fprintf(stderr, "cannot write --trace %s\n", f.trace_path.c_str());
  else if (world.rank() == 0)
    std::printf("trace: %s (python3 -m kit trace %s draws it)\n", f.trace_path.c_str(), f.trace_path.c_str());
}

// This rank's training rows (split_data of the largest multiple of dp_size
// rows), copied as bytes from the machine's one mapped copy of the pixels
// (the training loop converts a batch at a time): the student's split_data picks them from a one-column matrix of
// row numbers (any correct split works for any column count), so no rank
// ever holds the whole set.
struct LocalRows {
  Pixels x;      // (rows of this rank, Din), bytes
  Labels y;
  long usable;   // training rows over all dp groups
};
inline LocalRows take_local_rows(SharedDataset& data, int mp_size, int dp_size, int rank) {
  const long usable = data.train_x.rows() / dp_size * dp_size;
  Matrix row_numbers(usable, 1);  // (usable, 1): 0, 1, 2, ...
  for (long i = 0; i < usable; ++i) row_numbers(i, 0) = static_cast<double>(i);
  auto [mine, y] = student::split_data(row_numbers, data.train_y.head(usable), mp_size, dp_size, rank);
  const Eigen::VectorXi index = mine.col(0).cast<int>();
  LocalRows local{data.train_x.take(index), std::move(y), usable};
  data.train_x = PixelFile();  // unmapped: its pages leave this rank's resident set
  return local;
}

// This rank's rows as a block of its own: the ranks cut the largest
// multiple of their count into equal blocks, in order (the trainers whose
// every rank trains on other rows: Parts 13 and 15).
inline LocalRows own_block(SharedDataset& data, int ranks, int rank) {
  const long usable = data.train_x.rows() / ranks * ranks, mine = usable / ranks;
  LocalRows local{data.train_x.take(Eigen::VectorXi::LinSpaced(mine, static_cast<int>(rank * mine),
                                                              static_cast<int>((rank + 1) * mine - 1))),
                  data.train_y.segment(rank * mine, mine), usable};
  data.train_x = PixelFile();  // unmapped: its pages leave this rank's resident set
  return local;
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

// Every rank's values, on every rank: row r is rank r's (a collective of
// the world: the trainers' measurements after training).
inline std::vector<std::vector<double>> from_every_rank(Communicator& world, const std::vector<double>& mine) {
  Vector v = Eigen::Map<const Vector>(mine.data(), static_cast<Eigen::Index>(mine.size()));
  Vector all(v.size() * world.size());
  world.allgather(v, all);
  std::vector<std::vector<double>> out;
  for (int r = 0; r < world.size(); ++r) out.emplace_back(all.data() + r * v.size(), all.data() + (r + 1) * v.size());
  return out;
}

// The whole main of a training program: MPI's scope, the world, and `run`
// (int run(Communicator&, int, char**)) under run_or_report.
template <typename Run>
int program_main(const char* program, int argc, char** argv, Run&& run) {
  MpiSession mpi(argc, argv);
  keep_big_blocks_for_reuse();
  Communicator world = Communicator::world();
  return run_or_report(program, world, [&] { return run(world, argc, argv); });
}

}  // namespace dtrain
