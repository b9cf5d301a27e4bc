// data_parallel_preprocess.h: Part 1. Implemented in student/data_parallel_preprocess.cpp.
// Shapes follow the legend in tensor.h; N is the number of training rows.
#pragma once

#include <utility>

#include "comm.h"
#include "tensor.h"

namespace dtrain {

// Returns the rows of (x_train, y_train) that `rank` trains on. Ranks are
// model-parallel-major: rank = dp_idx * mp_size + mp_idx. The N rows are cut
// into dp_size equal consecutive blocks; every rank of data-parallel group
// dp_idx gets block dp_idx. Throws std::invalid_argument when N is not a
// multiple of dp_size.
std::pair<Matrix, Labels> split_data(const Matrix& x_train,  // (N, Din)
                                     const Labels& y_train,  // (N)
                                     int mp_size, int dp_size, int rank);
// returns: first (N/dp_size, Din), second (N/dp_size)

}  // namespace dtrain
