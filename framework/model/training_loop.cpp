// training_loop.cpp: the loop both trainers share (training_loop.h).
#include "training_loop.h"

#include <algorithm>

#include "comm_runtime.h"

namespace dtrain {

void run_epochs(const RowSource& x, const Labels& y, long batch, const TrainOptions& options, bool lead,
                const LoopSteps& steps, LoopRecord& record) {
  const long rows = x.rows();
  const long per_epoch = (rows + batch - 1) / batch;
  const std::vector<int> order = shuffled_order(rows, options.shuffle_seed);
  Matrix xb;  // (n, 784), n <= batch
  Labels yb;  // (n)
  for (int epoch = 0; epoch < options.epochs; ++epoch) {
    steps.epoch_begins();
    const double in_collectives = CommAccess::seconds_in_collectives();
    const double started = CommAccess::wall_time();
    for (long start = 0, it = 0; start < rows; start += batch, ++it) {
      const long n = std::min(batch, rows - start);
      gather_batch(x, y, order, start, n, xb, yb);
      const Iteration done = steps.train(xb, yb, record.iterations);
      ++record.iterations;
      if (options.on_progress && lead && ((it + 1) % options.report_every == 0 || it + 1 == per_epoch))
        options.on_progress(epoch, it + 1, per_epoch, done.loss, done.accuracy, done.lr);
    }
    record.epoch_seconds.push_back(CommAccess::wall_time() - started);
    record.collective_seconds += CommAccess::seconds_in_collectives() - in_collectives;
    steps.epoch_ends();
    {
      const ledger::Phase phase("evaluate");
      record.test_accuracy.push_back(steps.evaluate());
    }
    if (options.on_epoch && lead) options.on_epoch(epoch, record.test_accuracy.back(), record.epoch_seconds.back());
  }
}

}  // namespace dtrain
