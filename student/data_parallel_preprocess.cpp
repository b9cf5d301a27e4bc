// Part 1: data split for data-parallel training. You edit this file.
// Test it with `make test-part1`; the handout's Part 1 explains the task.
#include "data_parallel_preprocess.h"
#include "not_implemented.h"

namespace dtrain {

std::pair<Matrix, Labels> split_data([[maybe_unused]] const Matrix& x_train,  // (N, Din)
                                     [[maybe_unused]] const Labels& y_train,  // (N)
                                     [[maybe_unused]] int mp_size, [[maybe_unused]] int dp_size,
                                     [[maybe_unused]] int rank) {
  // TODO(Part 1):
  // - Which data-parallel group is `rank` in? Ranks are numbered
  //   model-parallel-major, so neighbouring ranks share a group.
  // - The ranks of one group work on the same rows: only the group decides
  //   which block of rows a rank gets.
  // - Check the precondition first and throw std::invalid_argument with a
  //   message that names both numbers.
  // - Eigen's middleRows / segment return views; copy them into the result.
  throw NotImplemented("split_data", "Part 1");
}

}  // namespace dtrain
