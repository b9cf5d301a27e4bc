// Part 1, solved. Staff only: never shipped to students.
#include <stdexcept>
#include <string>

#include "data_parallel_preprocess.h"

namespace dtrain {

std::pair<Matrix, Labels> split_data(const Matrix& x_train, const Labels& y_train, int mp_size, int dp_size,
                                     int rank) {
  if (mp_size < 1 || dp_size < 1)
    throw std::invalid_argument("split_data: mp_size and dp_size must be >= 1, got " + std::to_string(mp_size) +
                                " and " + std::to_string(dp_size));
  if (rank < 0 || rank >= mp_size * dp_size)
    throw std::invalid_argument("split_data: rank must be in [0, " + std::to_string(mp_size * dp_size) + "), got " +
                                std::to_string(rank));
  if (x_train.rows() != y_train.size())
    throw std::invalid_argument("split_data: expected " + std::to_string(x_train.rows()) + " labels, got " +
                                std::to_string(y_train.size()));
  if (x_train.rows() % dp_size != 0)
    throw std::invalid_argument("split_data: " + std::to_string(x_train.rows()) +
                                " rows do not divide evenly by dp_size " + std::to_string(dp_size));
  const Eigen::Index rows = x_train.rows() / dp_size;
  const Eigen::Index first = (rank / mp_size) * rows;
  return {x_train.middleRows(first, rows), y_train.segment(first, rows)};
}

}  // namespace dtrain
