// zero_dp_stage3_framework.cpp: the framework's half of zero_dp_stage3.h
// (constructors, zero_grad, the optimizer's constructor). The student's half
// is student/zero_dp_stage3.cpp.
#include <cmath>
#include <stdexcept>
#include <string>
#include <tuple>

#include "random.h"
#include "student_calls.h"
#include "zero_dp_stage3.h"

namespace dtrain {

namespace {

int checked_dp_size(Communicator& comm, int in_dim, int out_dim, int dp_size) {
  if (in_dim <= 0 || out_dim <= 0)
    throw std::invalid_argument("ZeroDPStage3FCLayer: in_dim and out_dim must be positive, got " +
                                std::to_string(in_dim) + " and " + std::to_string(out_dim));
  if (dp_size != comm.size())
    throw std::invalid_argument("ZeroDPStage3FCLayer: dp_size must equal comm.size(), expected " +
                                std::to_string(comm.size()) + ", got " + std::to_string(dp_size));
  return dp_size;
}

int ceil_div(long numel, int parts) { return static_cast<int>((numel + parts - 1) / parts); }

void require_shape(const Matrix& m, int rows, int cols, const char* what) {
  if (m.rows() != rows || m.cols() != cols)
    throw std::invalid_argument(std::string("ZeroDPStage3FCLayer: ") + what + " must be (" + std::to_string(rows) +
                                ", " + std::to_string(cols) + "), got (" + std::to_string(m.rows()) + ", " +
                                std::to_string(m.cols()) + ")");
}

}  // namespace

ZeroDPStage3FCLayer::ZeroDPStage3FCLayer(Communicator& comm_, int in_dim_, int out_dim_, int dp_size_,
                                         const Matrix* full_w, const Matrix* full_b, std::uint64_t seed)
    : comm(comm_),
      rank(comm_.rank()),
      dp_size(checked_dp_size(comm_, in_dim_, out_dim_, dp_size_)),
      in_dim(in_dim_),
      out_dim(out_dim_),
      w_shard_size(0),
      b_shard_size(0) {
  Rng rng(seed);
  Matrix drawn_w, drawn_b;
  if (!full_w) {
    drawn_w = rng.normal_matrix(in_dim, out_dim, 1.0 / std::sqrt(static_cast<double>(in_dim)));
    full_w = &drawn_w;
  }
  if (!full_b) {
    drawn_b = rng.normal_matrix(1, out_dim, 1.0 / std::sqrt(static_cast<double>(out_dim)));
    full_b = &drawn_b;
  }
  require_shape(*full_w, in_dim, out_dim, "full_w");
  require_shape(*full_b, 1, out_dim, "full_b");
  std::tie(w_shard, w_shard_size) = student::partition_flat_tensor(*full_w, rank, dp_size);
  std::tie(b_shard, b_shard_size) = student::partition_flat_tensor(*full_b, rank, dp_size);
  zero_grad();
}

ZeroDPStage3FCLayer::ZeroDPStage3FCLayer(Communicator& comm_, int in_dim_, int out_dim_, int dp_size_,
                                         Vector w_shard_, Vector b_shard_)
    : comm(comm_),
      rank(comm_.rank()),
      dp_size(checked_dp_size(comm_, in_dim_, out_dim_, dp_size_)),
      in_dim(in_dim_),
      out_dim(out_dim_),
      w_shard(std::move(w_shard_)),
      b_shard(std::move(b_shard_)),
      w_shard_size(ceil_div(static_cast<long>(in_dim_) * out_dim_, dp_size_)),
      b_shard_size(ceil_div(out_dim_, dp_size_)) {
  if (w_shard.size() != w_shard_size)
    throw std::invalid_argument("ZeroDPStage3FCLayer: w_shard must have " + std::to_string(w_shard_size) +
                                " elements, got " + std::to_string(w_shard.size()));
  if (b_shard.size() != b_shard_size)
    throw std::invalid_argument("ZeroDPStage3FCLayer: b_shard must have " + std::to_string(b_shard_size) +
                                " elements, got " + std::to_string(b_shard.size()));
  zero_grad();
}

void ZeroDPStage3FCLayer::zero_grad() {
  grad_w_shard = Vector::Zero(w_shard.size());
  grad_b_shard = Vector::Zero(b_shard.size());
}

ZeroDPAdam::ZeroDPAdam(std::vector<ZeroDPStage3FCLayer*> layers_, double lr_, double beta1_, double beta2_,
                       double eps_)
    : layers(std::move(layers_)), lr(lr_), beta1(beta1_), beta2(beta2_), eps(eps_) {}

}  // namespace dtrain
