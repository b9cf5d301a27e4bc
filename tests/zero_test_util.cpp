// zero_test_util.cpp: see zero_test_util.h.
#include "zero_test_util.h"

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

}  // namespace kit
