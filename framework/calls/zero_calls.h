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
#include "zero_rules.h"

namespace dtrain::calls {

// What the memory rule's watch found in the student's process: numbers,
// and an allowed block's role by its number (zero_rules.h), never text.
template <>
struct Value<ZeroMemoryWatch::Kept> {
  static void put(Writer& w, const ZeroMemoryWatch::Kept& k) {
    w.put(k.watched);
    w.put(k.kept.bytes);
    w.put(static_cast<std::int64_t>(k.kept.blocks));
    w.put(k.kept.complete);
    w.put(zero_role_number(k.kept.oversized_role));
    w.put(k.kept.oversized_bytes);
    w.put(k.kept.oversized_allowed);
  }
  static ZeroMemoryWatch::Kept get(Reader& r, Borrowed&) {
    ZeroMemoryWatch::Kept k;
    k.watched = r.integer() != 0;
    k.kept.bytes = r.integer();
    k.kept.blocks = static_cast<long>(r.integer());
    k.kept.complete = r.integer() != 0;
    k.kept.oversized_role = zero_role(static_cast<int>(r.integer()));
    k.kept.oversized_bytes = r.integer();
    k.kept.oversized_allowed = r.integer();
    if (k.kept.bytes < 0 || k.kept.blocks < 0) throw BadValues("a watch's figures out of range");
    return k;
  }
};

}  // namespace dtrain::calls

namespace dtrain::calls::zero {

// What forward and backward answer: the result, what the memory rule's
// watch found, and (backward) the gradient shards the call set, which the
// harness reads as values in the same answer.
struct Answer {
  Matrix result;
  ZeroMemoryWatch::Kept kept;
  Vector grad_w_shard, grad_b_shard;
};

}  // namespace dtrain::calls::zero

namespace dtrain::calls {
template <>
struct Value<zero::Answer> {
  static void put(Writer& w, const zero::Answer& a) {
    Value<Matrix>::put(w, a.result);
    Value<ZeroMemoryWatch::Kept>::put(w, a.kept);
    Value<Vector>::put(w, a.grad_w_shard);
    Value<Vector>::put(w, a.grad_b_shard);
  }
  static zero::Answer get(Reader& r, Borrowed& b) {
    zero::Answer a;
    a.result = Value<Matrix>::get(r, b);
    a.kept = Value<ZeroMemoryWatch::Kept>::get(r, b);
    a.grad_w_shard = Value<Vector>::get(r, b);
    a.grad_b_shard = Value<Vector>::get(r, b);
    return a;
  }
};
}  // namespace dtrain::calls

namespace dtrain::calls::zero {

// The fields a test reads (and x, which it sets): each a getter and a setter,
// served as "ZeroDPStage3FCLayer::get_NAME" and "ZeroDPStage3FCLayer::set_NAME".
#define KIT_ZERO_LAYER_FIELDS(FIELD)                                                                    \
  FIELD(Vector, w_shard) FIELD(Vector, b_shard) FIELD(Vector, grad_w_shard) FIELD(Vector, grad_b_shard) \
  FIELD(int, w_shard_size) FIELD(int, b_shard_size) FIELD(Matrix, x)

using Layer = ZeroDPStage3FCLayer;

// The framework's two constructors: from this rank's shards, or from what
// the student's partition_flat_tensor made of the full tensors (the
// harness calls it, as a student call of its own, and passes on what it
// returned, as the framework's constructor keeps it).
Object<Layer> layer_from_shards(Communicator& comm, int in_dim, int out_dim, int dp_size, Vector w_shard,
                                Vector b_shard);
Object<Layer> layer_from_partition(Communicator& comm, int in_dim, int out_dim, int dp_size, Vector w_shard,
                                   int w_shard_size, Vector b_shard, int b_shard_size);
Answer forward(Layer& layer, const Matrix& x);
Answer backward(Layer& layer, const Matrix& output_grad);
void zero_grad(Layer& layer);
#define KIT_ZERO_FIELD_CALLS(TYPE, NAME) \
  TYPE get_##NAME(Layer& layer);         \
  void set_##NAME(Layer& layer, TYPE value);
KIT_ZERO_LAYER_FIELDS(KIT_ZERO_FIELD_CALLS)
#undef KIT_ZERO_FIELD_CALLS

// The optimizer over layers of this process, and its state: step_idx, and
// a moment ("m" or "v") of a key ("0.w") of its state map (empty if none).
Object<ZeroDPAdam> adam(std::vector<Object<Layer>> layers, double lr, double beta1, double beta2, double eps);
// A step, at learning rate `lr` where that is a number (the optimizer's
// from then on, as a trainer sets it before a step; NaN: as it is),
// answers with every layer's shards after it: w_shard, b_shard, per layer.
std::vector<Vector> step(ZeroDPAdam& optimizer, double lr);
int step_idx(ZeroDPAdam& optimizer);
std::vector<std::string> state_keys(ZeroDPAdam& optimizer);
Vector moment(ZeroDPAdam& optimizer, std::string key, std::string which);

// The harness's handles. A layer's handle keeps what the harness made it
// with (its communicator, its dimensions), which the rules judge by.
class RemoteLayer {
 public:
  RemoteLayer(Object<Layer> o, Communicator& comm, int in_dim, int out_dim, int dp_size)
      : o_(std::move(o)), comm_(&comm), in_dim_(in_dim), out_dim_(out_dim), dp_size_(dp_size) {}
  Answer forward(const Matrix& x);
  Answer backward(const Matrix& output_grad);
  void zero_grad();
  Communicator& comm() const { return *comm_; }
  LayerShape shape(long rows) const { return layer_shape(in_dim_, out_dim_, dp_size_, rows); }
#define KIT_ZERO_FIELD_HANDLE(TYPE, NAME) \
  TYPE NAME() const;                      \
  void set_##NAME(const TYPE& value);
  KIT_ZERO_LAYER_FIELDS(KIT_ZERO_FIELD_HANDLE)
#undef KIT_ZERO_FIELD_HANDLE
  const Object<Layer>& object() const { return o_; }

 private:
  Object<Layer> o_;
  Communicator* comm_;
  int in_dim_, out_dim_, dp_size_;
};

RemoteLayer remote_layer_from_shards(Communicator& comm, int in_dim, int out_dim, int dp_size, const Vector& w_shard,
                                     const Vector& b_shard);
RemoteLayer remote_layer_from_partition(Communicator& comm, int in_dim, int out_dim, int dp_size,
                                        const std::pair<Vector, int>& w, const std::pair<Vector, int>& b);

// The hyperparameters are the harness's own, as it passed them.
class RemoteAdam {
 public:
  RemoteAdam(const std::vector<RemoteLayer*>& layers, double lr = 1e-3, double beta1 = 0.9, double beta2 = 0.999,
             double eps = 1e-8);
  std::vector<Vector> step();  // at `lr`
  int step_idx() const;
  std::vector<std::string> state_keys() const;
  Vector moment(const std::string& key, const std::string& which) const;
  void set_lr(double value) { lr = value, lr_set_ = true; }  // the next step's, which carries it
  double lr, beta1, beta2, eps;
  std::size_t layer_count() const { return layers_; }

 private:
  Object<ZeroDPAdam> o_;
  std::size_t layers_;
  bool lr_set_ = false;
};

}  // namespace dtrain::calls::zero
