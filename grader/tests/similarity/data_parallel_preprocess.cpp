// An independent solution of Part 1 (grader/tests/test_similarity.py's control).
#include <stdexcept>

#include "data_parallel_preprocess.h"

namespace dtrain {

std::pair<Matrix, Labels> split_data(const Matrix& x_train, const Labels& y_train, int mp_size, int dp_size,
                                     int rank) {
  if (x_train.rows() % dp_size) throw std::invalid_argument("split_data: the rows do not split evenly over dp_size");
  const long per_group = x_train.rows() / dp_size;
  const long start = static_cast<long>(rank / mp_size) * per_group;
  Matrix x(per_group, x_train.cols());
  Labels y(per_group);
  for (long i = 0; i < per_group; i++) {
    x.row(i) = x_train.row(start + i);
    y(i) = y_train(start + i);
  }
  return {x, y};
}

}  // namespace dtrain
