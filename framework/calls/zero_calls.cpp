// zero_calls.cpp: the student's process's end of zero_calls.h: each function
// makes an object, calls a method of the student's or reads a field, and
// is served by the name the harness's handles call.
#include "zero_calls.h"

#include <stdexcept>

namespace dtrain::calls::zero {

Object<Layer> layer_from_shards(Communicator& comm, int in_dim, int out_dim, int dp_size, Vector w_shard,
                                Vector b_shard) {
  return {0, std::make_shared<Layer>(comm, in_dim, out_dim, dp_size, std::move(w_shard), std::move(b_shard))};
}

Object<Layer> layer_from_full(Communicator& comm, int in_dim, int out_dim, int dp_size, Matrix full_w, Matrix full_b) {
  return {0, std::make_shared<Layer>(comm, in_dim, out_dim, dp_size, &full_w, &full_b)};
}

Matrix forward(Layer& layer, const Matrix& x) { return layer.forward(x); }
Matrix backward(Layer& layer, const Matrix& output_grad) { return layer.backward(output_grad); }
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

void step(ZeroDPAdam& optimizer) { optimizer.step(); }
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
KIT_SERVED("ZeroDPStage3FCLayer::ZeroDPStage3FCLayer(full)", &dtrain::calls::zero::layer_from_full);
KIT_SERVED("ZeroDPStage3FCLayer::forward", &dtrain::calls::zero::forward);
KIT_SERVED("ZeroDPStage3FCLayer::backward", &dtrain::calls::zero::backward);
KIT_SERVED("ZeroDPStage3FCLayer::zero_grad", &dtrain::calls::zero::zero_grad);
KIT_SERVED("ZeroDPAdam::ZeroDPAdam", &dtrain::calls::zero::adam);
KIT_SERVED("ZeroDPAdam::step", &dtrain::calls::zero::step);
KIT_SERVED("ZeroDPAdam.step_idx", &dtrain::calls::zero::step_idx);
KIT_SERVED("ZeroDPAdam.state", &dtrain::calls::zero::state_keys);
KIT_SERVED("ZeroDPAdam.state[]", &dtrain::calls::zero::moment);
#define KIT_ZERO_FIELD_SERVED(TYPE, NAME)                                                          \
  KIT_SERVED("ZeroDPStage3FCLayer." #NAME, &dtrain::calls::zero::get_##NAME);                      \
  KIT_SERVED("ZeroDPStage3FCLayer." #NAME "=", &dtrain::calls::zero::set_##NAME);
KIT_ZERO_LAYER_FIELDS(KIT_ZERO_FIELD_SERVED)
#undef KIT_ZERO_FIELD_SERVED
