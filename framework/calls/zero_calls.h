// zero_calls.h: the ZeRO-3 layer and optimizer of Parts 8-9 as driven calls
// (driven.h): both objects live in the student's process, under a number;
// these functions make them, call their student methods and read or set
// their fields. The student's process serves them (zero_calls.cpp); a
// driven harness calls them through RemoteLayer and RemoteAdam.
#pragma once

#include <string>
#include <vector>

#include "driven.h"
#include "zero_dp_stage3.h"

namespace dtrain::calls::zero {

// The fields a test reads (and x, which it sets): each a getter and a setter,
// served as "ZeroDPStage3FCLayer.NAME" and "ZeroDPStage3FCLayer.NAME=".
#define KIT_ZERO_LAYER_FIELDS(FIELD)                                                                    \
  FIELD(Vector, w_shard) FIELD(Vector, b_shard) FIELD(Vector, grad_w_shard) FIELD(Vector, grad_b_shard) \
  FIELD(int, w_shard_size) FIELD(int, b_shard_size) FIELD(Matrix, x)

using Layer = ZeroDPStage3FCLayer;

// The framework's two constructors: from this rank's shards, or from the
// full tensors (partitioned by the student's partition_flat_tensor).
Object<Layer> layer_from_shards(Communicator& comm, int in_dim, int out_dim, int dp_size, Vector w_shard,
                                Vector b_shard);
Object<Layer> layer_from_full(Communicator& comm, int in_dim, int out_dim, int dp_size, Matrix full_w, Matrix full_b);
Matrix forward(Layer& layer, const Matrix& x);
Matrix backward(Layer& layer, const Matrix& output_grad);
void zero_grad(Layer& layer);
#define KIT_ZERO_FIELD_CALLS(TYPE, NAME) \
  TYPE get_##NAME(Layer& layer);         \
  void set_##NAME(Layer& layer, TYPE value);
KIT_ZERO_LAYER_FIELDS(KIT_ZERO_FIELD_CALLS)
#undef KIT_ZERO_FIELD_CALLS

// The optimizer over layers of this process, and its state: step_idx, and
// a moment ("m" or "v") of a key ("0.w") of its state map (empty if none).
Object<ZeroDPAdam> adam(std::vector<Object<Layer>> layers, double lr, double beta1, double beta2, double eps);
void step(ZeroDPAdam& optimizer);
int step_idx(ZeroDPAdam& optimizer);
std::vector<std::string> state_keys(ZeroDPAdam& optimizer);
Vector moment(ZeroDPAdam& optimizer, std::string key, std::string which);

// The harness's handles.
class RemoteLayer {
 public:
  explicit RemoteLayer(Object<Layer> o) : o_(std::move(o)) {}
  Matrix forward(const Matrix& x);
  Matrix backward(const Matrix& output_grad);
  void zero_grad();
#define KIT_ZERO_FIELD_HANDLE(TYPE, NAME) \
  TYPE NAME() const;                      \
  void set_##NAME(const TYPE& value);
  KIT_ZERO_LAYER_FIELDS(KIT_ZERO_FIELD_HANDLE)
#undef KIT_ZERO_FIELD_HANDLE
  const Object<Layer>& object() const { return o_; }

 private:
  Object<Layer> o_;
};

RemoteLayer remote_layer_from_shards(Communicator& comm, int in_dim, int out_dim, int dp_size, const Vector& w_shard,
                                     const Vector& b_shard);
RemoteLayer remote_layer_from_full(Communicator& comm, int in_dim, int out_dim, int dp_size, const Matrix& full_w,
                                   const Matrix& full_b);

class RemoteAdam {
 public:
  RemoteAdam(const std::vector<RemoteLayer*>& layers, double lr = 1e-3, double beta1 = 0.9, double beta2 = 0.999,
             double eps = 1e-8);
  void step();
  int step_idx() const;
  std::vector<std::string> state_keys() const;
  Vector moment(const std::string& key, const std::string& which) const;

 private:
  Object<ZeroDPAdam> o_;
};

}  // namespace dtrain::calls::zero
