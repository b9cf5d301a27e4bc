// zero_test_util.cpp: see zero_test_util.h.
#include "zero_test_util.h"

#include <algorithm>
#include <string>
#include <vector>

#include "idx_dataset.h"
#include "layers.h"
#include "zero_model.h"

namespace kit {

Vector expected_shard(const Matrix& full, int idx, int parts) {
  const Eigen::Index size = (full.size() + parts - 1) / parts;
  Vector shard = Vector::Zero(size);
  for (Eigen::Index i = 0; i < size && idx * size + i < full.size(); ++i) shard(i) = full.data()[idx * size + i];
  return shard;
}

dtrain::ZeroDPStage3FCLayer layer_from_full(Communicator& comm, const Matrix& full_w, const Matrix& full_b) {
  return dtrain::ZeroDPStage3FCLayer(comm, static_cast<int>(full_w.rows()), static_cast<int>(full_w.cols()), comm.size(),
                                     expected_shard(full_w, comm.rank(), comm.size()),
                                     expected_shard(full_b, comm.rank(), comm.size()));
}

namespace {

struct Needed {
  const char* kind;
  long count;
  const char* what;
};

std::string in_words(const std::string& kind) {
  return kind == "allgather" ? "all-gather" : kind == "reduce_scatter" ? "reduce-scatter" : kind;
}

std::string elements(long n) { return std::to_string(n) + (n == 1 ? " element" : " elements"); }

}  // namespace

::testing::AssertionResult moves_stage3_traffic(const char* pass, const dtrain::ZeroDPStage3FCLayer& layer,
                                                const std::vector<dtrain::ledger::LoggedCall>& calls,
                                                std::uint64_t bytes_moved) {
  const bool forward = std::string(pass) == "forward";
  const long w = layer.w_shard_size, b = layer.b_shard_size;
  std::vector<Needed> needed =
      forward ? std::vector<Needed>{{"allgather", w, "the weight's shards"}, {"allgather", b, "the bias's shards"}}
              : std::vector<Needed>{{"allgather", w, "the weight's shards, for grad_x"},
                                    {"reduce_scatter", w, "the weight gradient"},
                                    {"reduce_scatter", b, "the bias gradient"}};
  std::vector<std::string> problems;
  for (const auto& call : calls) {
    const auto match = std::find_if(needed.begin(), needed.end(),
                                    [&](const Needed& n) { return call.kind == n.kind && call.count == n.count; });
    if (match != needed.end()) {
      needed.erase(match);
      continue;
    }
    std::string why = std::string(pass) + ": " + in_words(call.kind) + " of " + elements(call.count) + " on " +
                      call.comm + " that ZeRO-3's " + pass + " doesn't need";
    if (!forward && call.kind == "allgather" && call.count == b)
      why += " (the bias isn't used to compute gradients)";
    else if (call.kind == "allreduce")
      why += " (an allreduce leaves every rank the whole tensor: ZeRO-3 reduce-scatters gradients)";
    problems.push_back(why);
  }
  for (const Needed& n : needed)
    problems.push_back(std::string(pass) + ": no " + in_words(n.kind) + " of " + elements(n.count) + " (" + n.what +
                       "), which ZeRO-3's " + pass + " makes");
  // comm.h's formula: an all-gather or reduce-scatter of shards of s elements moves (P-1)*s*8 bytes per rank.
  const std::uint64_t per_shard = static_cast<std::uint64_t>(layer.dp_size - 1) * sizeof(double);
  const std::uint64_t expected = per_shard * static_cast<std::uint64_t>(forward ? w + b : 2 * w + b);
  if (problems.empty() && bytes_moved != expected)
    problems.push_back(std::string(pass) + " moved " + std::to_string(bytes_moved) + " bytes; ZeRO-3's moves " +
                       std::to_string(expected));
  if (problems.empty()) return ::testing::AssertionSuccess();
  ::testing::AssertionResult failure = ::testing::AssertionFailure();
  for (size_t i = 0; i < problems.size(); ++i) failure << (i ? "\n" : "") << problems[i];
  return failure;
}

double zero_training_accuracy(long train_rows, long test_rows, int global_batch) {
  const dtrain::Dataset data = dtrain::load_dataset("", train_rows, test_rows);
  if (data.train.x.rows() != train_rows || data.test.x.rows() != test_rows)
    throw std::runtime_error("the data set in " + data.dir + " has too few samples: " +
                             std::to_string(data.train.x.rows()) + " training and " +
                             std::to_string(data.test.x.rows()) + " test rows, this case needs " +
                             std::to_string(train_rows) + " and " + std::to_string(test_rows));
  const int ranks = world().size();
  const long rows = train_rows / ranks;
  const Matrix x_local = data.train.x.middleRows(rank() * rows, rows);  // (rows, 784)
  const Labels y_local = data.train.y.segment(rank() * rows, rows);
  const dtrain::FullWeights init = dtrain::initial_weights(15442);
  dtrain::ZeroMLP model(world(), ranks, expected_shard(init.w1, rank(), ranks), expected_shard(init.b1, rank(), ranks),
                        expected_shard(init.w2, rank(), ranks), expected_shard(init.b2, rank(), ranks));
  dtrain::TrainOptions options;
  options.global_batch = global_batch;
  options.init_lr = dtrain::kAdamInitLr;
  const dtrain::ZeroTrainResult result =
      dtrain::train_zero(model, world(), x_local, y_local, data.test.x, data.test.y, options);
  return result.test_accuracy.back();
}

}  // namespace kit
