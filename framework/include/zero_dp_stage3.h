// zero_dp_stage3.h: Parts 8 and 9, ZeRO stage 3. The framework implements
// the constructors, zero_grad and the optimizer's constructor
// (framework/model/zero_dp_stage3_framework.cpp); the student implements
// partition_flat_tensor, forward, backward and ZeroDPAdam::step
// (student/zero_dp_stage3.cpp).
//
// Shapes follow the legend in tensor.h, with P = dp_size and
// S = ceil(numel / P), the size of one shard including its zero padding.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "comm.h"
#include "tensor.h"

namespace dtrain {

class ZeroDPStage3FCLayer {
 public:
  // Partitions full_w (Din, Dout) and full_b (1, Dout) with
  // partition_flat_tensor; when either is null it is drawn from a normal
  // distribution seeded by `seed` (scaled by 1/sqrt of its fan). Requires
  // dp_size == comm.size(); the layer's rank is comm.rank().
  ZeroDPStage3FCLayer(Communicator& comm, int in_dim, int out_dim, int dp_size,
                      const Matrix* full_w = nullptr, const Matrix* full_b = nullptr,
                      std::uint64_t seed = 15442);
  // Builds the layer from given shards (sizes S_w and S_b), without calling
  // partition_flat_tensor, so a test of one part never depends on another.
  ZeroDPStage3FCLayer(Communicator& comm, int in_dim, int out_dim, int dp_size,
                      Vector w_shard, Vector b_shard);

  // Flattens `tensor` in row-major order, pads it with zeros to a multiple of
  // num_shards, and returns shard shard_idx (S elements, padding included) and S.
  static std::pair<Vector, int> partition_flat_tensor(const Matrix& tensor, int shard_idx,
                                                      int num_shards);

  Matrix forward(const Matrix& x);             // x (B, Din) -> (B, Dout); saves x
  Matrix backward(const Matrix& output_grad);  // (B, Dout) -> grad_x (B, Din); sets grad_*_shard
  void zero_grad();                            // grad shards back to zeros

  Communicator& comm;
  int rank, dp_size, in_dim, out_dim;
  Vector w_shard, b_shard, grad_w_shard, grad_b_shard;  // (S_w), (S_b), (S_w), (S_b)
  int w_shard_size, b_shard_size;                       // S_w, S_b
  Matrix x;                                             // (B, Din), saved by forward for backward
};

struct AdamMoments {
  Vector m, v;  // first and second moments, each the size of its local shard
};

class ZeroDPAdam {
 public:
  // Stores its arguments; the state starts empty.
  explicit ZeroDPAdam(std::vector<ZeroDPStage3FCLayer*> layers, double lr = 1e-3,
                      double beta1 = 0.9, double beta2 = 0.999, double eps = 1e-8);

  // One Adam update of every layer's local shards (standard Adam with bias
  // correction, eps outside the square root, no weight decay).
  void step();

  std::vector<ZeroDPStage3FCLayer*> layers;
  double lr, beta1, beta2, eps;
  int step_idx = 0;
  std::map<std::string, AdamMoments> state;  // keys "<index in layers>.w", "<index in layers>.b"
};

}  // namespace dtrain
