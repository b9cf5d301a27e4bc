// zero_calls.cpp: the student's process's end of zero_calls.h: each function
// makes an object, calls a method of the student's or reads a field, and
// is served by the name the harness's handles call.
#include "zero_calls.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace dtrain::calls::zero {

Object<Layer> layer_from_shards(Communicator& comm, int in_dim, int out_dim, int dp_size, Vector w_shard,
                                Vector b_shard) {
  return {0, std::make_shared<Layer>(comm, in_dim, out_dim, dp_size, std::move(w_shard), std::move(b_shard))};
}

// As the framework's partitioning constructor keeps what partition_flat_tensor returned.
Object<Layer> layer_from_partition(Communicator& comm, int in_dim, int out_dim, int dp_size, Vector w_shard,
                                   int w_shard_size, Vector b_shard, int b_shard_size) {
  const long p = std::max(1, dp_size);
  auto layer = std::make_shared<Layer>(comm, in_dim, out_dim, dp_size, Vector::Zero((long(in_dim) * out_dim + p - 1) / p),
                                       Vector::Zero((out_dim + p - 1) / p));
  layer->w_shard = std::move(w_shard);
  layer->w_shard_size = w_shard_size;
  layer->b_shard = std::move(b_shard);
  layer->b_shard_size = b_shard_size;
  layer->zero_grad();
  return {0, layer};
}

// The memory rule's watch is this process's, around the student's method:
// its tables are this process's to write, so what it finds can only fail
// the handin's own case; the MPI side's reading of the memory at the
// return is the rule's other half, outside this process. A call whose
// memory the side does not read (a training case's) is not watched, and
// keeps what it freed for the next call.
Answer forward(Layer& layer, const Matrix& x) {
  ZeroMemoryWatch watch(layer, true, static_cast<long>(x.rows()), call_reads_memory());
  Answer a;
  a.result = layer.forward(x);
  a.kept = watch.returned(a.result);
  return a;
}

Answer backward(Layer& layer, const Matrix& output_grad) {
  ZeroMemoryWatch watch(layer, false, static_cast<long>(output_grad.rows()), call_reads_memory());
  Answer a;
  a.result = layer.backward(output_grad);
  a.kept = watch.returned(a.result);
  a.grad_w_shard = layer.grad_w_shard;
  a.grad_b_shard = layer.grad_b_shard;
  return a;
}
void zero_grad(Layer& layer) { layer.zero_grad(); }

#define KIT_ZERO_FIELD_BODIES(TYPE, NAME)                               \
  TYPE get_##NAME(Layer& layer) { return layer.NAME; }                  \
  void set_##NAME(Layer& layer, TYPE value) { layer.NAME = std::move(value); }
KIT_ZERO_LAYER_FIELDS(KIT_ZERO_FIELD_BODIES)
#undef KIT_ZERO_FIELD_BODIES

Object<ZeroDPAdam> adam(std::vector<Object<Layer>> layers, double lr, double beta1, double beta2, double eps) {
  std::vector<Layer*> held;
  for (const auto& l : layers) {
    if (!l.held) throw std::invalid_argument("adam: no layer of that number in this process");
    held.push_back(l.held.get());
  }
  // The optimizer keeps pointers: it keeps its layers alive too.
  auto optimizer = std::shared_ptr<ZeroDPAdam>(new ZeroDPAdam(held, lr, beta1, beta2, eps),
                                               [layers](ZeroDPAdam* o) { delete o; });
  return {0, optimizer};
}

std::vector<Vector> step(ZeroDPAdam& optimizer, double lr) {
  if (!std::isnan(lr)) optimizer.lr = lr;
  optimizer.step();
  std::vector<Vector> shards;
  for (const Layer* layer : optimizer.layers) {
    shards.push_back(layer->w_shard);
    shards.push_back(layer->b_shard);
  }
  return shards;
}

int step_idx(ZeroDPAdam& optimizer) { return optimizer.step_idx; }

std::vector<std::string> state_keys(ZeroDPAdam& optimizer) {
  std::vector<std::string> keys;
  for (const auto& entry : optimizer.state) keys.push_back(entry.first);
  return keys;
}

Vector moment(ZeroDPAdam& optimizer, std::string key, std::string which) {
  const auto found = optimizer.state.find(key);
  if (found == optimizer.state.end()) return Vector();
  return which == "m" ? found->second.m : found->second.v;
}

}  // namespace dtrain::calls::zero

KIT_SERVED("ZeroDPStage3FCLayer::ZeroDPStage3FCLayer", &dtrain::calls::zero::layer_from_shards);
KIT_SERVED("ZeroDPStage3FCLayer::from_partition", &dtrain::calls::zero::layer_from_partition);
KIT_SERVED("ZeroDPStage3FCLayer::forward", &dtrain::calls::zero::forward);
KIT_SERVED("ZeroDPStage3FCLayer::backward", &dtrain::calls::zero::backward);
KIT_SERVED("ZeroDPStage3FCLayer::zero_grad", &dtrain::calls::zero::zero_grad);
KIT_SERVED("ZeroDPAdam::ZeroDPAdam", &dtrain::calls::zero::adam);
KIT_SERVED("ZeroDPAdam::step", &dtrain::calls::zero::step);
KIT_SERVED("ZeroDPAdam::get_step_idx", &dtrain::calls::zero::step_idx);
KIT_SERVED("ZeroDPAdam::state_keys", &dtrain::calls::zero::state_keys);
KIT_SERVED("ZeroDPAdam::state_moment", &dtrain::calls::zero::moment);
#define KIT_ZERO_FIELD_SERVED(TYPE, NAME)                                                          \
  KIT_SERVED("ZeroDPStage3FCLayer::get_" #NAME, &dtrain::calls::zero::get_##NAME);                      \
  KIT_SERVED("ZeroDPStage3FCLayer::set_" #NAME, &dtrain::calls::zero::set_##NAME);
KIT_ZERO_LAYER_FIELDS(KIT_ZERO_FIELD_SERVED)
#undef KIT_ZERO_FIELD_SERVED
