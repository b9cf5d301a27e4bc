// Honest code the link check must accept: Eigen's operations, the kit's
// gemm and every collective of the Communicator.
//   python3 -m pytest grader/tests/test_link_check.py     (compiles and checks every file here)
#include <cmath>
#include <vector>

#include "comm.h"
#include "gemm.h"
#include "tensor.h"

namespace dtrain {

Matrix honest_eigen(const Matrix& x, const Matrix& w, const Vector& shard, Communicator& comm) {
  Matrix out = x * w;
  out.noalias() += x * w.transpose().transpose();
  Matrix viaGemm;
  gemm(x, false, w, false, viaGemm);
  Matrix t = x.transpose() * out;
  Eigen::Map<const Matrix> view(shard.data(), 1, shard.size());
  Matrix summed(out.rows(), out.cols());
  comm.allreduce(out, summed, Op::Sum);
  Matrix gathered(out.rows() * comm.size(), out.cols());
  comm.allgather(out, gathered);
  Vector full(shard.size() * comm.size());
  comm.allgather(shard, full);
  Vector part(shard.size());
  comm.reduce_scatter(full, part, Op::Sum);
  Communicator sub = comm.split(comm.rank() % 2, comm.rank());
  sub.barrier();
  if (comm.size() > 1 && comm.rank() == 0) comm.send(out, 1, 7);
  if (comm.size() > 1 && comm.rank() == 1) comm.recv(summed, 0, 7);
  Matrix block = gathered.block(0, 0, out.rows(), out.cols());
  block.array() = block.array().exp().log1p().sqrt() + std::tanh(1.0);
  Matrix maxed = block.cwiseMax(0.0).cwiseProduct(summed);
  const Matrix col = maxed.colwise().sum();
  const Vector rows = maxed.rowwise().mean();
  std::vector<double> buffer(static_cast<size_t>(full.size()));
  Eigen::Map<Vector>(buffer.data(), full.size()) = full * 0.5;
  const double norm = maxed.norm() + rows.squaredNorm() + t.trace() + view.sum() + viaGemm.maxCoeff() +
                      static_cast<double>(comm.bytes_transferred()) + col.minCoeff() + part.lpNorm<1>();
  return maxed.array() * norm;
}

}  // namespace dtrain
